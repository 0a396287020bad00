/*
 * wsmsg.c: client WebSocket message decoding (see wsmsg.h).
 */
#include <stdio.h>
#include <string.h>

#include "mpack.h"
#include "signame.h"
#include "spawnreq.h"
#include "wsmsg.h"

static const struct {
	const char	*name;
	enum wsmsg_type	 type;
} wsmsg_types[] = {
	{ "start", WSMSG_START },
	{ "stdin", WSMSG_STDIN },
	{ "eof", WSMSG_EOF },
	{ "resize", WSMSG_RESIZE },
	{ "signal", WSMSG_SIGNAL },
};

static int
wsmsg_fields(struct wsmsg *m, char *why, size_t whylen)
{
	const msgpack_object	*o = &m->up.data, *type, *v;
	int64_t			 cols, rows;
	size_t			 i;

	if (o->type != MSGPACK_OBJECT_MAP ||
	    (type = mpack_get(o, "type")) == NULL ||
	    type->type != MSGPACK_OBJECT_STR) {
		snprintf(why, whylen, "a message is a map with a string 'type'");
		return (-1);
	}
	for (i = 0; i < sizeof(wsmsg_types) / sizeof(wsmsg_types[0]); i++)
		if (mpack_streq(type, wsmsg_types[i].name))
			break;
	if (i == sizeof(wsmsg_types) / sizeof(wsmsg_types[0])) {
		snprintf(why, whylen, "unknown message type '%.*s'",
		    type->via.str.size > 32 ? 32 : (int)type->via.str.size,
		    type->via.str.size > 0 ? type->via.str.ptr : "");
		return (-1);
	}
	m->type = wsmsg_types[i].type;
	switch (m->type) {
	case WSMSG_STDIN:
		/* bin as the protocol says; str accepted from lax clients. */
		v = mpack_get(o, "data");
		if (v != NULL && v->type == MSGPACK_OBJECT_BIN) {
			m->data = v->via.bin.ptr;
			m->len = v->via.bin.size;
		} else if (v != NULL && v->type == MSGPACK_OBJECT_STR) {
			m->data = v->via.str.ptr;
			m->len = v->via.str.size;
		} else {
			snprintf(why, whylen, "stdin needs 'data' (bin)");
			return (-1);
		}
		return (0);
	case WSMSG_RESIZE:
		if (mpack_get_int(o, "cols", 1, SPAWNREQ_SIZE_MAX, &cols) != 1 ||
		    mpack_get_int(o, "rows", 1, SPAWNREQ_SIZE_MAX, &rows) != 1) {
			snprintf(why, whylen, "resize needs 'cols' and 'rows' "
			    "from 1 to %d", SPAWNREQ_SIZE_MAX);
			return (-1);
		}
		m->cols = (int)cols;
		m->rows = (int)rows;
		return (0);
	case WSMSG_SIGNAL:
		if ((m->signo = signame_from_object(mpack_get(o, "signal"))) ==
		    -1) {
			snprintf(why, whylen, "'signal' must be a name such as "
			    "\"INT\" or a number from 1 to 64");
			return (-1);
		}
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

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	mpack_kv_str(&pk, "type", "error");
	mpack_kv_str(&pk, "code", code);
	mpack_kv_str(&pk, "message", message);
}

void
wsmsg_free(struct wsmsg *m)
{
	msgpack_unpacked_destroy(&m->up);
	msgpack_unpacked_init(&m->up);
}
