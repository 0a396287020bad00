/*
 * client.c: attached WebSocket clients and log requests of one session.
 *
 * Each client keeps its own absolute offset into the ring and is sent from
 * there, one frame per writeable callback: first "attached", then a "gap" if
 * it asked for bytes the ring no longer holds, the replay up to the end as
 * it was at attach time, "live", live output, and finally "exit".  A client
 * that falls behind by more than the ring holds gets a "gap" and resumes
 * with half a ring of slack (not at the oldest byte, which fast output would
 * overwrite again at once): it never slows the process or the other clients,
 * unless it attached with pace (pace.c).
 */
#include <sys/types.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "httphead.h"
#include "log.h"
#include "mpack.h"
#include "ring.h"
#include "worker.h"
#include "wsmsg.h"

#define CLIENT_MSGS_MAX		32

struct fixedbuf {
	unsigned char	*p;
	size_t		 len;
	size_t		 cap;
};

static unsigned char	client_wbuf[LWS_PRE + WORKER_CHUNK + 1024];

static int
fixedbuf_write(void *data, const char *buf, size_t len)
{
	struct fixedbuf	*fb = data;

	if (fb->len + len > fb->cap)
		return (-1);
	memcpy(fb->p + fb->len, buf, len);
	fb->len += len;
	return (0);
}

static int
client_ref_matches(const char *ref)
{
	return (strcmp(ref, worker->id) == 0 || (worker->req.name[0] != '\0' &&
	    strcmp(ref, worker->req.name) == 0));
}

/* The {ref} of /v1/sessions/{ref}/<what>, if the path has that shape. */
static int
client_path_ref(const char *path, const char *what, char *ref, size_t reflen)
{
	const char	*p, *slash;
	size_t		 n;

	if (strncmp(path, "/v1/sessions/", 13) != 0)
		return (-1);
	p = path + 13;
	if ((slash = strchr(p, '/')) == NULL || strcmp(slash + 1, what) != 0)
		return (-1);
	n = (size_t)(slash - p);
	if (n == 0 || n >= reflen)
		return (-1);
	memcpy(ref, p, n);
	ref[n] = '\0';
	return (0);
}

void
client_wake(struct client *cl)
{
	lws_callback_on_writable(cl->wsi);
}

/* Queue a small message (an error, a gap) for the client. */
static void
client_queue(struct client *cl, const msgpack_sbuffer *sb)
{
	struct client_msg	*m;

	if (cl->nmsgs >= CLIENT_MSGS_MAX) {
		cl->closing = 2;	/* it does not read: drop it */
		client_wake(cl);
		return;
	}
	if ((m = malloc(sizeof(*m) + sb->size)) == NULL)
		return;
	m->len = sb->size;
	memcpy(m->data, sb->data, sb->size);
	STAILQ_INSERT_TAIL(&cl->msgs, m, entry);
	cl->nmsgs++;
	client_wake(cl);
}

/* An error message for the client (also its wsrx error callback). */
static void
client_error(void *arg, const char *code, const char *message)
{
	struct client	*cl = arg;
	msgpack_sbuffer	 sb;

	msgpack_sbuffer_init(&sb);
	wsmsg_pack_error(&sb, code, message);
	client_queue(cl, &sb);
	msgpack_sbuffer_destroy(&sb);
}

static void
client_gap(struct client *cl, uint64_t from, uint64_t to)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	mpack_kv_str(&pk, "type", "gap");
	mpack_kv_uint(&pk, "from", from);
	mpack_kv_uint(&pk, "to", to);
	client_queue(cl, &sb);
	msgpack_sbuffer_destroy(&sb);
}

static int
client_send(struct client *cl, struct fixedbuf *fb)
{
	int	n;

	n = lws_write(cl->wsi, fb->p, fb->len, LWS_WRITE_BINARY);
	txhold_wrote(&cl->tx);
	return (n < 0 ? -1 : 0);
}

/* Start a frame in the shared write buffer. */
static void
client_frame(struct fixedbuf *fb, msgpack_packer *pk)
{
	fb->p = client_wbuf + LWS_PRE;
	fb->len = 0;
	fb->cap = sizeof(client_wbuf) - LWS_PRE;
	msgpack_packer_init(pk, fb, fixedbuf_write);
}

