/*
 * conn.c: one client connection to the front, HTTP/1.1 with keep-alive.
 *
 * conn.c reads and writes the bytes; api.c decides.  The request head is
 * only peeked at (MSG_PEEK) until it is complete; api_head() then says
 * what the request gets (struct reply): an answer, its Content-Length
 * body read first and api_request() asked, or the connection handed to a
 * worker, its head consumed and sent along without the token.  An answer
 * that a worker or the template completes later comes through
 * conn_reply(), the one way in.  One request at a time: reading stops
 * while a reply is pending.  Every failure answers with the JSON error of
 * the protocol and, where the stream can no longer be trusted, closes.
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "metrics.h"
#include "log.h"
#include "rawio.h"
#include "mpack.h"

#define CONN_PEEK_RETRY_MS	5
/*
 * After a reply that closes, what the peer still sends is read and dropped
 * for a while: closing with unread bytes would reset the connection, and
 * the peer could lose the reply.  Bounded in time and bytes, never kept.
 */
#define CONN_LINGER_SEC		2
#define CONN_LINGER_MAX		(16 * 1024 * 1024)
#define CONN_LINGER_READS	4
#define CONN_ROOT_RESERVE	16
#define CONN_CHUNK		65536	/* a piece of a streamed reply */
#define CONN_HEAD_MAX		2048	/* a reply's status line and fields */

static void	conn_fail(struct conn *, int status, const char *code,
		    const char *why);

static const char *
conn_reason(int status)
{
	switch (status) {
	case 200: return ("OK");
	case 201: return ("Created");
	case 204: return ("No Content");
	case 302: return ("Found");
	case 304: return ("Not Modified");
	case 400: return ("Bad Request");
	case 401: return ("Unauthorized");
	case 403: return ("Forbidden");
	case 404: return ("Not Found");
	case 405: return ("Method Not Allowed");
	case 408: return ("Request Timeout");
	case 409: return ("Conflict");
	case 411: return ("Length Required");
	case 413: return ("Content Too Large");
	case 415: return ("Unsupported Media Type");
	case 422: return ("Unprocessable Content");
	case 431: return ("Request Header Fields Too Large");
	case 503: return ("Service Unavailable");
	case 505: return ("HTTP Version Not Supported");
	default: return ("Internal Server Error");
	}
}

static int	conn_count;

/*
 * A connection over the limits is answered at once and closed: the reply
 * is sent without waiting (it fits an empty socket buffer) and what the
 * peer sent already is dropped, so that the close does not reset it.
 */
static void
conn_refuse(int fd, const char *fmt, int limit)
{
	char	msg[256], body[384], buf[512], sink[4096];
	int	n;

	(void)snprintf(msg, sizeof(msg), fmt, limit);
	(void)snprintf(body, sizeof(body), "{\"error\":{\"code\":"
	    "\"unavailable\",\"message\":\"%s\"}}", msg);
	n = snprintf(buf, sizeof(buf), "HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Length: %zu\r\nContent-Type: application/json\r\n"
	    "Connection: close\r\n\r\n%s", strlen(body), body);
	(void)recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
	(void)send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)shutdown(fd, SHUT_WR);
	(void)recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
}

/*
 * Admit a connection within --max-connections and, for one peer,
 * --max-peer-connections.  Root on a Unix socket is not held to the
 * peer's share and has CONN_ROOT_RESERVE slots past the limit, so that
 * the operator gets in when everyone else has filled the front.
 */
static int
conn_admit(int fd, struct listener *l, struct peer_key *k)
{
	int	root;

	if (peer_key_of(fd, l->is_unix, k) == -1)
		return (-1);
	root = k->is_unix && k->uid == 0;
	if (conn_count >= front->conf.max_conns +
	    (root ? CONN_ROOT_RESERVE : 0)) {
		metrics_limit(L_MAX_CONNECTIONS);
		conn_refuse(fd, "too many connections (--max-connections %d)",
		    front->conf.max_conns);
		return (-1);
	}
	if (!root && peer_count(k) >= front->conf.max_peer_conns) {
		metrics_limit(L_MAX_PEER_CONNECTIONS);
		conn_refuse(fd, "too many connections from one peer "
		    "(--max-peer-connections %d)", front->conf.max_peer_conns);
		return (-1);
	}
	return (0);
}

static void
conn_close(struct conn *c)
{
	if (c->closed)
		return;
	c->closed = 1;
	lws_set_timeout(c->wsi, 1, LWS_TO_KILL_ASYNC);
}

