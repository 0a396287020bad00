/*
 * outjson.c: output bytes as the contents of a JSON string (see outjson.h).
 */
#include <stdint.h>
#include <string.h>

#include "outjson.h"
#include "utf8.h"

static const char outjson_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void
outjson_init(struct outjson *o, const void *buf, size_t len, int base64)
{
	o->p = buf;
	o->len = len;
	o->off = 0;
	o->base64 = base64;
}

/* Bytes from p that go out as they are: printable ASCII but '"' and '\'. */
static size_t
outjson_plain_run(const unsigned char *p, size_t left)
{
	size_t	n = 0;

	while (n < left && p[n] >= 0x20 && p[n] < 0x80 && p[n] != '"' &&
	    p[n] != '\\')
		n++;
	return (n);
}

/*
 * The encoding of the one character at p into u (OUTJSON_UNIT_MAX bytes);
 * returns the input bytes it takes, *ulen the bytes written.
 */
static size_t
outjson_unit(const unsigned char *p, size_t left, char *u, size_t *ulen)
{
	size_t	n, sub;

	if (p[0] < 0x80) {
		*ulen = 2;
		u[0] = '\\';
		switch (p[0]) {
		case '"': u[1] = '"'; break;
		case '\\': u[1] = '\\'; break;
		case '\b': u[1] = 'b'; break;
		case '\f': u[1] = 'f'; break;
		case '\n': u[1] = 'n'; break;
		case '\r': u[1] = 'r'; break;
		case '\t': u[1] = 't'; break;
		default:
			if (p[0] < 0x20) {
				/* Not snprintf: u has no room for a NUL. */
				memcpy(u, "\\u00", 4);
				u[4] = "0123456789abcdef"[p[0] >> 4];
				u[5] = "0123456789abcdef"[p[0] & 15];
				*ulen = 6;
			} else {
				u[0] = (char)p[0];
				*ulen = 1;
			}
			break;
		}
		return (1);
	}
	if ((n = utf8_valid_len(p, left, &sub)) > 0) {
		memcpy(u, p, n);
		*ulen = n;
		return (n);
	}
	memcpy(u, "\xef\xbf\xbd", 3);
	*ulen = 3;
	return (sub);
}

size_t
outjson_length(const void *buf, size_t len, int base64)
{
	const unsigned char	*p = buf;
	char			 u[OUTJSON_UNIT_MAX];
	size_t			 off = 0, need = 0, n, ulen;

	if (base64)
		return ((len + 2) / 3 * 4);
	while (off < len) {
		n = outjson_plain_run(p + off, len - off);
		need += n;
		off += n;
		if (off == len)
			break;
		off += outjson_unit(p + off, len - off, u, &ulen);
		need += ulen;
	}
	return (need);
}

static size_t
outjson_read_base64(struct outjson *o, char *dst, size_t dstlen)
{
	const unsigned char	*p;
	size_t			 w = 0, n;
	uint32_t		 v;

	while (o->off < o->len && dstlen - w >= 4) {
		p = o->p + o->off;
		n = o->len - o->off < 3 ? o->len - o->off : 3;
		v = (uint32_t)p[0] << 16;
		if (n > 1)
			v |= (uint32_t)p[1] << 8;
		if (n > 2)
			v |= p[2];
		dst[w++] = outjson_b64[(v >> 18) & 63];
		dst[w++] = outjson_b64[(v >> 12) & 63];
		dst[w++] = n > 1 ? outjson_b64[(v >> 6) & 63] : '=';
		dst[w++] = n > 2 ? outjson_b64[v & 63] : '=';
		o->off += n;
	}
	return (w);
}

size_t
outjson_read(struct outjson *o, char *dst, size_t dstlen)
{
	size_t	w = 0, n, ulen;

	if (o->base64)
		return (outjson_read_base64(o, dst, dstlen));
	while (o->off < o->len && dstlen - w >= OUTJSON_UNIT_MAX) {
		/* Scan no further than fits: a run may be megabytes. */
		n = o->len - o->off;
		if (n > dstlen - w)
			n = dstlen - w;
		if ((n = outjson_plain_run(o->p + o->off, n)) > 0) {
			memcpy(dst + w, o->p + o->off, n);
			w += n;
			o->off += n;
			continue;
		}
		o->off += outjson_unit(o->p + o->off, o->len - o->off,
		    dst + w, &ulen);
		w += ulen;
	}
	return (w);
}
