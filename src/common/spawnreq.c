/*
 * spawnreq.c: decoding and checking of run requests (see spawnreq.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "mpack.h"
#include "spawnreq.h"

/* The fields of each kind of run request (lodge-protocol.7, RUN REQUESTS). */
#define SPAWNREQ_COMMON_FIELDS \
	{ "command", FIELD_STR, NULL }, \
	{ "args", FIELD_ARRAY, NULL }, \
	{ "workDir", FIELD_STR, NULL }, \
	{ "env", FIELD_MAP, NULL }, \
	{ "user", FIELD_STR, NULL }, \
	{ "cols", FIELD_INT, NULL }, \
	{ "rows", FIELD_INT, NULL }

static const struct field spawnreq_session_fields[] = {
	SPAWNREQ_COMMON_FIELDS,
	{ "name", FIELD_STR, NULL },
	{ "pty", FIELD_BOOL, NULL },
	{ "bufferSize", FIELD_INT, NULL },
};

static const struct field spawnreq_exec_fields[] = {
	SPAWNREQ_COMMON_FIELDS,
	{ "pty", FIELD_BOOL, NULL },
	{ "timeoutSeconds", FIELD_NUM, NULL },
	{ "stdin", FIELD_STR, NULL },
	{ "encoding", FIELD_STR, NULL },
	{ "maxOutputBytes", FIELD_INT, NULL },
};

static const struct field spawnreq_stream_fields[] = {
	{ "type", FIELD_STR, NULL },
	SPAWNREQ_COMMON_FIELDS,
	{ "tty", FIELD_BOOL, NULL },
	{ "timeoutSeconds", FIELD_NUM, NULL },
	{ "clientCloses", FIELD_BOOL, NULL },
	{ "stdin", FIELD_REFUSED, "does not apply to an exec stream: send "
	    "stdin messages" },
	{ "encoding", FIELD_REFUSED, "does not apply to an exec stream: "
	    "output is bin" },
	{ "maxOutputBytes", FIELD_REFUSED, "does not apply to an exec "
	    "stream: output is not kept" },
};

#define SPAWNREQ_KIND(t)	{ t, sizeof(t) / sizeof((t)[0]) }

/* Each kind's fields, by enum spawnreq_kind. */
static const struct {
	const struct field	*fields;
	size_t			 n;
} spawnreq_kinds[] = {
	SPAWNREQ_KIND(spawnreq_session_fields),
	SPAWNREQ_KIND(spawnreq_exec_fields),
	SPAWNREQ_KIND(spawnreq_stream_fields),
};

int
spawnreq_name_valid(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || len > SPAWNREQ_NAME_MAX)
		return (0);
	/* "." and ".." could never appear in a request path. */
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' &&
	    s[1] == '.'))
		return (0);
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		    c == '-'))
			return (0);
	}
	return (1);
}

static char *
spawnreq_strdup(const char *p, size_t len)
{
	char	*s;

	if (len == 0)
		return (strdup(""));
	if (memchr(p, '\0', len) != NULL || (s = malloc(len + 1)) == NULL)
		return (NULL);
	memcpy(s, p, len);
	s[len] = '\0';
	return (s);
}

static int
spawnreq_args(const msgpack_object *v, struct spawnreq *r, char *why,
    size_t whylen)
{
	uint32_t	i;

	if (v->via.array.size == 0 || v->via.array.size > SPAWNREQ_ARGS_MAX)
		return (fields_fail(why, whylen, "'args' must hold 1 to %d "
		    "strings", SPAWNREQ_ARGS_MAX));
	if ((r->args = calloc(v->via.array.size + 1, sizeof(char *))) == NULL)
		return (fields_fail(why, whylen, "out of memory"));
	for (i = 0; i < v->via.array.size; i++) {
		const msgpack_object *a = &v->via.array.ptr[i];

		if (a->type != MSGPACK_OBJECT_STR)
			return (fields_fail(why, whylen, "'args' must be an "
			    "array of strings"));
		if ((r->args[i] = spawnreq_strdup(a->via.str.ptr,
		    a->via.str.size)) == NULL)
			return (fields_fail(why, whylen, "'args' strings "
			    "must not hold NUL bytes"));
		r->nargs++;
	}
	if (r->args[0][0] == '\0')
		return (fields_fail(why, whylen, "'args[0]' must not be "
		    "empty"));
	return (0);
}