/* A streamed reply is over, sent or not: its source goes. */
static void
conn_source_done(struct conn *c)
{
	if (c->src.free != NULL)
		c->src.free(c->src.arg);
	memset(&c->src, 0, sizeof(c->src));
	c->src_left = 0;
	c->src_at = NULL;
}

void
conn_closed(struct conn *c)
{
	registry_cancel(c);
	if (c->exec != NULL)
		exec_conn_closed(c->exec);
	lws_sul_cancel(&c->sul);
	conn_source_done(c);
	peer_release(c->peer);
	conn_count--;
	free(c->buf);
	free(c->body);
	free(c->out);
	free(c);
}

static void
conn_timeout_cb(lws_sorted_usec_list_t *sul)
{
	struct conn	*c = lws_container_of(sul, struct conn, sul);

	if (c->state == CONN_HEAD && c->buflen > 0)
		conn_fail(c, 408, "request_timeout",
		    "the request head did not arrive in time");
	else if (c->state == CONN_BODY)
		conn_fail(c, 408, "request_timeout",
		    "the request body did not arrive in time");
	else if (c->state == CONN_WRITE) {
		metrics_limit(L_WRITE_TIMEOUT);
		log_info("a reply of %zu bytes was not read in %d s "
		    "(--write-timeout): closed", c->out_len - c->out_off,
		    front->conf.write_timeout);
		conn_close(c);
	} else if (c->state == CONN_HEAD || c->state == CONN_LINGER)
		conn_close(c);
}

static void
conn_arm_timeout(struct conn *c, int seconds)
{
	lws_sul_schedule(front->ctx, 0, &c->sul, conn_timeout_cb,
	    (lws_usec_t)seconds * LWS_US_PER_SEC);
}

struct conn *
conn_new(int fd, struct listener *l)
{
	struct conn	*c;
	struct peer_key	 k;
	struct ucred	 cred;
	socklen_t	 len = sizeof(cred);

	if (conn_admit(fd, l, &k) == -1)
		return (NULL);
	metrics_count(M_CONNECTIONS);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return (NULL);
	c->ffd.kind = FFD_CONN;
	c->ffd.ptr = c;
	c->fd = fd;
	c->l = l;
	c->peer_uid = k.is_unix ? (uid_t)k.uid : (uid_t)-1;
	c->peer_pid = -1;
	if (k.is_unix && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred,
	    &len) == 0)
		c->peer_pid = cred.pid;
	if ((c->buf = malloc(front->conf.max_head + 1)) == NULL ||
	    (c->peer = peer_hold(&k)) == NULL ||
	    (c->wsi = front_adopt(fd, &c->ffd)) == NULL) {
		peer_release(c->peer);
		free(c->buf);
		free(c);
		return (NULL);
	}
	conn_count++;
	c->state = CONN_HEAD;
	conn_arm_timeout(c, front->conf.head_timeout);
	return (c);
}

/* Read and drop len bytes already in the socket (a peeked head). */
static int
conn_consume(struct conn *c, size_t len)
{
	char	sink[4096];
	ssize_t	n;

	while (len > 0) {
		n = recv(c->fd, sink, len < sizeof(sink) ? len : sizeof(sink),
		    MSG_DONTWAIT);
		if (n <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			return (-1);
		}
		len -= (size_t)n;
	}
	return (0);
}

/* The status line and header fields of r; their length, 0 if too long. */
static size_t
conn_format_head(struct conn *c, const struct reply *r, char *head,
    size_t headlen)
{
	int	n;

	metrics_reply(c->route, r->status, c->t0 != 0 ? metrics_now() - c->t0 :
	    0);
	if (r->status == 408)
		metrics_limit(L_REQUEST_TIMEOUT);
	else if (r->status == 413)
		metrics_limit(L_MAX_BODY);
	else if (r->status == 431)
		metrics_limit(L_MAX_HEAD);
	if (!c->keep_alive)
		c->close_after = 1;
	/* A head refused as it was only peeked at: or it is read again. */
	if (c->state == CONN_HEAD && !c->close_after &&
	    conn_consume(c, c->head_len) == -1)
		c->close_after = 1;
	n = snprintf(head, headlen, "HTTP/1.1 %d %s\r\n"
	    "Content-Length: %zu\r\n%s%s%s%s%s\r\n", r->status,
	    conn_reason(r->status), r->len, r->ctype != NULL ?
	    "Content-Type: " : "", r->ctype != NULL ? r->ctype : "",
	    r->ctype != NULL ? "\r\n" : "", r->fields,
	    c->close_after ? "Connection: close\r\n" : "");
	if (n < 0 || (size_t)n >= headlen)
		return (0);
	return ((size_t)n);
}