static int
client_send_attached(struct client *cl)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;
	struct fixedbuf	fb;
	unsigned char	*big = NULL;
	int		rc;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 5);
	mpack_kv_str(&pk, "type", "attached");
	mpack_str(&pk, "session");
	worker_pack_session(&pk);
	mpack_kv_uint(&pk, "replayFrom", cl->off);
	mpack_kv_uint(&pk, "replayTo", cl->replay_to);
	worker_limits_pack(&pk, WORKER_CLIENT_INPUT);
	/* A session object with huge args: a buffer of its own. */
	if (sb.size > sizeof(client_wbuf) - LWS_PRE &&
	    (big = malloc(LWS_PRE + sb.size)) == NULL) {
		msgpack_sbuffer_destroy(&sb);
		return (-1);
	}
	fb.p = (big != NULL ? big : client_wbuf) + LWS_PRE;
	memcpy(fb.p, sb.data, sb.size);
	fb.len = sb.size;
	rc = client_send(cl, &fb);
	free(big);
	msgpack_sbuffer_destroy(&sb);
	return (rc);
}

/* "live", or "exit" with the process's status. */
static int
client_send_mark(struct client *cl, int exited)
{
	struct fixedbuf	fb;
	msgpack_packer	pk;

	client_frame(&fb, &pk);
	msgpack_pack_map(&pk, exited ? 3 : 1);
	mpack_kv_str(&pk, "type", exited ? "exit" : "live");
	if (exited)
		wsmsg_pack_status(&pk, 1, worker->status);
	return (client_send(cl, &fb));
}

static int
client_send_output(struct client *cl, uint64_t limit)
{
	struct fixedbuf	 fb;
	msgpack_packer	 pk;
	const void	*p;
	size_t		 n, max = WORKER_CHUNK;
	int		 tag;

	if (limit - cl->off < max)
		max = (size_t)(limit - cl->off);
	if ((n = ring_peek(worker->ring, cl->off, max, &p, &tag)) == 0)
		return (0);
	client_frame(&fb, &pk);
	msgpack_pack_map(&pk, 3);
	mpack_kv_str(&pk, "type", tag ? "stderr" : "stdout");
	mpack_kv_uint(&pk, "offset", cl->off);
	mpack_str(&pk, "data");
	msgpack_pack_bin(&pk, n);
	msgpack_pack_bin_body(&pk, p, n);
	cl->off += n;
	pace_moved(cl);
	return (client_send(cl, &fb));
}

/*
 * Where a client that fell out of the ring goes on.  The oldest byte held
 * is about to be overwritten again when output is fast, and a client sent
 * there would get gap after gap and almost no data; so it resumes with half
 * the ring of slack, at a safe boundary (not inside a UTF-8 character or an
 * escape sequence).
 */
static uint64_t
client_resume_at(uint64_t start, uint64_t end)
{
	uint64_t	half = ring_capacity(worker->ring) / 2;

	if (end - start <= half)
		return (start);
	return (ring_safe_start(worker->ring, end - half, 256));
}

