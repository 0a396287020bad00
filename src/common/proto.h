/*
 * proto.h: every control message between lodge's processes, in one table.
 *
 * A message is a msgpack map whose "type" names it (ctl.h frames it).
 * The table says which channel may carry it and how many descriptors
 * (SCM_RIGHTS) it holds; a message that carries one says "fd":true.
 * Each process dispatches what a peer sends from a table of handlers of
 * its own, <self>_dispatch_<peer>; proto_dispatch() refuses, and logs,
 * a message that the channel does not carry or the table does not hold,
 * so neither is acted on.  A field a handler does not know is ignored:
 * that is how a newer peer's additions stay harmless.
 */
#ifndef PROTO_H
#define PROTO_H

#include <msgpack.h>

#include "ctl.h"

/*
 * The version of the control messages, in "proto" of hello and of its
 * reply.  Workers outlive the front across upgrades: a front serves a
 * worker of any version from 0 to its own, and refuses a newer one
 * (lodged(8), "Restarts").  0, no "proto": a worker of a build from
 * before versions, which takes a handed-off connection with its request
 * head still unread in the socket.  1: the head travels in the frame,
 * without the token ("head"), and hand-offs are acknowledged.
 */
#define PROTO_VERSION	1

/* The channels, one bit each: sender_receiver. */
#define PROTO_FRONT_TEMPLATE	0x01
#define PROTO_TEMPLATE_FRONT	0x02
#define PROTO_TEMPLATE_WAITING	0x04
#define PROTO_FRONT_SESSION	0x08
#define PROTO_SESSION_FRONT	0x10

enum proto_type {
	PROTO_SPAWN,		/* front, then template: start a session */
	PROTO_STREAM,		/* front, then template: an exec stream */
	PROTO_EXEC,		/* front to template: POST /v1/exec */
	PROTO_KILL,		/* front to template: signal an exec call */
	PROTO_SPAWNED,		/* template: an exec call's command started */
	PROTO_OUTPUT,		/* template: an exec call's output */
	PROTO_EXITED,		/* template: an exec call ended */
	PROTO_HELLO,		/* front to worker: who are you */
	PROTO_INFO,
	PROTO_SIGNAL,
	PROTO_INPUT,
	PROTO_RESIZE,
	PROTO_DELETE,
	PROTO_ADOPT,		/* a connection handed over, with its head */
	PROTO_REPLY,		/* worker: the answer to the request "id" */
	PROTO_CREATED,		/* worker: the answer to spawn */
	PROTO_UPDATE,		/* worker: the session changed */
	PROTO_GONE,		/* worker: the session ended by itself */
	PROTO_ADOPTED,		/* worker: a handed-over connection taken */
	PROTO_NTYPES
};

struct proto_msg {
	const char	*name;
	int		 channels;	/* PROTO_* bits that carry it */
	int		 nfds;		/* descriptors it holds */
};

extern const struct proto_msg proto_msgs[PROTO_NTYPES];

/* A message being packed: the map's size is counted when it is sent. */
struct proto_out {
	enum proto_type	 type;
	msgpack_sbuffer	 sb;
	msgpack_packer	 pk;
};

/* Start a message of type: "type" and, if it carries one, "fd":true. */
msgpack_packer	*proto_begin(struct proto_out *, enum proto_type);
/* Count the map's entries into its head; the bytes are then in sb. */
void		 proto_finish(struct proto_out *);
void		 proto_free(struct proto_out *);
/* Finish, queue with fd (or -1; as ctl_send) and free: ctl_send's result. */
int		 proto_send(struct ctl *, struct proto_out *, int fd);

/* The type of message o, or -1 if it names none. */
int		 proto_type(const msgpack_object *o);

struct proto_handler {
	enum proto_type	 type;
	/* arg as given to proto_dispatch; fds (nfds of the type) its own */
	void		(*fn)(void *arg, const msgpack_object *, int *fds);
};

/*
 * Hand o, which came on channel with nfds descriptors, to its handler in
 * table: 0 when one took it (and the descriptors), -1 when the channel
 * does not carry it, the table has no handler or the descriptors are not
 * the type's; that is logged, naming who sent it, and fds are closed.
 */
int	proto_dispatch(int channel, const struct proto_handler *, size_t,
	    const char *who, void *arg, const msgpack_object *o, int *fds,
	    int nfds);

#define PROTO_NHANDLERS(t)	(sizeof(t) / sizeof((t)[0]))

#endif
