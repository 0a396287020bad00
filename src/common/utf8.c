/*
 * utf8.c: replacement of ill-formed UTF-8 (see utf8.h).
 */
#include <string.h>

#include "utf8.h"

/* Length of the well-formed sequence at p, or 0 (Unicode table 3-7). */
size_t
utf8_valid_len(const unsigned char *p, size_t left, size_t *subpart)
{
	unsigned char	c = p[0], lo = 0x80, hi = 0xbf;
	size_t		n, i;

	*subpart = 1;
	if (c < 0x80)
		return (1);
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return (0);
	for (i = 1; i < n; i++) {
		if (i >= left || p[i] < lo || p[i] > hi)
			return (0);
		*subpart = i + 1;
		lo = 0x80;
		hi = 0xbf;
	}
	return (n);
}

size_t
utf8_copy(char *dst, size_t dstlen, const char *src, size_t len)
{
	const unsigned char	*p = (const unsigned char *)src;
	size_t			 i = 0, o = 0, n, sub;

	if (dstlen == 0)
		return (0);
	while (i < len) {
		if (p[i] != '\0' &&
		    (n = utf8_valid_len(p + i, len - i, &sub)) > 0) {
			if (o + n >= dstlen)
				break;
			memcpy(dst + o, p + i, n);
			o += n;
			i += n;
			continue;
		}
		if (p[i] == '\0')
			sub = 1;
		if (o + 3 >= dstlen)
			break;
		memcpy(dst + o, "\xef\xbf\xbd", 3);
		o += 3;
		i += sub;
	}
	dst[o] = '\0';
	return (o);
}
