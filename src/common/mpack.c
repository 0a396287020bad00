/*
 * mpack.c: msgpack map helpers (see mpack.h).
 */
#include <math.h>
#include <string.h>

#include "mpack.h"

void
mpack_str(msgpack_packer *pk, const char *s)
{
	size_t	len = strlen(s);

	msgpack_pack_str(pk, len);
	msgpack_pack_str_body(pk, s, len);
}

void
mpack_kv_str(msgpack_packer *pk, const char *k, const char *v)
{
	mpack_str(pk, k);
	if (v == NULL)
		msgpack_pack_nil(pk);
	else
		mpack_str(pk, v);
}

void
mpack_kv_int(msgpack_packer *pk, const char *k, int64_t v)
{
	mpack_str(pk, k);
	msgpack_pack_int64(pk, v);
}

void
mpack_kv_uint(msgpack_packer *pk, const char *k, uint64_t v)
{
	mpack_str(pk, k);
	msgpack_pack_uint64(pk, v);
}

void
mpack_kv_bool(msgpack_packer *pk, const char *k, int v)
{
	mpack_str(pk, k);
	if (v)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
}

void
mpack_kv_nil(msgpack_packer *pk, const char *k)
{
	mpack_str(pk, k);
	msgpack_pack_nil(pk);
}

void
mpack_kv_bin(msgpack_packer *pk, const char *k, const void *v, size_t len)
{
	mpack_str(pk, k);
	msgpack_pack_bin(pk, len);
	msgpack_pack_bin_body(pk, v, len);
}

static uint64_t
mpack_be(const unsigned char *p, int n)
{
	uint64_t	v = 0;
	int		i;

	for (i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return (v);
}

int
mpack_validate(const void *buf, size_t len)
{
	return (mpack_count(buf, len) == 1 ? 0 : -1);
}

int64_t
mpack_count(const void *buf, size_t len)
{
	const unsigned char	*p = buf;
	uint64_t		 left[MPACK_DEPTH_MAX + 1], n, skip;
	size_t			 pos = 0;
	int64_t			 count = 0;
	int			 depth = 0, hdr;
	unsigned char		 c;

	left[0] = 0;
	for (;;) {
		if (left[depth] == 0 && depth > 0) {
			depth--;
			continue;
		}
		if (depth == 0 && left[0] == 0) {
			if (pos == len)
				return (count);
			left[0] = 1;	/* the next object at the top */
			count++;
		}
		left[depth]--;
		if (pos >= len)
			return (-1);
		c = p[pos++];
		n = 0;
		skip = 0;
		hdr = 0;
		if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 ||
		    c == 0xc3)
			continue;
		if (c >= 0xa0 && c <= 0xbf)
			skip = c & 0x1f;
		else if (c >= 0x80 && c <= 0x8f)
			n = (uint64_t)(c & 0x0f) * 2;
		else if (c >= 0x90 && c <= 0x9f)
			n = c & 0x0f;
		else {
			switch (c) {
			case 0xc4: case 0xd9: hdr = 1; break;	/* bin8 str8 */
			case 0xc5: case 0xda: hdr = 2; break;
			case 0xc6: case 0xdb: hdr = 4; break;
			case 0xc7: hdr = 1; skip = 1; break;	/* ext8 */
			case 0xc8: hdr = 2; skip = 1; break;
			case 0xc9: hdr = 4; skip = 1; break;
			case 0xca: skip = 4; break;
			case 0xcb: skip = 8; break;
			case 0xcc: case 0xd0: skip = 1; break;
			case 0xcd: case 0xd1: skip = 2; break;
			case 0xce: case 0xd2: skip = 4; break;
			case 0xcf: case 0xd3: skip = 8; break;
			case 0xd4: skip = 2; break;		/* fixext */
			case 0xd5: skip = 3; break;
			case 0xd6: skip = 5; break;
			case 0xd7: skip = 9; break;
			case 0xd8: skip = 17; break;
			case 0xdc: case 0xdd: case 0xde: case 0xdf:
				hdr = (c == 0xdc || c == 0xde) ? 2 : 4;
				break;
			default:
				return (-1);	/* 0xc1 is never used */
			}
			if (hdr > 0) {
				if (len - pos < (size_t)hdr)
					return (-1);
				n = mpack_be(p + pos, hdr);
				pos += (size_t)hdr;
				if (c >= 0xdc) {
					if (c >= 0xde)
						n *= 2;
				} else {
					skip += n;
					n = 0;
				}
			}
		}
		if (skip > len - pos)
			return (-1);
		pos += (size_t)skip;
		if (n == 0)
			continue;
		/* Every element takes a byte at least. */
		if (n > len - pos || depth == MPACK_DEPTH_MAX)
			return (-1);
		left[++depth] = n;
	}
}

