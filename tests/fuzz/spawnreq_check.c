/*
 * spawnreq_check.c: spawnreq_decode() run on a fuzzed object and checked.
 *
 * Shared by fuzz_request (REST bodies, JSON converted to msgpack) and
 * fuzz_wsmsg (exec stream start messages).  A decoded request is compared
 * field by field with the object, read here without the mpack helpers the
 * decoder uses: every value must be the object's, or the documented default
 * when the key is absent or nil, and within its documented bounds, and
 * every key must be a field the protocol defines for that kind.  A refused
 * request must come with a reason, valid UTF-8 even when it quotes the
 * input, and leave nothing allocated.
 */
#include <string.h>

#include <msgpack.h>

#include "spawnreq.h"
#include "fuzz.h"

static int	check_streq(const char *, const msgpack_object *);

/* The fields of each kind, as lodge-protocol.7 lists them. */
static const char *const check_session_keys[] = { "command", "args",
    "workDir", "env", "user", "cols", "rows", "name", "pty", "bufferSize",
    NULL };
static const char *const check_exec_keys[] = { "command", "args", "workDir",
    "env", "user", "cols", "rows", "pty", "timeoutSeconds", "stdin",
    "encoding", "maxOutputBytes", NULL };
/* stdin, encoding and maxOutputBytes only as nil. */
static const char *const check_stream_keys[] = { "type", "command", "args",
    "workDir", "env", "user", "cols", "rows", "tty", "timeoutSeconds",
    NULL };

int
fuzz_utf8_valid(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, k, need;
	uint32_t		 cp;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if (p[i] >= 0xc2 && p[i] <= 0xdf) {
			need = 1;
			cp = p[i] & 0x1f;
		} else if (p[i] >= 0xe0 && p[i] <= 0xef) {
			need = 2;
			cp = p[i] & 0x0f;
		} else if (p[i] >= 0xf0 && p[i] <= 0xf4) {
			need = 3;
			cp = p[i] & 0x07;
		} else
			return (0);
		if (n - i <= need)
			return (0);
		for (k = 1; k <= need; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return (0);
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return (0);
		i += need + 1;
	}
	return (1);
}

int
fuzz_keys_in(const msgpack_object *o, const char *const *names)
{
	const msgpack_object	*k;
	uint32_t		 i;
	size_t			 j;

	for (i = 0; i < o->via.map.size; i++) {
		k = &o->via.map.ptr[i].key;
		if (k->type != MSGPACK_OBJECT_STR)
			return (0);
		for (j = 0; names[j] != NULL; j++)
			if (strlen(names[j]) == k->via.str.size &&
			    memcmp(names[j], k->via.str.ptr,
			    k->via.str.size) == 0)
				break;
		if (names[j] == NULL && !(names == check_stream_keys &&
		    o->via.map.ptr[i].val.type == MSGPACK_OBJECT_NIL &&
		    (check_streq("stdin", k) || check_streq("encoding", k) ||
		    check_streq("maxOutputBytes", k))))
			return (0);
	}
	return (1);
}

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
	FUZZ_CHECK(fuzz_keys_in(o, kind == SPAWN_SESSION ? check_session_keys :
	    kind == SPAWN_EXEC ? check_exec_keys : check_stream_keys));

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
		FUZZ_CHECK(fuzz_utf8_valid(why, strlen(why)));
		FUZZ_CHECK(r.command == NULL && r.args == NULL &&
		    r.workdir == NULL && r.env == NULL &&
		    r.stdin_data == NULL);
		/* The same answer when the reason does not fit. */
		memset(tiny, 'x', sizeof(tiny));
		FUZZ_CHECK(spawnreq_decode(o, kind, buffer_max, &r, tiny,
		    sizeof(tiny)) == -1);
		FUZZ_CHECK(memchr(tiny, '\0', sizeof(tiny)) != NULL);
		FUZZ_CHECK(fuzz_utf8_valid(tiny, strlen(tiny)));
		return;
	}
	check_decoded(o, &r, kind, buffer_max);
	spawnreq_free(&r);
	FUZZ_CHECK(r.command == NULL && r.args == NULL && r.env == NULL);
}
