/*
 * wsmsg.c: client WebSocket message decoding (see wsmsg.h).
 */
#include <sys/wait.h>

#include <stdio.h>
#include <string.h>

#include "fields.h"
#include "mpack.h"
#include "signame.h"
#include "spawnreq.h"
#include "utf8.h"
#include "wsmsg.h"

/* The fields of each client message; a start's are spawnreq's. */
static const struct field wsmsg_stdin_fields[] = {
	{ "type", FIELD_STR, NULL },
	{ "data", FIELD_DATA, NULL },
};
static const struct field wsmsg_eof_fields[] = {
	{ "type", FIELD_STR, NULL },
};
static const struct field wsmsg_resize_fields[] = {
	{ "type", FIELD_STR, NULL },
	{ "cols", FIELD_INT, NULL },
	{ "rows", FIELD_INT, NULL },
};
static const struct field wsmsg_signal_fields[] = {
	{ "type", FIELD_STR, NULL },
	{ "signal", FIELD_SIGNAL, NULL },
};

#define WSMSG_FIELDS(t)	(t), (sizeof(t) / sizeof((t)[0]))

static const struct {
	const char		*name;
	enum wsmsg_type		 type;
	const struct field	*fields;	/* NULL: checked elsewhere */
	size_t			 nfields;
} wsmsg_types[] = {
	{ "start", WSMSG_START, NULL, 0 },
	{ "stdin", WSMSG_STDIN, WSMSG_FIELDS(wsmsg_stdin_fields) },
	{ "eof", WSMSG_EOF, WSMSG_FIELDS(wsmsg_eof_fields) },
	{ "resize", WSMSG_RESIZE, WSMSG_FIELDS(wsmsg_resize_fields) },
	{ "signal", WSMSG_SIGNAL, WSMSG_FIELDS(wsmsg_signal_fields) },
};

static int
wsmsg_fields(struct wsmsg *m, char *why, size_t whylen)
{
	const msgpack_object	*o = &m->up.data, *type;
	int64_t			 cols, rows;
	size_t			 i, n;
	char			 name[32 * 3 + 1];

	if (o->type != MSGPACK_OBJECT_MAP ||
	    (type = mpack_get(o, "type")) == NULL ||
	    type->type != MSGPACK_OBJECT_STR)
		return (fields_fail(why, whylen, "a message is a map with a "
		    "string 'type'"));
	for (i = 0; i < sizeof(wsmsg_types) / sizeof(wsmsg_types[0]); i++)
		if (mpack_streq(type, wsmsg_types[i].name))
			break;
	if (i == sizeof(wsmsg_types) / sizeof(wsmsg_types[0])) {
		n = type->via.str.size > 32 ? 32 : type->via.str.size;
		utf8_copy(name, sizeof(name), n > 0 ? type->via.str.ptr : "",
		    n);
		return (fields_fail(why, whylen, "unknown message type '%s'",
		    name));
	}
	m->type = wsmsg_types[i].type;
	if (wsmsg_types[i].fields != NULL && fields_check(o,
	    wsmsg_types[i].fields, wsmsg_types[i].nfields, why, whylen) == -1)
		return (-1);
	switch (m->type) {
	case WSMSG_STDIN:
		/* bin as the protocol says; str accepted from lax clients. */
		if (mpack_get_bin(o, "data", &m->data, &m->len) != 1 &&
		    mpack_get_str(o, "data", &m->data, &m->len) != 1)
			return (fields_fail(why, whylen, "stdin needs 'data' "
			    "(bin)"));
		return (0);
	case WSMSG_RESIZE:
		if (mpack_get_int(o, "cols", 1, SPAWNREQ_SIZE_MAX, &cols) != 1 ||
		    mpack_get_int(o, "rows", 1, SPAWNREQ_SIZE_MAX, &rows) != 1)
			return (fields_fail(why, whylen, "resize needs 'cols' "
			    "and 'rows' from 1 to %d", SPAWNREQ_SIZE_MAX));
		m->cols = (int)cols;
		m->rows = (int)rows;
		return (0);
	case WSMSG_SIGNAL:
		if ((m->signo = signame_from_object(mpack_get(o, "signal"))) ==
		    -1)
			return (fields_fail(why, whylen, "'signal' must be a "
			    "name such as \"INT\" or a number from 1 to 64"));
		return (0);
	default:
		return (0);
	}
}

int
wsmsg_decode(const void *buf, size_t len, struct wsmsg *m, char *why,
    size_t whylen)
{
	size_t	off = 0;

	memset(m, 0, sizeof(*m));
	msgpack_unpacked_init(&m->up);
	if (mpack_validate(buf, len) == -1 ||
	    msgpack_unpack_next(&m->up, buf, len, &off) !=
	    MSGPACK_UNPACK_SUCCESS || off != len) {
		snprintf(why, whylen, "not a msgpack message");
		wsmsg_free(m);
		return (-1);
	}
	if (wsmsg_fields(m, why, whylen) == -1) {
		wsmsg_free(m);
		return (-1);
	}
	return (0);
}

void
wsmsg_pack_error(msgpack_sbuffer *sb, const char *code, const char *message)
{
	msgpack_packer	pk;
	char		buf[1024];

	/* A message may quote a client's bytes: a str must be UTF-8. */
	utf8_copy(buf, sizeof(buf), message, strlen(message));
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	mpack_kv_str(&pk, "type", "error");
	mpack_kv_str(&pk, "code", code);
	mpack_kv_str(&pk, "message", buf);
}

void
wsmsg_pack_status(msgpack_packer *pk, int exited, int status)
{
	if (exited && WIFEXITED(status))
		mpack_kv_int(pk, "exitCode", WEXITSTATUS(status));
	else
		mpack_kv_nil(pk, "exitCode");
	mpack_kv_str(pk, "signal", exited && WIFSIGNALED(status) ?
	    signame_name(WTERMSIG(status)) : NULL);
}

void
wsmsg_free(struct wsmsg *m)
{
	msgpack_unpacked_destroy(&m->up);
	msgpack_unpacked_init(&m->up);
}
