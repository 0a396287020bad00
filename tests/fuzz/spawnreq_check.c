/*
 * spawnreq_check.c: spawnreq_decode() run on a fuzzed object and checked.
 *
 * Shared by fuzz_request (REST bodies, JSON converted to msgpack) and
 * fuzz_wsmsg (exec stream start messages).  A decoded request is compared
 * field by field with the object, read here without the mpack helpers the
 * decoder uses: every value must be the object's, or the documented default
 * when the key is absent or nil, and within its documented bounds.  A
 * refused request must come with a reason and leave nothing allocated.
 */
#include <string.h>

#include <msgpack.h>

#include "spawnreq.h"
#include "fuzz.h"

/* The value of the first key equal to key, or NULL; nil counts as absent. */
static const msgpack_object *
check_field(const msgpack_object *o, const char *key)
{
	const msgpack_object	*k, *v;
	size_t			 len = strlen(key);
	uint32_t		 i;

	for (i = 0; i < o->via.map.size; i++) {
		k = &o->via.map.ptr[i].key;
		v = &o->via.map.ptr[i].val;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == len &&
		    memcmp(k->via.str.ptr, key, len) == 0)
			return (v->type == MSGPACK_OBJECT_NIL ? NULL : v);
	}
	return (NULL);
}

/* s equals the str object v. */
static int
check_streq(const char *s, const msgpack_object *v)
{
	return (v->type == MSGPACK_OBJECT_STR && strlen(s) == v->via.str.size &&
	    memcmp(s, v->via.str.ptr, v->via.str.size) == 0);
}

/* The number an integer or float object holds. */
static double
check_number(const msgpack_object *v)
{
	switch (v->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return ((double)v->via.u64);
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return ((double)v->via.i64);
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return (v->via.f64);
	default:
		FUZZ_CHECK(!"not a number");
		return (0);
	}
}

static void
check_int(int64_t got, const msgpack_object *v, int64_t dflt, int64_t min,
    int64_t max)
{
	FUZZ_CHECK(got >= min && got <= max);
	if (v == NULL)
		FUZZ_CHECK(got == dflt);
	else
		FUZZ_CHECK((double)got == check_number(v));
}

static void
check_decoded(const msgpack_object *o, const struct spawnreq *r,
    enum spawnreq_kind kind, size_t buffer_max)
{
	const msgpack_object	*v, *k, *x;
	size_t			 i;

	FUZZ_CHECK(o->type == MSGPACK_OBJECT_MAP);
	FUZZ_CHECK(r->kind == kind);

	/* command or args, never both; one of them unless a session. */
	v = check_field(o, "command");
	if (v == NULL)
		FUZZ_CHECK(r->command == NULL);
	else {
		FUZZ_CHECK(r->command != NULL && r->command[0] != '\0');
		FUZZ_CHECK(check_streq(r->command, v));
	}
	v = check_field(o, "args");
	if (v == NULL) {
		FUZZ_CHECK(r->args == NULL && r->nargs == 0);
	} else {
		FUZZ_CHECK(r->command == NULL && r->args != NULL);
		FUZZ_CHECK(v->type == MSGPACK_OBJECT_ARRAY);
		FUZZ_CHECK(r->nargs == v->via.array.size);
		FUZZ_CHECK(r->nargs >= 1 && r->nargs <= SPAWNREQ_ARGS_MAX);
		FUZZ_CHECK(r->args[r->nargs] == NULL);
		FUZZ_CHECK(r->args[0][0] != '\0');
		for (i = 0; i < r->nargs; i++)
			FUZZ_CHECK(check_streq(r->args[i],
			    &v->via.array.ptr[i]));
	}
	if (kind != SPAWN_SESSION)
		FUZZ_CHECK(r->command != NULL || r->args != NULL);

	v = check_field(o, "workDir");
	if (v == NULL || (v->type == MSGPACK_OBJECT_STR &&
	    v->via.str.size == 0))
		FUZZ_CHECK(r->workdir == NULL);
	else
		FUZZ_CHECK(r->workdir != NULL && check_streq(r->workdir, v));

	v = check_field(o, "env");
	if (v == NULL) {
		FUZZ_CHECK(r->env == NULL && r->nenv == 0);
	} else {
		FUZZ_CHECK(v->type == MSGPACK_OBJECT_MAP);
		FUZZ_CHECK(r->env != NULL && r->nenv == v->via.map.size);
		FUZZ_CHECK(r->nenv <= SPAWNREQ_ENV_MAX);
		FUZZ_CHECK(r->env[r->nenv] == NULL);
		for (i = 0; i < r->nenv; i++) {
			k = &v->via.map.ptr[i].key;
			x = &v->via.map.ptr[i].val;
			FUZZ_CHECK(k->type == MSGPACK_OBJECT_STR &&
			    x->type == MSGPACK_OBJECT_STR);
			FUZZ_CHECK(k->via.str.size > 0);
			FUZZ_CHECK(memchr(k->via.str.ptr, '=',
			    k->via.str.size) == NULL);
			FUZZ_CHECK(strlen(r->env[i]) ==
			    k->via.str.size + 1 + x->via.str.size);
			FUZZ_CHECK(memcmp(r->env[i], k->via.str.ptr,
			    k->via.str.size) == 0);
			FUZZ_CHECK(r->env[i][k->via.str.size] == '=');
			FUZZ_CHECK(memcmp(r->env[i] + k->via.str.size + 1,
			    x->via.str.ptr, x->via.str.size) == 0);
		}
	}

