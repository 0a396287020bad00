/*
 * pwcache.h: getpwnam and getpwuid, kept while /etc/passwd is unchanged.
 */
#ifndef PWCACHE_H
#define PWCACHE_H

#include <sys/types.h>

struct passwd;

int	pwcache_get(const char *, uid_t, struct passwd *, char *, size_t);

#endif