int
mpack_streq(const msgpack_object *o, const char *s)
{
	size_t	len = strlen(s);

	/* An empty msgpack string may come with a NULL pointer. */
	return (o != NULL && o->type == MSGPACK_OBJECT_STR &&
	    o->via.str.size == len &&
	    (len == 0 || memcmp(o->via.str.ptr, s, len) == 0));
}

const msgpack_object *
mpack_get(const msgpack_object *o, const char *key)
{
	uint32_t	i;

	if (o == NULL || o->type != MSGPACK_OBJECT_MAP)
		return (NULL);
	for (i = 0; i < o->via.map.size; i++) {
		if (mpack_streq(&o->via.map.ptr[i].key, key))
			return (&o->via.map.ptr[i].val);
	}
	return (NULL);
}

/* A str or bin field: msgpack-c lays both out alike (ptr, size). */
static int
mpack_get_bytes(const msgpack_object *o, const char *key,
    msgpack_object_type type, const char **p, size_t *len)
{
	const msgpack_object	*v = mpack_get(o, key);

	if (v == NULL || v->type == MSGPACK_OBJECT_NIL)
		return (0);
	if (v->type != type)
		return (-1);
	*p = v->via.str.size > 0 ? v->via.str.ptr : "";
	*len = v->via.str.size;
	return (1);
}

int
mpack_get_str(const msgpack_object *o, const char *key, const char **p,
    size_t *len)
{
	return (mpack_get_bytes(o, key, MSGPACK_OBJECT_STR, p, len));
}

int
mpack_get_bin(const msgpack_object *o, const char *key, const char **p,
    size_t *len)
{
	return (mpack_get_bytes(o, key, MSGPACK_OBJECT_BIN, p, len));
}

int
mpack_get_int(const msgpack_object *o, const char *key, int64_t min,
    int64_t max, int64_t *out)
{
	const msgpack_object	*v = mpack_get(o, key);
	int64_t			 n;

	if (v == NULL || v->type == MSGPACK_OBJECT_NIL)
		return (0);
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		if (v->via.u64 > (uint64_t)INT64_MAX)
			return (-1);
		n = (int64_t)v->via.u64;
	} else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		n = v->via.i64;
	else if (v->type == MSGPACK_OBJECT_FLOAT64 ||
	    v->type == MSGPACK_OBJECT_FLOAT32) {
		/* JSON clients may send 80.0 for 80. */
		/* Compared before the cast: (double)INT64_MAX is 2^63. */
		if (!isfinite(v->via.f64) || v->via.f64 != floor(v->via.f64) ||
		    v->via.f64 < -9223372036854775808.0 ||
		    v->via.f64 >= 9223372036854775808.0)
			return (-1);
		n = (int64_t)v->via.f64;
	} else
		return (-1);
	if (n < min || n > max)
		return (-1);
	*out = n;
	return (1);
}

int
mpack_get_bool(const msgpack_object *o, const char *key, int *out)
{
	const msgpack_object	*v = mpack_get(o, key);

	if (v == NULL || v->type == MSGPACK_OBJECT_NIL)
		return (0);
	if (v->type != MSGPACK_OBJECT_BOOLEAN)
		return (-1);
	*out = v->via.boolean;
	return (1);
}

int
mpack_get_num(const msgpack_object *o, const char *key, double *out)
{
	const msgpack_object	*v = mpack_get(o, key);

	if (v == NULL || v->type == MSGPACK_OBJECT_NIL)
		return (0);
	switch (v->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		*out = (double)v->via.u64;
		return (1);
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		*out = (double)v->via.i64;
		return (1);
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		if (!isfinite(v->via.f64))
			return (-1);
		*out = v->via.f64;
		return (1);
	default:
		return (-1);
	}
}

int
mpack_strcpy(const msgpack_object *o, char *dst, size_t dstlen)
{
	if (o == NULL || o->type != MSGPACK_OBJECT_STR ||
	    o->via.str.size >= dstlen || (o->via.str.size > 0 &&
	    memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL))
		return (-1);
	if (o->via.str.size > 0)
		memcpy(dst, o->via.str.ptr, o->via.str.size);
	dst[o->via.str.size] = '\0';
	return (0);
}
