/*
 * jsonmp.c: JSON <-> msgpack (see jsonmp.h).
 */
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "jsonmp.h"
#include "mpack.h"

int
jsonmp_pack(msgpack_packer *pk, const json_t *j)
{
	const char	*key;
	json_t		*v;
	size_t		 i;

	switch (json_typeof(j)) {
	case JSON_OBJECT:
		msgpack_pack_map(pk, json_object_size(j));
		json_object_foreach((json_t *)j, key, v) {
			mpack_str(pk, key);
			if (jsonmp_pack(pk, v) == -1)
				return (-1);
		}
		return (0);
	case JSON_ARRAY:
		msgpack_pack_array(pk, json_array_size(j));
		json_array_foreach(j, i, v) {
			if (jsonmp_pack(pk, v) == -1)
				return (-1);
		}
		return (0);
	case JSON_STRING:
		msgpack_pack_str(pk, json_string_length(j));
		msgpack_pack_str_body(pk, json_string_value(j),
		    json_string_length(j));
		return (0);
	case JSON_INTEGER:
		msgpack_pack_int64(pk, json_integer_value(j));
		return (0);
	case JSON_REAL:
		msgpack_pack_double(pk, json_real_value(j));
		return (0);
	case JSON_TRUE:
		msgpack_pack_true(pk);
		return (0);
	case JSON_FALSE:
		msgpack_pack_false(pk);
		return (0);
	case JSON_NULL:
		msgpack_pack_nil(pk);
		return (0);
	}
	return (-1);
}

static json_t *
jsonmp_bin(const char *p, size_t len)
{
	char	*out;
	size_t	 cap = (len + 2) / 3 * 4 + 2;	/* lws wants one spare */
	json_t	*j;

	if ((out = malloc(cap)) == NULL)
		return (NULL);
	if (lws_b64_encode_string(p, (int)len, out, (int)cap) < 0) {
		free(out);
		return (NULL);
	}
	j = json_string(out);
	free(out);
	return (j);
}

json_t *
jsonmp_to_json(const msgpack_object *o)
{
	json_t		*j, *v;
	char		*key;
	uint32_t	 i;

	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return (json_null());
	case MSGPACK_OBJECT_BOOLEAN:
		return (json_boolean(o->via.boolean));
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return (json_integer((json_int_t)o->via.u64));
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return (json_integer(o->via.i64));
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return (json_real(o->via.f64));
	case MSGPACK_OBJECT_STR:
		/* msgpack-c may give an empty string a NULL pointer. */
		return (json_stringn(o->via.str.size > 0 ? o->via.str.ptr : "",
		    o->via.str.size));
	case MSGPACK_OBJECT_BIN:
		return (jsonmp_bin(o->via.bin.ptr, o->via.bin.size));
	case MSGPACK_OBJECT_ARRAY:
		if ((j = json_array()) == NULL)
			return (NULL);
		for (i = 0; i < o->via.array.size; i++) {
			if ((v = jsonmp_to_json(&o->via.array.ptr[i])) == NULL ||
			    json_array_append_new(j, v) == -1) {
				json_decref(j);
				return (NULL);
			}
		}
		return (j);
	case MSGPACK_OBJECT_MAP:
		if ((j = json_object()) == NULL)
			return (NULL);
		for (i = 0; i < o->via.map.size; i++) {
			const msgpack_object *k = &o->via.map.ptr[i].key;

			if (k->type != MSGPACK_OBJECT_STR ||
			    (key = strndup(k->via.str.size > 0 ?
			    k->via.str.ptr : "", k->via.str.size)) == NULL) {
				json_decref(j);
				return (NULL);
			}
			v = jsonmp_to_json(&o->via.map.ptr[i].val);
			if (v == NULL || json_object_set_new(j, key, v) == -1) {
				free(key);
				json_decref(j);
				return (NULL);
			}
			free(key);
		}
		return (j);
	default:
		return (NULL);
	}
}
