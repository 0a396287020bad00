/*
 * utf8.h: making output bytes valid UTF-8 for JSON.
 */
#ifndef UTF8_H
#define UTF8_H

#include <stddef.h>

/*
 * A NUL-terminated copy of buf in which every ill-formed sequence is
 * replaced by U+FFFD, one per maximal subpart (as Unicode recommends and
 * browsers do); *outlen gets its length.  NULL on ENOMEM.
 */
char	*utf8_sanitize(const unsigned char *buf, size_t len, size_t *outlen);

#endif
