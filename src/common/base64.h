/*
 * base64.h: checking base64 text before it is decoded.
 */
#ifndef BASE64_H
#define BASE64_H

#include <stddef.h>

/*
 * 1 when p (len bytes) is strict base64: the standard or the URL-safe
 * alphabet, padding optional but only at the end, at most two '=' and
 * then a length that is a multiple of 4, and no length that leaves a
 * single character over.  0 otherwise.  Pure code.
 */
int	base64_valid(const char *p, size_t len);

#endif
