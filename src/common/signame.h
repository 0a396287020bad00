/*
 * signame.h: signal names as clients write them ("INT", not "SIGINT").
 */
#ifndef SIGNAME_H
#define SIGNAME_H

#include <msgpack.h>

/* The name of signo without "SIG", or NULL for an unknown one. */
const char	*signame_name(int signo);
/* A signal by name ("INT", "SIGINT", any case) or number; -1 if invalid. */
int		 signame_parse(const char *, size_t);
/* The same for a msgpack str or integer; -1 if invalid. */
int		 signame_from_object(const msgpack_object *);

#endif
