/*
 * control.c: the front's requests to a session worker.
 *
 * Each request carries an id that its reply repeats.  "adopt" carries the
 * descriptor of a client connection and its request head, which the front
 * took out of the socket and wrote again without the token; the worker
 * serves that connection from then on, and says "adopted" at once, so that
 * the front can bound what it has passed and not seen taken (the hello
 * reply says the worker does so).  A malformed frame drops the control
 * connection, never the session.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rawio.h"
#include "mpack.h"
#include "signame.h"
#include "worker.h"

static void
control_send_msg(struct worker_fd *wf, struct proto_out *m)
{
	proto_finish(m);
	control_send(wf, &m->sb);
	proto_free(m);
}

void
control_send_reply(struct worker_fd *wf, int64_t id, int status,
    const char *code, const char *message, int with_session)
{
	struct proto_out	 m;
	msgpack_packer		*pk = proto_begin(&m, PROTO_REPLY);

	mpack_kv_int(pk, "id", id);
	mpack_kv_int(pk, "status", status);
	if (code != NULL) {
		mpack_kv_str(pk, "code", code);
		mpack_kv_str(pk, "message", message);
	}
	if (with_session) {
		mpack_str(pk, "session");
		worker_pack_session(pk);
	}
	control_send_msg(wf, &m);
}

void
control_send(struct worker_fd *wf, const msgpack_sbuffer *sb)
{
	if (ctl_send(&wf->ctl, sb, -1) == -1)
		lws_set_timeout(wf->wsi, 1, LWS_TO_KILL_ASYNC);
	else if (ctl_pending(&wf->ctl))
		rawio_writable(wf->wsi);
}

/* The reply to hello: the session, and what this worker does. */
static void
control_hello(void *arg, const msgpack_object *o, int *fds)
{
	struct proto_out	 m;
	msgpack_packer		*pk = proto_begin(&m, PROTO_REPLY);
	int64_t			 id = 0;

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	mpack_kv_int(pk, "id", id);
	mpack_kv_int(pk, "status", 200);
	mpack_kv_int(pk, "proto", PROTO_VERSION);
	mpack_kv_bool(pk, "adoptAcks", 1);
	mpack_str(pk, "session");
	worker_pack_session(pk);
	control_send_msg(arg, &m);
}

/* The session ended without a front's delete (--exited-ttl): say so. */
void
control_broadcast_gone(void)
{
	struct worker_fd	*wf, *next;
	struct proto_out	 m;

	for (wf = LIST_FIRST(&worker->controls); wf != NULL; wf = next) {
		next = LIST_NEXT(wf, entry);
		proto_begin(&m, PROTO_GONE);
		control_send_msg(wf, &m);
	}
}

static const char *
control_code(int status)
{
	switch (status) {
	case 400:
		return ("bad_request");
	case 404:
		return ("not_found");
	case 409:
		return ("conflict");
	case 503:
		return ("unavailable");
	default:
		return ("internal");
	}
}

/*
 * Serve a connection the front handed over: lws reads the head from the
 * frame (o's "head"), then the rest from the socket.  NULL when lws
 * refused it, and then closed it.
 */
struct lws *
control_adopt_http(struct lws_vhost *vh, int fd, const msgpack_object *o)
{
	const char	*head;
	size_t		 len;
	int		 one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (mpack_get_bin(o, "head", &head, &len) != 1 || len == 0) {
		close(fd);
		return (NULL);
	}
	return (lws_adopt_socket_vhost_readbuf(vh, fd, head, len));
}

/* A connection handed over: served from now on, and said so at once. */
static void
control_adopt(void *arg, const msgpack_object *o, int *fds)
{
	struct proto_out	m;

	if (control_adopt_http(worker->vh, fds[0], o) == NULL)
		log_warnx("session %s: cannot adopt a connection", worker->id);
	proto_begin(&m, PROTO_ADOPTED);
	control_send_msg(arg, &m);
}

static int64_t
control_id(const msgpack_object *o)
{
	int64_t	id = 0;

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	return (id);
}

/* A status of session.c as the reply, with its code and why. */
static void
control_status(struct worker_fd *wf, const msgpack_object *o, int status,
    const char *why)
{
	control_send_reply(wf, control_id(o), status, status == 204 ? NULL :
	    control_code(status), why, 0);
}

static void
control_info(void *arg, const msgpack_object *o, int *fds)
{
	control_send_reply(arg, control_id(o), 200, NULL, NULL, 1);
}

static void
control_signal(void *arg, const msgpack_object *o, int *fds)
{
	char	why[256];
	int	signo;

	if ((signo = signame_from_object(mpack_get(o, "signal"))) == -1)
		control_status(arg, o, 400, "unknown signal");
	else
		control_status(arg, o, session_signal(signo, why, sizeof(why)),
		    why);
}

static void
control_input(void *arg, const msgpack_object *o, int *fds)
{
	const char	*data;
	size_t		 len;

	if (mpack_get_bin(o, "data", &data, &len) != 1)
		control_status(arg, o, 400, "input needs data");
	else if (worker->inq.fd == -1 || worker->final || worker->inq.eof)
		control_status(arg, o, 409, "the session's input is closed");
	else if (session_input(NULL, data, len) == -1)
		control_status(arg, o, 503,
		    "the session's input queue is full");
	else
		control_status(arg, o, 204, NULL);
}

static void
control_resize(void *arg, const msgpack_object *o, int *fds)
{
	char	why[256];
	int64_t	cols, rows;

	if (mpack_get_int(o, "cols", 1, SPAWNREQ_SIZE_MAX, &cols) != 1 ||
	    mpack_get_int(o, "rows", 1, SPAWNREQ_SIZE_MAX, &rows) != 1)
		control_status(arg, o, 400, "resize needs cols and rows");
	else
		control_status(arg, o, session_resize((int)cols, (int)rows,
		    why, sizeof(why)), why);
}

static void
control_delete(void *arg, const msgpack_object *o, int *fds)
{
	session_delete(arg, control_id(o));
}

/* What a session worker takes from the front: the allow-list. */
static const struct proto_handler worker_dispatch_front[] = {
	{ PROTO_HELLO, control_hello },
	{ PROTO_INFO, control_info },
	{ PROTO_SIGNAL, control_signal },
	{ PROTO_INPUT, control_input },
	{ PROTO_RESIZE, control_resize },
	{ PROTO_DELETE, control_delete },
	{ PROTO_ADOPT, control_adopt },
};

void
control_read(struct worker_fd *wf)
{
	msgpack_unpacked	up;
	int			r, fd;

	if ((r = ctl_read(&wf->ctl)) == 0 || r == -1) {
		lws_set_timeout(wf->wsi, 1, LWS_TO_KILL_ASYNC);
		return;
	}
	msgpack_unpacked_init(&up);
	while ((r = ctl_next(&wf->ctl, &up, &fd)) == 1)
		if (proto_dispatch(PROTO_FRONT_SESSION, worker_dispatch_front,
		    PROTO_NHANDLERS(worker_dispatch_front), "the front", wf,
		    &up.data, &fd, fd == -1 ? 0 : 1) == -1)
			control_status(wf, &up.data, 400,
			    "unknown control message");
	msgpack_unpacked_destroy(&up);
	if (r == -1) {
		log_warnx("session %s: bad control frame", worker->id);
		lws_set_timeout(wf->wsi, 1, LWS_TO_KILL_ASYNC);
	}
}

void
control_closed(struct worker_fd *wf)
{
	int	i;

	for (i = 0; i < worker->ndelete; i++)
		if (worker->delete_ctl[i] == wf)
			worker->delete_ctl[i] = NULL;
}