	v = check_field(o, "user");
	FUZZ_CHECK(memchr(r->user, '\0', sizeof(r->user)) != NULL);
	if (v == NULL)
		FUZZ_CHECK(r->user[0] == '\0');
	else
		FUZZ_CHECK(check_streq(r->user, v));

	v = check_field(o, kind == SPAWN_STREAM ? "tty" : "pty");
	if (v == NULL)
		FUZZ_CHECK(r->pty == 0);
	else
		FUZZ_CHECK(v->type == MSGPACK_OBJECT_BOOLEAN &&
		    r->pty == v->via.boolean);

	check_int(r->cols, check_field(o, "cols"), 80, 1, SPAWNREQ_SIZE_MAX);
	check_int(r->rows, check_field(o, "rows"), 24, 1, SPAWNREQ_SIZE_MAX);

	if (kind == SPAWN_SESSION) {
		FUZZ_CHECK(memchr(r->name, '\0', sizeof(r->name)) != NULL);
		v = check_field(o, "name");
		if (v == NULL)
			FUZZ_CHECK(r->name[0] == '\0');
		else {
			FUZZ_CHECK(check_streq(r->name, v));
			FUZZ_CHECK(spawnreq_name_valid(r->name,
			    strlen(r->name)));
		}
		v = check_field(o, "bufferSize");
		check_int((int64_t)r->buffer_size, v,
		    SPAWNREQ_BUFFER_DEFAULT < buffer_max ?
		    SPAWNREQ_BUFFER_DEFAULT : (int64_t)buffer_max,
		    SPAWNREQ_BUFFER_MIN, (int64_t)buffer_max);
		FUZZ_CHECK(r->timeout == 0);
	} else {
		FUZZ_CHECK(r->name[0] == '\0');
		FUZZ_CHECK(r->buffer_size == 0);
		v = check_field(o, "timeoutSeconds");
		FUZZ_CHECK(r->timeout >= 0 && r->timeout <= 1e9);
		if (v == NULL)
			FUZZ_CHECK(r->timeout == 0);
		else
			FUZZ_CHECK(r->timeout == check_number(v));
	}

	if (kind == SPAWN_EXEC) {
		v = check_field(o, "stdin");
		if (v == NULL)
			FUZZ_CHECK(r->stdin_data == NULL && r->stdin_len == 0);
		else {
			FUZZ_CHECK(v->type == MSGPACK_OBJECT_STR);
			FUZZ_CHECK(r->stdin_data != NULL &&
			    r->stdin_len == v->via.str.size);
			FUZZ_CHECK(memcmp(r->stdin_data, v->via.str.ptr,
			    r->stdin_len) == 0);
		}
		v = check_field(o, "encoding");
		FUZZ_CHECK(r->base64 == (v != NULL &&
		    check_streq("base64", v)));
		if (v != NULL)
			FUZZ_CHECK(check_streq("base64", v) ||
			    check_streq("utf8", v) || check_streq("utf-8", v));
		check_int(r->max_output, check_field(o, "maxOutputBytes"), 0,
		    0, INT64_MAX / 2);
	} else {
		FUZZ_CHECK(r->stdin_data == NULL && r->stdin_len == 0);
		FUZZ_CHECK(r->base64 == 0 && r->max_output == 0);
	}
}

/* Decode o as kind with a bufferSize ceiling of buffer_max, and check. */
void
fuzz_spawnreq(const msgpack_object *o, enum spawnreq_kind kind,
    size_t buffer_max)
{
	struct spawnreq	 r;
	char		 why[512], tiny[8];

	memset(why, 'x', sizeof(why));
	if (spawnreq_decode(o, kind, buffer_max, &r, why, sizeof(why)) == -1) {
		FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL);
		FUZZ_CHECK(why[0] != '\0');
		FUZZ_CHECK(r.command == NULL && r.args == NULL &&
		    r.workdir == NULL && r.env == NULL &&
		    r.stdin_data == NULL);
		/* The same answer when the reason does not fit. */
		memset(tiny, 'x', sizeof(tiny));
		FUZZ_CHECK(spawnreq_decode(o, kind, buffer_max, &r, tiny,
		    sizeof(tiny)) == -1);
		FUZZ_CHECK(memchr(tiny, '\0', sizeof(tiny)) != NULL);
		return;
	}
	check_decoded(o, &r, kind, buffer_max);
	spawnreq_free(&r);
	FUZZ_CHECK(r.command == NULL && r.args == NULL && r.env == NULL);
}
