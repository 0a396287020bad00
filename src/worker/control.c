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

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rawio.h"
#include "mpack.h"
#include "signame.h"
#include "worker.h"

static void	control_send(struct worker_fd *, msgpack_sbuffer *);

void
control_send_reply(struct worker_fd *wf, int64_t id, int status,
    const char *code, const char *message, int with_session)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3 + (code != NULL ? 2 : 0) +
	    (with_session ? 1 : 0));
	mpack_kv_str(&pk, "type", "reply");
	mpack_kv_int(&pk, "id", id);
	mpack_kv_int(&pk, "status", status);
	if (code != NULL) {
		mpack_kv_str(&pk, "code", code);
		mpack_kv_str(&pk, "message", message);
	}
	if (with_session) {
		mpack_str(&pk, "session");
		worker_pack_session(&pk);
	}
	control_send(wf, &sb);
	msgpack_sbuffer_destroy(&sb);
}

static void
control_send(struct worker_fd *wf, msgpack_sbuffer *sb)
{
	if (ctl_send(&wf->ctl, sb, -1) == -1)
		lws_set_timeout(wf->wsi, 1, LWS_TO_KILL_ASYNC);
	else if (ctl_pending(&wf->ctl))
		rawio_writable(wf->wsi);
}

/* The reply to hello: the session, and what this worker does. */
static void
control_send_hello(struct worker_fd *wf, int64_t id)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 6);
	mpack_kv_str(&pk, "type", "reply");
	mpack_kv_int(&pk, "id", id);
	mpack_kv_int(&pk, "status", 200);
	mpack_kv_int(&pk, "proto", CTL_PROTO_VERSION);
	mpack_kv_bool(&pk, "adoptAcks", 1);
	mpack_str(&pk, "session");
	worker_pack_session(&pk);
	control_send(wf, &sb);
	msgpack_sbuffer_destroy(&sb);
}

static void
control_send_type(struct worker_fd *wf, const char *type)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	mpack_kv_str(&pk, "type", type);
	control_send(wf, &sb);
	msgpack_sbuffer_destroy(&sb);
}

/* The session ended without a front's delete (--exited-ttl): say so. */
void
control_broadcast_gone(void)
{
	struct worker_fd	*wf, *next;

	for (wf = LIST_FIRST(&worker->controls); wf != NULL; wf = next) {
		next = LIST_NEXT(wf, entry);
		control_send_type(wf, "gone");
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

static void
control_dispatch(struct worker_fd *wf, const msgpack_object *o, int fd)
{
	const msgpack_object	*type = mpack_get(o, "type");
	const char		*data;
	size_t			 len;
	char			 why[256];
	int64_t			 id = 0, cols, rows;
	int			 status, signo;

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	if (mpack_streq(type, "adopt")) {
		if (fd != -1 && control_adopt_http(worker->vh, fd, o) == NULL)
			log_warnx("session %s: cannot adopt a connection",
			    worker->id);
		control_send_type(wf, "adopted");
		return;
	}
	if (fd != -1)
		close(fd);
	if (mpack_streq(type, "hello")) {
		control_send_hello(wf, id);
	} else if (mpack_streq(type, "info")) {
		control_send_reply(wf, id, 200, NULL, NULL, 1);
	} else if (mpack_streq(type, "signal")) {
		if ((signo = signame_from_object(mpack_get(o, "signal"))) ==
		    -1) {
			control_send_reply(wf, id, 400, "bad_request",
			    "unknown signal", 0);
			return;
		}
		status = session_signal(signo, why, sizeof(why));
		control_send_reply(wf, id, status, status == 204 ? NULL :
		    control_code(status), why, 0);
	} else if (mpack_streq(type, "input")) {
		if (mpack_get_bin(o, "data", &data, &len) != 1) {
			control_send_reply(wf, id, 400, "bad_request",
			    "input needs data", 0);
			return;
		}
		if (worker->inq.fd == -1 || worker->final || worker->inq.eof) {
			control_send_reply(wf, id, 409, "conflict",
			    "the session's input is closed", 0);
			return;
		}
		if (session_input(data, len) == -1)
			control_send_reply(wf, id, 503, "unavailable",
			    "the session's input queue is full", 0);
		else
			control_send_reply(wf, id, 204, NULL, NULL, 0);
	} else if (mpack_streq(type, "resize")) {
		if (mpack_get_int(o, "cols", 1, SPAWNREQ_SIZE_MAX, &cols) !=
		    1 || mpack_get_int(o, "rows", 1, SPAWNREQ_SIZE_MAX,
		    &rows) != 1) {
			control_send_reply(wf, id, 400, "bad_request",
			    "resize needs cols and rows", 0);
			return;
		}
		status = session_resize((int)cols, (int)rows, why,
		    sizeof(why));
		control_send_reply(wf, id, status, status == 204 ? NULL :
		    control_code(status), why, 0);
	} else if (mpack_streq(type, "delete")) {
		session_delete(wf, id);
	} else {
		control_send_reply(wf, id, 400, "bad_request",
		    "unknown control message", 0);
	}
}

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
		control_dispatch(wf, &up.data, fd);
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