static int
spawnreq_env(const msgpack_object *v, struct spawnreq *r, char *why,
    size_t whylen)
{
	uint32_t	i;

	if (v->type == MSGPACK_OBJECT_NIL)
		return (0);
	if (v->via.map.size > SPAWNREQ_ENV_MAX)
		return (fields_fail(why, whylen, "'env' has more than %d "
		    "entries", SPAWNREQ_ENV_MAX));
	if ((r->env = calloc(v->via.map.size + 1, sizeof(char *))) == NULL)
		return (fields_fail(why, whylen, "out of memory"));
	for (i = 0; i < v->via.map.size; i++) {
		const msgpack_object *k = &v->via.map.ptr[i].key;
		const msgpack_object *x = &v->via.map.ptr[i].val;
		char *e;

		if (k->type != MSGPACK_OBJECT_STR ||
		    x->type != MSGPACK_OBJECT_STR)
			return (fields_fail(why, whylen, "'env' must be an "
			    "object of strings"));
		if (k->via.str.size == 0 ||
		    memchr(k->via.str.ptr, '=', k->via.str.size) != NULL ||
		    memchr(k->via.str.ptr, '\0', k->via.str.size) != NULL ||
		    (x->via.str.size > 0 &&
		    memchr(x->via.str.ptr, '\0', x->via.str.size) != NULL))
			return (fields_fail(why, whylen, "'env' names must "
			    "be non-empty without '=' and no entry may hold "
			    "NUL bytes"));
		if ((e = malloc(k->via.str.size + x->via.str.size + 2)) ==
		    NULL)
			return (fields_fail(why, whylen, "out of memory"));
		memcpy(e, k->via.str.ptr, k->via.str.size);
		e[k->via.str.size] = '=';
		if (x->via.str.size > 0)
			memcpy(e + k->via.str.size + 1, x->via.str.ptr,
			    x->via.str.size);
		e[k->via.str.size + 1 + x->via.str.size] = '\0';
		r->env[r->nenv++] = e;
	}
	return (0);
}

/*
 * A string field into a fixed buffer: 1 found, 0 absent (fields_check
 * judged its type).
 */
static int
spawnreq_fixed(const msgpack_object *o, const char *key, char *dst,
    size_t dstlen, char *why, size_t whylen)
{
	const char	*p;
	size_t		 len;
	int		 rc;

	if ((rc = mpack_get_str(o, key, &p, &len)) != 1)
		return (rc);
	if (len >= dstlen || memchr(p, '\0', len) != NULL)
		return (fields_fail(why, whylen, "'%s' is too long or holds "
		    "NUL bytes", key));
	memcpy(dst, p, len);
	dst[len] = '\0';
	return (1);
}

static int
spawnreq_string(const msgpack_object *o, const char *key, char **dst,
    char *why, size_t whylen)
{
	const char	*p;
	size_t		 len;
	int		 rc;

	if ((rc = mpack_get_str(o, key, &p, &len)) != 1)
		return (rc);
	if ((*dst = spawnreq_strdup(p, len)) == NULL)
		return (fields_fail(why, whylen, "'%s' must not hold NUL "
		    "bytes", key));
	return (1);
}

static int
spawnreq_int(const msgpack_object *o, const char *key, int64_t min,
    int64_t max, int64_t *out, char *why, size_t whylen)
{
	int	rc;

	if ((rc = mpack_get_int(o, key, min, max, out)) == -1)
		snprintf(why, whylen, "'%s' must be an integer from %lld to "
		    "%lld", key, (long long)min, (long long)max);
	return (rc);
}