/* One frame per writeable callback: lws cannot take a second one. */
static int
client_writeable(struct client *cl)
{
	struct client_msg	*m;
	struct fixedbuf		 fb;
	uint64_t		 start = ring_start(worker->ring);
	uint64_t		 end = ring_end(worker->ring);
	int			 rc;

	/*
	 * lws sends our close frame and calls us again while it waits for
	 * the client's: -1 then would reset the socket at once, over what
	 * the client is still sending, and the client would lose the close
	 * (as stream_writeable() says).
	 */
	if (cl->close_queued)
		return (0);
	txhold_writeable(&cl->tx);
	if (cl->closing == 2) {
		lws_close_reason(cl->wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION,
		    (unsigned char *)"client does not read", 20);
		cl->close_queued = 1;
		return (-1);
	}
	if (cl->sent_exit) {
		lws_close_reason(cl->wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
		cl->close_queued = 1;
		return (-1);
	}
	if (!cl->sent_attached) {
		cl->sent_attached = 1;
		rc = client_send_attached(cl);
		client_wake(cl);
		return (rc);
	}
	if ((m = STAILQ_FIRST(&cl->msgs)) != NULL) {
		STAILQ_REMOVE_HEAD(&cl->msgs, entry);
		cl->nmsgs--;
		fb.p = client_wbuf + LWS_PRE;
		memcpy(fb.p, m->data, m->len);
		fb.len = m->len;
		free(m);
		client_wake(cl);
		return (client_send(cl, &fb));
	}
	if (cl->closing == 3) {
		/* Its payload_too_large went first. */
		lws_close_reason(cl->wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
		    (unsigned char *)"message too big", 15);
		cl->close_queued = 1;
		return (-1);
	}
	if (cl->off < start) {
		client_gap(cl, cl->off, client_resume_at(start, end));
		cl->off = client_resume_at(start, end);
		pace_moved(cl);
		return (0);
	}
	if (!cl->sent_live) {
		if (cl->off < cl->replay_to) {
			rc = client_send_output(cl, cl->replay_to);
			client_wake(cl);
			return (rc);
		}
		cl->sent_live = 1;
		client_wake(cl);
		return (client_send_mark(cl, 0));
	}
	if (cl->off < end) {
		rc = client_send_output(cl, end);
		/* New output calls client_output(): no empty wakeup for it. */
		if (cl->off < end || worker->final)
			client_wake(cl);
		return (rc);
	}
	if (worker->final) {
		cl->sent_exit = 1;
		client_wake(cl);
		return (client_send_mark(cl, 1));
	}
	return (0);
}

/*
 * New output for a live client that has nothing else to send and nothing
 * held by lws: sent at once, as a keystroke's echo should be, rather than
 * after one more poll for a writeable callback.  Any other client is
 * woken, and its writeable callback keeps the order of everything else.
 */
void
client_output(struct client *cl)
{
	uint64_t	end = ring_end(worker->ring);

	if (cl->wsi == NULL || !cl->sent_live || cl->sent_exit ||
	    cl->closing || !STAILQ_EMPTY(&cl->msgs) || cl->tx.held ||
	    cl->tx.dead || cl->off < ring_start(worker->ring) ||
	    cl->off >= end || lws_partial_buffered(cl->wsi)) {
		client_wake(cl);
		return;
	}
	if (client_send_output(cl, end) == -1) {
		/* The socket is gone: close it as lws's timeout path does. */
		lws_set_timeout(cl->wsi, PENDING_TIMEOUT_USER_OK,
		    LWS_TO_KILL_ASYNC);
		return;
	}
	if (cl->off < end)
		client_wake(cl);
}

static void
client_attach_size(struct client *cl)
{
	char	why[128];
	pid_t	pg;

	if (!worker->req.pty || worker->final || worker->out == NULL)
		return;
	if (cl->want_size && !cl->readonly &&
	    (cl->cols != worker->cols || cl->rows != worker->rows)) {
		(void)session_resize(cl->cols, cl->rows, why, sizeof(why));
		return;		/* the kernel sends SIGWINCH itself */
	}
	/* Same size: nudge full-screen programs to redraw anyway. */
	if ((pg = tcgetpgrp(worker->out->fd)) > 0)
		(void)kill(-pg, SIGWINCH);
}

static void
client_established(struct lws *wsi, struct http_req *hr)
{
	struct client	*cl = hr->client;
	uint64_t	 start = ring_start(worker->ring);
	uint64_t	 end = ring_end(worker->ring);

	cl->wsi = wsi;
	cl->in.wsi = wsi;
	txhold_init(&cl->tx, wsi);
	cl->replay_to = end;
	cl->off = start;
	if (cl->since_set) {
		if (cl->since > end)
			cl->off = end;
		else if (cl->since >= start)
			cl->off = cl->since;
	}
	LIST_INSERT_HEAD(&worker->clients, cl, entry);
	worker->nclients++;
	if (cl->pace) {
		worker->npaced++;
		cl->moved_at = lws_now_usecs();
	}
	if (cl->since_set && cl->since < start) {
		/* Queued now, sent right after "attached". */
		client_gap(cl, cl->since, start);
	}
	client_attach_size(cl);
	worker_broadcast_update();
	client_wake(cl);
}

static void
client_free(struct client *cl)
{
	struct client_msg	*m;

	txhold_forget(&cl->tx);
	inputq_forget(&worker->inq, &cl->in);
	while ((m = STAILQ_FIRST(&cl->msgs)) != NULL) {
		STAILQ_REMOVE_HEAD(&cl->msgs, entry);
		free(m);
	}
	wsrx_free(&cl->rx);
	free(cl);
}

static void
client_message(void *arg, const unsigned char *buf, size_t len)
{
	struct client	*cl = arg;
	struct wsmsg	 m;
	char		 why[256];
	int		 status;

	if (wsmsg_decode(buf, len, &m, why, sizeof(why)) == -1) {
		client_error(cl, "bad_request", why);
		return;
	}
	if (m.type == WSMSG_START) {
		client_error(cl, "bad_request", "start is for exec streams");
		goto out;
	}
	if (cl->readonly) {
		client_error(cl, "forbidden", "this client is read-only");
		goto out;
	}
	switch (m.type) {
	case WSMSG_STDIN:
		if (worker->final || worker->inq.fd == -1 || worker->inq.eof)
			client_error(cl, "conflict",
			    "the session's input is closed");
		else if (session_input(cl, m.data, m.len) == -1) {
			/* Not delivered whole: the connection fails. */
			client_error(cl, "internal", "out of memory");
			cl->closing = 2;
		}
		break;
	case WSMSG_EOF:
		if (worker->req.pty)
			client_error(cl, "bad_request",
			    "eof is for pipe sessions only");
		else
			session_input_eof();
		break;
	case WSMSG_RESIZE:
		status = session_resize(m.cols, m.rows, why, sizeof(why));
		if (status != 204)
			client_error(cl, status == 400 ? "bad_request" :
			    "conflict", why);
		break;
	case WSMSG_SIGNAL:
		if ((status = session_signal(m.signo, why, sizeof(why))) != 204)
			client_error(cl, "conflict", why);
		break;
	default:
		break;
	}
out:
	wsmsg_free(&m);
}

static const struct wsrx_ops client_rx_ops = {
	client_message, client_error
};

static int
client_receive(struct client *cl, struct lws *wsi, const void *in, size_t len)
{
	int	rc;

	if (cl->closing)
		return (0);
	rc = wsrx_take(&cl->rx, wsi, in, len, worker_limits.msg_max,
	    &client_rx_ops, cl);
	if (rc == WSRX_TOO_BIG)
		cl->closing = 3;	/* what follows is dropped */
	return (rc == WSRX_NOMEM ? -1 : 0);
}

/* The attach or log query, parsed as the front parses it. */
static int
client_query(struct lws *wsi, struct httphead_attach *q, const char **why)
{
	char	 buf[1024], *eq;
	int	 i;

	/* lws has split and percent-decoded the query already. */
	httphead_attach_init(q);
	for (i = 0; lws_hdr_copy_fragment(wsi, buf, sizeof(buf),
	    WSI_TOKEN_HTTP_URI_ARGS, i) >= 0; i++) {
		if ((eq = strchr(buf, '=')) != NULL)
			*eq++ = '\0';
		if (httphead_attach_param(q, buf, eq, why) == -1)
			return (-1);
	}
	return (0);
}

/* Query of an attach: cols, rows, since, readOnly, pace. */
static int
client_filter(struct lws *wsi, struct http_req *hr)
{
	struct client		*cl;
	struct httphead_attach	 q;
	const char		*why;
	char			 uri[1024], ref[128];

	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 ||
	    client_path_ref(uri, "attach", ref, sizeof(ref)) == -1 ||
	    !client_ref_matches(ref))
		return (-1);
	if (worker->nclients >= worker_limits.max_clients ||
	    worker->quitting || client_query(wsi, &q, &why) == -1 ||
	    (cl = calloc(1, sizeof(*cl))) == NULL)
		return (-1);
	STAILQ_INIT(&cl->msgs);
	cl->readonly = q.readonly;
	cl->pace = q.pace;
	cl->since_set = q.since_set;
	cl->since = q.since;
	/* One of the two: keep the other as it is. */
	cl->want_size = q.cols > 0 || q.rows > 0;
	cl->cols = q.cols > 0 ? q.cols : worker->cols;
	cl->rows = q.rows > 0 ? q.rows : worker->rows;
	hr->is_ws = 1;
	hr->client = cl;
	return (0);
}