/*
 * The next piece of a streamed reply, after the at bytes in c->out; or,
 * from a source that shows its body in place, all of it, once.
 */
static int
conn_refill(struct conn *c, size_t at)
{
	size_t	n;

	if (c->src.view != NULL) {
		c->out_len = at;
		if ((c->src_at = c->src.view(c->src.arg, &n)) != NULL &&
		    n == c->src_left)
			return (0);
		log_warnx("a streamed reply is not the length it said");
		return (-1);
	}
	n = c->src.read(c->src.arg, c->out + at, CONN_CHUNK - at);
	if (n == 0 || n > c->src_left) {
		log_warnx("a streamed reply is %s than it said",
		    n == 0 ? "shorter" : "longer");
		return (-1);
	}
	c->src_left -= n;
	c->out_len = at + n;
	c->out_off = 0;
	return (0);
}

/*
 * The one way a reply reaches the connection: api.c's, or one that a
 * worker or the template completes later (registry.c, exec.c).  Its head
 * and body are queued and written; a streamed body (r->src) is produced
 * piece by piece while the socket takes it, so that only one piece is
 * held, and its source is the connection's from now on: its free runs
 * once the reply is out, or the connection gone.
 */
void
conn_reply(struct conn *c, struct reply *r)
{
	size_t	n, cap, blen = 0;
	int	stream = r->src.read != NULL && r->len > 0;

	if (r->close)
		c->close_after = 1;
	c->src = r->src;
	c->src_left = stream ? r->len : 0;
	c->src_at = NULL;
	if (r->src.read == NULL && r->body != NULL)
		blen = r->len;
	if (stream && r->src.view != NULL)
		cap = CONN_HEAD_MAX;
	else
		cap = stream ? CONN_CHUNK : CONN_HEAD_MAX + blen;
	free(c->out);
	c->out = NULL;
	if (r->kind != REPLY_SEND || c->closed ||
	    (c->out = malloc(cap)) == NULL ||
	    (n = conn_format_head(c, r, c->out, cap - blen)) == 0 ||
	    (stream && conn_refill(c, n) == -1)) {
		conn_close(c);	/* conn_closed() frees c->src */
		free(r->owned);
		return;
	}
	if (!stream) {
		memcpy(c->out + n, r->body != NULL ? r->body : "", blen);
		c->out_len = n + blen;
	}
	free(r->owned);
	c->out_off = 0;
	c->state = CONN_WRITE;
	conn_arm_timeout(c, front->conf.write_timeout);
	lws_rx_flow_control(c->wsi, 0);
	/* Most replies fit the socket buffer: no need to wait for POLLOUT. */
	conn_writeable(c);
}

/* What the connection itself refuses: it closes after the reply. */
static void
conn_fail(struct conn *c, int status, const char *code, const char *why)
{
	struct reply	r;

	c->close_after = 1;
	conn_reply(c, reply_error(&r, status, code, "%s", why));
}

/* The reply is out and the connection closes: drop what still comes. */
static void
conn_linger(struct conn *c)
{
	/* Let the peer read the reply before the close. */
	shutdown(c->fd, SHUT_WR);
	c->state = CONN_LINGER;
	c->buflen = 0;
	free(c->body);
	c->body = NULL;
	conn_arm_timeout(c, CONN_LINGER_SEC);
	lws_rx_flow_control(c->wsi, 1);
}

static void
conn_drain(struct conn *c)
{
	static char	sink[65536];
	ssize_t		n;
	int		i;

	for (i = 0; i < CONN_LINGER_READS; i++) {
		n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0 || (c->buflen += (size_t)n) > CONN_LINGER_MAX) {
			conn_close(c);
			return;
		}
	}
}

void
conn_writeable(struct conn *c)
{
	const char	*p;
	size_t		 len;
	ssize_t		 n;
	int		 progress = 0;

	if (c->state != CONN_WRITE)
		return;
	while (c->out_off < c->out_len || c->src_left > 0) {
		if (c->out_off < c->out_len) {
			p = c->out + c->out_off;
			len = c->out_len - c->out_off;
		} else if (c->src_at != NULL) {
			p = c->src_at;
			len = c->src_left;
		} else {
			if (conn_refill(c, 0) == -1) {
				conn_close(c);
				return;
			}
			continue;
		}
		n = send(c->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				/* A reader that moves keeps its time. */
				if (progress)
					conn_arm_timeout(c,
					    front->conf.write_timeout);
				rawio_writable(c->wsi);
				return;
			}
			conn_close(c);
			return;
		}
		if (p != c->src_at)
			c->out_off += (size_t)n;
		else {
			c->src_at += n;
			c->src_left -= (size_t)n;
		}
		progress = 1;
	}
	free(c->out);
	c->out = NULL;
	conn_source_done(c);
	if (c->close_after) {
		conn_linger(c);
		return;
	}
	free(c->body);
	c->body = NULL;
	c->body_len = c->body_want = 0;
	c->buflen = 0;
	c->peek_tries = 0;
	c->state = CONN_HEAD;
	conn_arm_timeout(c, front->conf.idle_timeout);
	lws_rx_flow_control(c->wsi, 1);
}

