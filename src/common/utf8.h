/*
 * utf8.h: making bytes valid UTF-8 for JSON and msgpack strings.
 */
#ifndef UTF8_H
#define UTF8_H

#include <stddef.h>

/*
 * A copy of src into a caller's buffer, for messages that quote a
 * client's bytes: each ill-formed sequence (one U+FFFD per maximal
 * subpart, as Unicode recommends and browsers do) and each NUL becomes
 * U+FFFD, the copy is cut at a character boundary to fit and always
 * NUL-terminated (dstlen > 0).
 * Returns the length written.  Every error message goes through it.
 */
size_t	 utf8_copy(char *dst, size_t dstlen, const char *src, size_t len);

/*
 * The length of the well-formed sequence at p (left bytes), or 0 when it is
 * ill-formed; *subpart then gets the length of its maximal subpart, the
 * bytes one U+FFFD replaces.
 */
size_t	 utf8_valid_len(const unsigned char *p, size_t left, size_t *subpart);

#endif