static int
spawnreq_fields(const msgpack_object *o, struct spawnreq *r, size_t buffer_max,
    char *why, size_t whylen)
{
	const msgpack_object	*v;
	const char		*p;
	size_t			 len;
	int64_t			 n, cols = 80, rows = 24;
	int			 rc;

	/*
	 * Every key of o is a field of its kind, of the right type or nil:
	 * the typed lookups below cannot fail on the type.
	 */
	if (fields_check(o, spawnreq_kinds[r->kind].fields,
	    spawnreq_kinds[r->kind].n, why, whylen) == -1)
		return (-1);
	if (spawnreq_string(o, "command", &r->command, why, whylen) == -1)
		return (-1);
	if ((v = mpack_get(o, "args")) != NULL &&
	    v->type != MSGPACK_OBJECT_NIL) {
		if (r->command != NULL)
			return (fields_fail(why, whylen, "give 'command' or "
			    "'args', not both"));
		if (spawnreq_args(v, r, why, whylen) == -1)
			return (-1);
	}
	if (r->command == NULL && r->args == NULL && r->kind != SPAWN_SESSION)
		return (fields_fail(why, whylen, "'command' or 'args' is "
		    "required"));
	if (r->command != NULL && r->command[0] == '\0')
		return (fields_fail(why, whylen, "'command' must not be "
		    "empty"));
	if (spawnreq_string(o, "workDir", &r->workdir, why, whylen) == -1)
		return (-1);
	if (r->workdir != NULL && r->workdir[0] == '\0') {
		free(r->workdir);
		r->workdir = NULL;
	}
	if ((v = mpack_get(o, "env")) != NULL &&
	    spawnreq_env(v, r, why, whylen) == -1)
		return (-1);
	if (spawnreq_fixed(o, "user", r->user, sizeof(r->user), why,
	    whylen) == -1)
		return (-1);

	(void)mpack_get_bool(o, r->kind == SPAWN_STREAM ? "tty" : "pty",
	    &r->pty);
	if (r->kind == SPAWN_STREAM)
		(void)mpack_get_bool(o, "clientCloses", &r->client_closes);
	/* A lookup leaves the default where the field is absent. */
	if (spawnreq_int(o, "cols", 1, SPAWNREQ_SIZE_MAX, &cols, why,
	    whylen) == -1 || spawnreq_int(o, "rows", 1, SPAWNREQ_SIZE_MAX,
	    &rows, why, whylen) == -1)
		return (-1);
	r->cols = (int)cols;
	r->rows = (int)rows;

	if (r->kind == SPAWN_SESSION) {
		if ((rc = spawnreq_fixed(o, "name", r->name, sizeof(r->name),
		    why, whylen)) == -1 || (rc == 1 &&
		    !spawnreq_name_valid(r->name, strlen(r->name))))
			return (fields_fail(why, whylen, "'name' must be 1 "
			    "to %d characters of A-Z a-z 0-9 . _ -",
			    SPAWNREQ_NAME_MAX));
		n = SPAWNREQ_BUFFER_DEFAULT < buffer_max ?
		    SPAWNREQ_BUFFER_DEFAULT : (int64_t)buffer_max;
		if (spawnreq_int(o, "bufferSize", SPAWNREQ_BUFFER_MIN,
		    (int64_t)buffer_max, &n, why, whylen) == -1)
			return (-1);
		r->buffer_size = (size_t)n;
		return (0);
	}

	if ((rc = mpack_get_num(o, "timeoutSeconds", &r->timeout)) == -1 ||
	    (rc == 1 && (r->timeout < 0 || r->timeout > 1e9)))
		return (fields_fail(why, whylen, "'timeoutSeconds' must be "
		    "a number from 0 to 1e9"));
	if (r->kind == SPAWN_EXEC) {
		if (mpack_get_str(o, "stdin", &p, &len) == 1) {
			if ((r->stdin_data = malloc(len + 1)) == NULL)
				return (fields_fail(why, whylen, "out of "
				    "memory"));
			memcpy(r->stdin_data, p, len);
			r->stdin_len = len;
		}
		if ((rc = mpack_get_str(o, "encoding", &p, &len)) == -1 ||
		    (rc == 1 && !(len == 4 && memcmp(p, "utf8", 4) == 0) &&
		    !(len == 5 && memcmp(p, "utf-8", 5) == 0) &&
		    !(len == 6 && memcmp(p, "base64", 6) == 0)))
			return (fields_fail(why, whylen, "'encoding' must "
			    "be \"utf8\" or \"base64\""));
		r->base64 = (rc == 1 && len == 6);
		if ((rc = spawnreq_int(o, "maxOutputBytes", 0, INT64_MAX / 2,
		    &r->max_output, why, whylen)) == -1)
			return (-1);
	}
	return (0);
}

int
spawnreq_decode(const msgpack_object *o, enum spawnreq_kind kind,
    size_t buffer_max, struct spawnreq *r, char *why, size_t whylen)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	if (spawnreq_fields(o, r, buffer_max, why, whylen) == -1) {
		spawnreq_free(r);
		return (-1);
	}
	return (0);
}

void
spawnreq_free(struct spawnreq *r)
{
	size_t	i;

	free(r->command);
	for (i = 0; r->args != NULL && r->args[i] != NULL; i++)
		free(r->args[i]);
	free(r->args);
	free(r->workdir);
	for (i = 0; r->env != NULL && r->env[i] != NULL; i++)
		free(r->env[i]);
	free(r->env);
	free(r->stdin_data);
	memset(r, 0, sizeof(*r));
}