/*
 * Pass the connection on: its descriptor travels in a control frame (to a
 * session's worker, or to the template for an exec stream) and the front
 * forgets it.  The head goes in the frame, written out again without the
 * token, and out of the socket: the worker, which runs as the session's
 * user, never holds the token.  What the peer sent after the head stays in
 * the socket.
 */
static int
conn_pass(struct conn *c, struct session *s)
{
	struct proto_out m;
	msgpack_packer	*pk;
	char		*head;
	size_t		 hlen = 0, hmax;
	int		 fd, rc, legacy;

	/* A worker from before versions reads the head from the socket. */
	legacy = s != NULL && s->proto < 1;
	hmax = c->head_len + 2 * HTTPHEAD_MAX_HEADERS + 64;
	if ((head = malloc(hmax)) == NULL)
		return (-1);
	if ((!legacy &&
	    ((hlen = httphead_without_token(&c->h, head, hmax)) == 0 ||
	    conn_consume(c, c->head_len) == -1)) ||
	    (fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 3)) == -1) {
		free(head);
		return (-1);
	}
	pk = proto_begin(&m, s == NULL ? PROTO_STREAM : PROTO_ADOPT);
	if (!legacy)
		mpack_kv_bin(pk, "head", head, hlen);
	free(head);
	if (s == NULL) {
		/* A restricted peer's stream may run only as that peer. */
		rc = peer_pack_limits(c, pk);
		front_pack_limits(pk);
		if (rc == 0)
			rc = spawner_send(&m, fd);
		else {
			proto_free(&m);
			close(fd);
		}
	} else
		rc = registry_request(s, NULL, &m, fd);
	if (rc == -1)
		return (-1);
	/*
	 * Forget our copy: lws closes it (a raw file: close(), no shutdown),
	 * and the epoll loop drops it while it is still the socket.  Its
	 * registration is for the open file, not the number: with the number
	 * pointing elsewhere, events of the connection (now the worker's)
	 * would reach whichever connection is next given that number.
	 */
	metrics_reply(c->route, 101, metrics_now() - c->t0);
	metrics_count(s == NULL ? M_EXEC_STREAMS_STARTED :
	    c->route == ROUTE_SESSION_LOG ? M_LOGS : M_ATTACHES);
	lws_rx_flow_control(c->wsi, 0);
	conn_close(c);
	return (0);
}

/* The body is in: the request's answer, now or through conn_reply. */
static void
conn_decide(struct conn *c)
{
	struct reply	r;

	lws_sul_cancel(&c->sul);
	/* Before api.c decides: a worker's answer may come while it does. */
	c->state = CONN_WAIT;
	memset(&r, 0, sizeof(r));
	api_request(c, &r);
	if (r.kind != REPLY_WAIT)
		conn_reply(c, &r);
}

/*
 * Consume the head that was only peeked, with whatever of the body came
 * in the same segments (already in c->buf), so a small request needs no
 * second trip through the loop.
 */
static int
conn_start_body(struct conn *c, size_t len)
{
	size_t	have = 0;

	if ((c->body = malloc(len + 1)) == NULL)
		return (-1);
	if (c->buflen > c->head_len)
		have = c->buflen - c->head_len;
	if (have > len)
		have = len;
	memcpy(c->body, c->buf + c->head_len, have);
	if (conn_consume(c, c->head_len + have) == -1)
		return (-1);
	c->body_len = have;
	c->body_want = len;
	c->body[len] = '\0';
	c->state = CONN_BODY;
	if (have == len)
		conn_decide(c);
	else
		conn_arm_timeout(c, front->conf.head_timeout * 3);
	return (0);
}

/*
 * The head is complete: api.c says what the request gets, and conn.c
 * does it.  Nothing of a body is read for a request refused here.
 */
