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
mpack_kv_strn(msgpack_packer *pk, const char *k, const char *v, size_t len)
{
	mpack_str(pk, k);
	msgpack_pack_str(pk, len);
	msgpack_pack_str_body(pk, v, len);
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

int
mpack_get_str(const msgpack_object *o, const char *key, const char **p,
    size_t *len)
{
	const msgpack_object	*v = mpack_get(o, key);

	if (v == NULL || v->type == MSGPACK_OBJECT_NIL)
		return (0);
	if (v->type != MSGPACK_OBJECT_STR)
		return (-1);
	*p = v->via.str.size > 0 ? v->via.str.ptr : "";
	*len = v->via.str.size;
	return (1);
}

int
mpack_get_bin(const msgpack_object *o, const char *key, const char **p,
    size_t *len)
{
	const msgpack_object	*v = mpack_get(o, key);

	if (v == NULL || v->type == MSGPACK_OBJECT_NIL)
		return (0);
	if (v->type != MSGPACK_OBJECT_BIN)
		return (-1);
	*p = v->via.bin.size > 0 ? v->via.bin.ptr : "";
	*len = v->via.bin.size;
	return (1);
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
		if (!isfinite(v->via.f64) || v->via.f64 != floor(v->via.f64) ||
		    v->via.f64 < (double)min || v->via.f64 > (double)max)
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
