/*
 * outjson.h: output bytes as the contents of a JSON string, written piece
 * by piece, so that a reply of many megabytes is never encoded whole.
 *
 * Text: ill-formed UTF-8 becomes U+FFFD, one per maximal subpart (as
 * utf8_copy does), '"', '\\' and control characters are escaped (as
 * jansson does).  Base64: the standard alphabet, padded.  Pure code.
 */
#ifndef OUTJSON_H
#define OUTJSON_H

#include <stddef.h>

#define OUTJSON_UNIT_MAX	6	/* the longest piece: \u00XX */

struct outjson {
	const unsigned char	*p;
	size_t			 len;
	size_t			 off;	/* input bytes encoded so far */
	int			 base64;
};

void	outjson_init(struct outjson *, const void *buf, size_t len,
	    int base64);

/* The exact length of the encoding, quotes not included. */
size_t	outjson_length(const void *buf, size_t len, int base64);

/*
 * Encode the next part into dst (dstlen >= OUTJSON_UNIT_MAX); returns the
 * bytes written, 0 once everything is.
 */
size_t	outjson_read(struct outjson *, char *dst, size_t dstlen);

#endif