static int
client_http_reply(struct lws *wsi, struct http_req *hr, int status,
    const char *ctype, uint64_t lstart, uint64_t lend)
{
	const char	*names[2] = { "lodge-log-start:", "lodge-log-end:" };
	uint64_t	 values[2] = { lstart, lend };
	unsigned char	 hdr[LWS_PRE + 1024], *p = hdr + LWS_PRE;
	unsigned char	*e = hdr + sizeof(hdr) - 1;
	char		 v[32];
	int		 i;

	if (lws_add_http_common_headers(wsi, status, ctype, hr->len, &p, e))
		return (-1);
	for (i = 0; status == 200 && i < 2; i++) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)values[i]);
		if (lws_add_http_header_by_name(wsi,
		    (const unsigned char *)names[i], (unsigned char *)v,
		    (int)strlen(v), &p, e))
			return (-1);
	}
	if (lws_add_http_header_by_name(wsi,
	    (const unsigned char *)"connection:",
	    (unsigned char *)"close", 5, &p, e))
		return (-1);
	if (lws_finalize_write_http_header(wsi, hdr + LWS_PRE, &p, e))
		return (-1);
	txhold_wrote(&hr->tx);
	lws_callback_on_writable(wsi);
	return (0);
}

static int
client_http_error(struct lws *wsi, struct http_req *hr, int status,
    const char *code, const char *message)
{
	char	*body;
	int	 n;

	if ((n = asprintf(&body, "{\"error\":{\"code\":\"%s\","
	    "\"message\":\"%s\"}}", code, message)) == -1)
		return (-1);
	hr->body = (unsigned char *)body;
	hr->len = n;
	return (client_http_reply(wsi, hr, status, "application/json", 0, 0));
}

