/*
 * proto.c: the control messages' table, packing and dispatch (see proto.h).
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "mpack.h"
#include "proto.h"

#define FT	PROTO_FRONT_TEMPLATE
#define TF	PROTO_TEMPLATE_FRONT
#define TW	PROTO_TEMPLATE_WAITING
#define FS	PROTO_FRONT_SESSION
#define SF	PROTO_SESSION_FRONT

const struct proto_msg proto_msgs[PROTO_NTYPES] = {
	[PROTO_SPAWN] =		{ "spawn", FT | TW, 1 },
	[PROTO_STREAM] =	{ "stream", FT | TW, 1 },
	[PROTO_EXEC] =		{ "exec", FT, 0 },
	[PROTO_KILL] =		{ "kill", FT, 0 },
	[PROTO_SPAWNED] =	{ "spawned", TF, 0 },
	[PROTO_OUTPUT] =	{ "output", TF, 0 },
	[PROTO_EXITED] =	{ "exited", TF, 0 },
	[PROTO_HELLO] =		{ "hello", FS, 0 },
	[PROTO_INFO] =		{ "info", FS, 0 },
	[PROTO_SIGNAL] =	{ "signal", FS, 0 },
	[PROTO_INPUT] =		{ "input", FS, 0 },
	[PROTO_RESIZE] =	{ "resize", FS, 0 },
	[PROTO_DELETE] =	{ "delete", FS, 0 },
	[PROTO_ADOPT] =		{ "adopt", FS, 1 },
	[PROTO_REPLY] =		{ "reply", SF, 0 },
	[PROTO_CREATED] =	{ "created", SF, 0 },
	[PROTO_UPDATE] =	{ "update", SF, 0 },
	[PROTO_GONE] =		{ "gone", SF, 0 },
	[PROTO_ADOPTED] =	{ "adopted", SF, 0 },
};

/* The head of a map32, its size written when the entries are packed. */
#define PROTO_HEAD	5

msgpack_packer *
proto_begin(struct proto_out *m, enum proto_type type)
{
	static const char	head[PROTO_HEAD] = { (char)0xdf };

	m->type = type;
	msgpack_sbuffer_init(&m->sb);
	msgpack_packer_init(&m->pk, &m->sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&m->sb, head, sizeof(head));
	mpack_kv_str(&m->pk, "type", proto_msgs[type].name);
	if (proto_msgs[type].nfds > 0)
		mpack_kv_bool(&m->pk, "fd", 1);
	return (&m->pk);
}

void
proto_finish(struct proto_out *m)
{
	int64_t		n;
	unsigned char	*p = (unsigned char *)m->sb.data;

	n = mpack_count(p + PROTO_HEAD, m->sb.size - PROTO_HEAD);
	if (n < 0 || n % 2 != 0 || n / 2 > UINT32_MAX)
		fatalx("%s: packed %lld objects", proto_msgs[m->type].name,
		    (long long)n);
	n /= 2;
	p[1] = (unsigned char)(n >> 24);
	p[2] = (unsigned char)(n >> 16);
	p[3] = (unsigned char)(n >> 8);
	p[4] = (unsigned char)n;
}

void
proto_free(struct proto_out *m)
{
	msgpack_sbuffer_destroy(&m->sb);
}

int
proto_send(struct ctl *c, struct proto_out *m, int fd)
{
	int	r;

	proto_finish(m);
	r = ctl_send(c, &m->sb, fd);
	proto_free(m);
	return (r);
}

int
proto_type(const msgpack_object *o)
{
	const msgpack_object	*v = mpack_get(o, "type");
	int			 t;

	for (t = 0; t < PROTO_NTYPES; t++)
		if (mpack_streq(v, proto_msgs[t].name))
			return (t);
	return (-1);
}

int
proto_dispatch(int channel, const struct proto_handler *table, size_t n,
    const char *who, void *arg, const msgpack_object *o, int *fds, int nfds)
{
	const char	*why = "a message of no known type";
	size_t		 i;
	int		 t;

	if ((t = proto_type(o)) != -1) {
		why = "a message it may not send";
		for (i = 0; i < n; i++)
			if (table[i].type == (enum proto_type)t)
				break;
		if ((proto_msgs[t].channels & channel) == 0)
			i = n;	/* the channel's rule before any table */
		if (i < n && nfds != proto_msgs[t].nfds)
			why = "a message with the wrong descriptors";
		else if (i < n) {
			table[i].fn(arg, o, fds);
			return (0);
		}
	}
	log_warnx("protocol error: %s sent %s%s%s", who, why,
	    t == -1 ? "" : ": ", t == -1 ? "" : proto_msgs[t].name);
	for (i = 0; i < (size_t)nfds; i++)
		close(fds[i]);
	return (-1);
}
