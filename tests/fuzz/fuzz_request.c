/*
 * fuzz_request.c: libFuzzer target for the JSON request decoders.
 *
 * The input is a REST request body and takes the front's path (api.c):
 * json_loadb() with JSON_REJECT_DUPLICATES, jsonmp_pack(), one
 * msgpack_unpack_next(), then spawnreq_decode() as a session (under three
 * --max-buffer-size ceilings), as an exec and as an exec stream start, each
 * decoded request checked against the object (spawnreq_check.c).  The
 * unpacked object also goes back to JSON with jsonmp_to_json(): that must
 * be the value parsed, and must pack again to the same bytes.
 *
 * msgpack-c unpacks at most 32 nested containers (MSGPACK_EMBED_STACK_SIZE),
 * so a deeper body packs but does not unpack; that is allowed here, and
 * nothing else is.
 */
#include <string.h>

#include <jansson.h>
#include <msgpack.h>

#include "jsonmp.h"
#include "spawnreq.h"
#include "fuzz.h"

#define FUZZ_UNPACK_DEPTH	32	/* MSGPACK_EMBED_STACK_SIZE */

/* Containers on the deepest path through j, j included. */
static size_t
fuzz_depth(const json_t *j)
{
	const char	*key;
	json_t		*v;
	size_t		 i, d, max = 0;

	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, key, v) {
			if ((d = fuzz_depth(v)) > max)
				max = d;
		}
		return (max + 1);
	}
	if (json_is_array(j)) {
		json_array_foreach(j, i, v) {
			if ((d = fuzz_depth(v)) > max)
				max = d;
		}
		return (max + 1);
	}
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t	 ceilings[] = { 4096, 64 * 1024 * 1024,
	    (size_t)1 << 34 };
	json_error_t		 err;
	json_t			*j, *back;
	msgpack_sbuffer		 sb, sb2;
	msgpack_packer		 pk;
	msgpack_unpacked	 up;
	size_t			 off = 0, i;
	int			 rc;

	if ((j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES,
	    &err)) == NULL) {
		FUZZ_CHECK(err.text[0] != '\0');
		return (0);
	}

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	FUZZ_CHECK(jsonmp_pack(&pk, j) == 0);

	msgpack_unpacked_init(&up);
	rc = msgpack_unpack_next(&up, sb.data, sb.size, &off);
	if (rc != MSGPACK_UNPACK_SUCCESS) {
		FUZZ_CHECK(fuzz_depth(j) > FUZZ_UNPACK_DEPTH);
		goto out;
	}
	FUZZ_CHECK(off == sb.size);

	for (i = 0; i < sizeof(ceilings) / sizeof(ceilings[0]); i++)
		fuzz_spawnreq(&up.data, SPAWN_SESSION, ceilings[i]);
	fuzz_spawnreq(&up.data, SPAWN_EXEC, 0);
	fuzz_spawnreq(&up.data, SPAWN_STREAM, 0);

	/* Back to JSON: the same value, packing to the same bytes. */
	back = jsonmp_to_json(&up.data);
	FUZZ_CHECK(back != NULL);
	FUZZ_CHECK(json_equal(j, back));
	msgpack_sbuffer_init(&sb2);
	msgpack_packer_init(&pk, &sb2, msgpack_sbuffer_write);
	FUZZ_CHECK(jsonmp_pack(&pk, back) == 0);
	FUZZ_CHECK(sb2.size == sb.size &&
	    memcmp(sb2.data, sb.data, sb.size) == 0);
	msgpack_sbuffer_destroy(&sb2);
	json_decref(back);

out:
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sb);
	json_decref(j);
	return (0);
}