/* GET /v1/sessions/{ref}/log[?since=N]: a snapshot of the ring. */
static int
client_http(struct lws *wsi, struct http_req *hr, const char *path)
{
	struct httphead_attach	 q;
	const char		*why;
	char			 ref[128];
	uint64_t		 start = ring_start(worker->ring);
	uint64_t		 stop = ring_end(worker->ring), since = start;

	if (client_path_ref(path, "log", ref, sizeof(ref)) == -1)
		return (client_http_error(wsi, hr, 404, "not_found",
		    "no such path on this socket"));
	if (!client_ref_matches(ref))
		return (client_http_error(wsi, hr, 404, "not_found",
		    "no such session on this socket"));
	if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) <= 0)
		return (client_http_error(wsi, hr, 405, "method_not_allowed",
		    "use GET"));
	if (client_query(wsi, &q, &why) == -1)
		return (client_http_error(wsi, hr, 400, "bad_request", why));
	if (q.since_set)
		since = q.since;
	if (since < start)
		since = start;
	if (since > stop)
		since = stop;
	hr->len = (size_t)(stop - since);
	if (hr->len > 0) {
		if ((hr->body = malloc(hr->len)) == NULL)
			return (client_http_error(wsi, hr, 503, "unavailable",
			    "out of memory"));
		ring_copy(worker->ring, since, hr->body, hr->len);
	}
	return (client_http_reply(wsi, hr, 200, "application/octet-stream",
	    since, stop));
}

static int
client_http_writeable(struct lws *wsi, struct http_req *hr)
{
	size_t	n = hr->len - hr->sent;
	int	final;

	txhold_writeable(&hr->tx);
	if (n > WORKER_CHUNK)
		n = WORKER_CHUNK;
	final = hr->sent + n == hr->len;
	if (n > 0) {
		memcpy(client_wbuf + LWS_PRE, hr->body + hr->sent, n);
		if (lws_write(wsi, client_wbuf + LWS_PRE, n, final ?
		    LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < 0)
			return (-1);
		txhold_wrote(&hr->tx);
		hr->sent += n;
	}
	if (!final) {
		lws_callback_on_writable(wsi);
		return (0);
	}
	/* Close: other API calls on this connection belong to the front. */
	return (-1);
}

int
client_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct http_req	*hr = user;
	struct client	*cl = hr != NULL ? hr->client : NULL;

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		txhold_init(&hr->tx, wsi);
		return (client_http(wsi, hr, in));
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return (client_http_writeable(wsi, hr));
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
	case LWS_CALLBACK_CLOSED_HTTP:
		if (hr != NULL && !hr->is_ws) {
			txhold_forget(&hr->tx);
			free(hr->body);
			hr->body = NULL;
		}
		return (0);
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		return (client_filter(wsi, hr) == -1 ? 1 : 0);
	case LWS_CALLBACK_ESTABLISHED:
		if (cl == NULL)
			return (-1);
		client_established(wsi, hr);
		return (0);
	case LWS_CALLBACK_SERVER_WRITEABLE:
		if (cl == NULL)
			return (-1);
		return (client_writeable(cl));
	case LWS_CALLBACK_RECEIVE:
		if (cl == NULL)
			return (-1);
		return (client_receive(cl, wsi, in, len));
	case LWS_CALLBACK_CLOSED:
		if (cl == NULL)
			return (0);
		if (cl->wsi != NULL) {
			LIST_REMOVE(cl, entry);
			worker->nclients--;
			if (cl->pace)
				worker->npaced--;
			pace_check();
			worker_broadcast_update();
		}
		client_free(cl);
		hr->client = NULL;
		return (0);
	case LWS_CALLBACK_WSI_DESTROY:
		if (hr != NULL)
			txhold_forget(&hr->tx);
		if (cl != NULL && cl->wsi == NULL) {
			/* Filtered but never established. */
			client_free(cl);
			hr->client = NULL;
		}
		return (0);
	default:
		return (0);
	}
}