static void
conn_decide_head(struct conn *c)
{
	struct reply	r;

	memset(&r, 0, sizeof(r));	/* REPLY_CLOSE unless api.c says */
	api_head(c, &r);
	switch (r.kind) {
	case REPLY_BODY:
		if (conn_start_body(c, c->h.content_length > 0 ?
		    (size_t)c->h.content_length : 0) == -1)
			conn_fail(c, 500, "internal",
			    "cannot read the request");
		break;
	case REPLY_HANDOFF:
		if (conn_pass(c, c->pass_to) == -1)
			conn_fail(c, 503, "unavailable", c->pass_to == NULL ?
			    "cannot start an exec stream" :
			    "cannot reach the session's worker");
		break;
	default:
		/* A body left unread cannot be followed by another request. */
		if (c->h.content_length > 0 || c->h.chunked)
			c->close_after = 1;
		conn_reply(c, &r);
		break;
	}
}

/* Wait for more of a head: RCVLOWAT on TCP, a short retry elsewhere. */
static void
conn_peek_later(struct conn *c, size_t have)
{
	int	lowat = (int)have + 1;

	if (!c->l->is_unix &&
	    setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat,
	    sizeof(lowat)) == 0) {
		c->lowat = 1;
		return;
	}
	lws_rx_flow_control(c->wsi, 0);
	c->peek_tries++;
}

static void conn_peek_retry_cb(lws_sorted_usec_list_t *);

/* Read what the peer sent; 0 when there is nothing (or it is closed). */
static ssize_t
conn_recv(struct conn *c, char *buf, size_t len, int flags)
{
	ssize_t	n = recv(c->fd, buf, len, flags | MSG_DONTWAIT);

	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
		conn_close(c);
	return (n > 0 ? n : 0);
}

static void
conn_head(struct conn *c)
{
	enum httphead_result	 r;
	const char		*why = "malformed request";
	ssize_t			 n;
	size_t			 limit = front->conf.max_head;

	if ((n = conn_recv(c, c->buf, limit, MSG_PEEK)) == 0)
		return;
	if (c->buflen == 0)
		conn_arm_timeout(c, front->conf.head_timeout);
	c->buflen = (size_t)n;
	r = httphead_parse(c->buf, c->buflen, limit, &c->h, &c->head_len,
	    &why);
	if (r == HTTPHEAD_PARTIAL) {
		conn_peek_later(c, c->buflen);
		if (c->l->is_unix || c->peek_tries > 0)
			lws_sul_schedule(front->ctx, 0, &c->sul,
			    conn_peek_retry_cb,
			    CONN_PEEK_RETRY_MS * LWS_US_PER_MS);
		return;
	}
	c->t0 = metrics_now();
	c->route = ROUTE_NONE;
	if (r != HTTPHEAD_OK) {
		conn_fail(c, r == HTTPHEAD_TOO_LARGE ? 431 :
		    r == HTTPHEAD_BAD_VERSION ? 505 : 400,
		    r == HTTPHEAD_TOO_LARGE ? "header_too_large" :
		    "bad_request", why);
		return;
	}
	if (c->lowat) {
		int one = 1;

		(void)setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &one,
		    sizeof(one));
		c->lowat = 0;
	}
	c->peek_tries = 0;
	c->keep_alive = c->h.keep_alive;
	conn_decide_head(c);
}

static void
conn_peek_retry_cb(lws_sorted_usec_list_t *sul)
{
	struct conn	*c = lws_container_of(sul, struct conn, sul);

	if (c->closed || c->state != CONN_HEAD)
		return;
	lws_rx_flow_control(c->wsi, 1);
	if (c->peek_tries * CONN_PEEK_RETRY_MS >
	    front->conf.head_timeout * 1000)
		conn_timeout_cb(sul);	/* the head's 408 */
	else
		conn_head(c);
}

static void
conn_body(struct conn *c)
{
	ssize_t	n;

	if ((n = conn_recv(c, c->body + c->body_len, c->body_want -
	    c->body_len, 0)) == 0)
		return;
	c->body_len += (size_t)n;
	if (c->body_len == c->body_want)
		conn_decide(c);
}

void
conn_readable(struct conn *c)
{
	char	b;

	if (c->closed)
		return;
	switch (c->state) {
	case CONN_HEAD:
		conn_head(c);
		break;
	case CONN_BODY:
		conn_body(c);
		break;
	case CONN_LINGER:
		conn_drain(c);
		break;
	default:
		/* A pipelined request waits; a closed peer is noticed. */
		if (recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
			conn_close(c);
		else
			lws_rx_flow_control(c->wsi, 0);
		break;
	}
}
