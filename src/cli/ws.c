/*
 * ws.c: the one WebSocket stream of a command, through libwebsockets.
 *
 * Over the front's Unix socket (lws connects to "+/path"), a session's own
 * socket, or TCP with the token in an Authorization header.  Each message
 * is one binary frame holding one msgpack map; a message we send goes out
 * at once when nothing waits before it (a keystroke should not wait for a
 * poll), else it waits in a queue and goes one per writeable callback.
 * The queue is bounded by its
 * users: above the high-water mark they stop reading their input
 * (ws_send_full) until it drains.  Received messages are reassembled
 * up to a limit and handed over decoded.
 */
#include <sys/queue.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "jsonmp.h"
#include "mpack.h"

#define WS_QUEUE_HIGH	(256 * 1024)
#define WS_QUEUE_LOW	(64 * 1024)
#define WS_MSG_MAX	(16 * 1024 * 1024)

struct ws_frame {
	STAILQ_ENTRY(ws_frame)	 entry;
	size_t			 len;
	unsigned char		 data[];	/* LWS_PRE, then len bytes */
};

static STAILQ_HEAD(, ws_frame)	 ws_queue = STAILQ_HEAD_INITIALIZER(ws_queue);
static size_t			 ws_queued;
static int			 ws_was_full;
static struct lws		*ws_wsi;
static const struct ws_ops	*ws_ops;
static char			 ws_token[600];
static unsigned char		*ws_rx;
static size_t			 ws_rxlen;
static int			 ws_closing;
static int			 ws_established;
static int			 ws_close_code;
static char			 ws_close_why[128];
static int			 ws_ended;

static void
ws_free_queue(void)
{
	struct ws_frame	*f;

	while ((f = STAILQ_FIRST(&ws_queue)) != NULL) {
		STAILQ_REMOVE_HEAD(&ws_queue, entry);
		free(f);
	}
	ws_queued = 0;
	free(ws_rx);
	ws_rx = NULL;
	ws_rxlen = 0;
}

/* Tell our user once that the stream is over. */
static void
ws_end(int code, const char *why)
{
	ws_wsi = NULL;
	ws_established = 0;
	ws_free_queue();
	if (ws_ended)
		return;
	ws_ended = 1;
	if (ws_ops->closed != NULL)
		ws_ops->closed(code, why);
}

/* Connect; the outcome arrives through ws_ops. */
int
ws_open(const struct endpoint *ep, const char *path,
    const struct ws_ops *ops)
{
	struct lws_client_connect_info	 i;
	static char			 addr[sizeof(ep->unix_path) + 2];
	static char			 host[600];

	/* Once per process (one stream per command): state starts zeroed. */
	ws_ops = ops;
	memset(&i, 0, sizeof(i));
	if (ep->unix_path[0] != '\0') {
		snprintf(addr, sizeof(addr), "+%s", ep->unix_path);
		i.address = addr;
		i.port = 80;
		i.host = "localhost";
	} else {
		strlcpy(addr, ep->host, sizeof(addr));
		strlcpy(host, endpoint_name(ep), sizeof(host));
		i.address = addr;
		i.port = ep->port;
		i.host = host;
	}
	i.origin = i.host;
	i.path = path;
	i.protocol = NULL;
	i.local_protocol_name = "lodge-ws";
	i.pwsi = &ws_wsi;
	strlcpy(ws_token, ep->token, sizeof(ws_token));
	if (loop_connect(&i) == NULL) {
		ws_end(0, "cannot connect");
		return (-1);
	}
	return (0);
}

/* Queue one message (the packed map in sb). */
int
ws_send(const msgpack_sbuffer *sb)
{
	struct ws_frame	*f;

	if (ws_wsi == NULL || ws_closing)
		return (-1);
	if ((f = malloc(sizeof(*f) + LWS_PRE + sb->size)) == NULL) {
		report_error("malloc");
		return (-1);
	}
	f->len = sb->size;
	memcpy(f->data + LWS_PRE, sb->data, sb->size);
	if (ws_established && STAILQ_EMPTY(&ws_queue) &&
	    !lws_partial_buffered(ws_wsi)) {
		/* lws keeps what the socket does not take, and sends it. */
		if (lws_write(ws_wsi, f->data + LWS_PRE, f->len,
		    LWS_WRITE_BINARY) < 0)
			lws_set_timeout(ws_wsi, PENDING_TIMEOUT_USER_OK,
			    LWS_TO_KILL_ASYNC);
		free(f);
		return (0);
	}
	STAILQ_INSERT_TAIL(&ws_queue, f, entry);
	ws_queued += sb->size;
	if (ws_send_full())
		ws_was_full = 1;
	lws_callback_on_writable(ws_wsi);
	return (0);
}

int
ws_send_full(void)
{
	return (ws_queued >= WS_QUEUE_HIGH);
}

/*
 * The two messages attach and exec streams both take from our terminal:
 * input (which stops being read while the send queue is full) and our
 * window size.
 */
void
ws_send_stdin(const char *p, size_t len)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	mpack_kv_str(&pk, "type", "stdin");
	mpack_kv_bin(&pk, "data", p, len);
	(void)ws_send(&sb);
	msgpack_sbuffer_destroy(&sb);
	if (ws_send_full())
		loop_pause_input(1);
}

void
ws_send_size(void)
{
	int	cols, rows;

	if (tty_size(STDIN_FILENO, &cols, &rows) == 0)
		ws_send_json(json_pack("{s:s,s:i,s:i}", "type", "resize",
		    "cols", cols, "rows", rows));
}

/* Send a message built as JSON (which holds no bin values), and free it. */
void
ws_send_json(json_t *j)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	if (j != NULL && jsonmp_pack(&pk, j) == 0)
		(void)ws_send(&sb);
	msgpack_sbuffer_destroy(&sb);
	json_decref(j);
}

/* The data of an output message, to fd (-1: nowhere). */
void
ws_output(const msgpack_object *m, int fd)
{
	const char	*data;
	size_t		 len;

	if (mpack_get_bin(m, "data", &data, &len) != 1)
		report_errorx("lodged sent output without data");
	else if (fd != -1)
		(void)loop_output(fd, data, len);
}

/* Stop or restart reading the socket (our output is full). */
void
ws_pause(int paused)
{
	if (ws_wsi != NULL)
		lws_rx_flow_control(ws_wsi, !paused);
}

/* Close normally once the queue is sent. */
void
ws_close(void)
{
	if (ws_wsi == NULL || ws_closing)
		return;
	ws_closing = 1;
	lws_callback_on_writable(ws_wsi);
}

static int
ws_writeable(struct lws *wsi)
{
	struct ws_frame	*f;
	int		 n;

	if ((f = STAILQ_FIRST(&ws_queue)) == NULL) {
		if (ws_closing) {
			lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
			return (-1);
		}
		return (0);
	}
	STAILQ_REMOVE_HEAD(&ws_queue, entry);
	ws_queued -= f->len;
	n = lws_write(wsi, f->data + LWS_PRE, f->len, LWS_WRITE_BINARY);
	free(f);
	if (n < 0)
		return (-1);
	if (!STAILQ_EMPTY(&ws_queue) || ws_closing)
		lws_callback_on_writable(wsi);
	if (ws_was_full && ws_queued <= WS_QUEUE_LOW) {
		ws_was_full = 0;
		loop_pause_input(0);
	}
	return (0);
}

static int
ws_message(const unsigned char *buf, size_t len)
{
	msgpack_unpacked	 up;
	const msgpack_object	*type;
	size_t			 off = 0;
	int			 rc = 0;

	msgpack_unpacked_init(&up);
	if (msgpack_unpack_next(&up, (const char *)buf, len, &off) !=
	    MSGPACK_UNPACK_SUCCESS || off != len ||
	    up.data.type != MSGPACK_OBJECT_MAP ||
	    (type = mpack_get(&up.data, "type")) == NULL ||
	    type->type != MSGPACK_OBJECT_STR) {
		report_errorx("lodged sent a message that is not a msgpack "
		    "map with a type");
		rc = -1;
	} else
		ws_ops->message(&up.data);
	msgpack_unpacked_destroy(&up);
	/* A slow reader of our output slows the stream. */
	if (rc == 0 && loop_output_full())
		ws_pause(1);
	return (rc);
}

static int
ws_receive(struct lws *wsi, const void *in, size_t len)
{
	unsigned char	*nb;
	int		 final;

	final = lws_is_final_fragment(wsi) &&
	    lws_remaining_packet_payload(wsi) == 0;
	if (!lws_frame_is_binary(wsi) && ws_rxlen == 0 &&
	    lws_is_first_fragment(wsi)) {
		report_errorx("lodged sent a text frame");
		return (-1);
	}
	if (final && ws_rxlen == 0)
		return (ws_message(in, len));
	if (ws_rxlen + len > WS_MSG_MAX) {
		report_errorx("lodged sent a message larger than %d bytes",
		    WS_MSG_MAX);
		return (-1);
	}
	if ((nb = realloc(ws_rx, ws_rxlen + len + 1)) == NULL) {
		report_error("realloc");
		return (-1);
	}
	ws_rx = nb;
	memcpy(ws_rx + ws_rxlen, in, len);
	ws_rxlen += len;
	if (!final)
		return (0);
	len = ws_rxlen;
	ws_rxlen = 0;
	return (ws_message(ws_rx, len));
}

int
ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	unsigned char	**p, *end;
	char		  v[700], why[256];
	unsigned int	  status;
	const unsigned char *b = in;

	switch (reason) {
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
		if (ws_token[0] == '\0')
			return (0);
		p = (unsigned char **)in;
		end = *p + len;
		snprintf(v, sizeof(v), "Bearer %s", ws_token);
		if (lws_add_http_header_by_token(wsi,
		    WSI_TOKEN_HTTP_AUTHORIZATION, (unsigned char *)v,
		    (int)strlen(v), p, end))
			return (-1);
		return (0);
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		/* What established() sends waits for a writeable callback. */
		if (ws_ops->established != NULL)
			ws_ops->established();
		ws_established = 1;
		return (0);
	case LWS_CALLBACK_CLIENT_RECEIVE:
		return (ws_receive(wsi, in, len));
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		return (ws_writeable(wsi));
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		if (len >= 2) {
			ws_close_code = (b[0] << 8) | b[1];
			snprintf(ws_close_why, sizeof(ws_close_why), "%.*s",
			    (int)(len - 2 > 100 ? 100 : len - 2),
			    (const char *)b + 2);
		} else
			ws_close_code = 1005;
		return (0);
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		status = lws_http_client_http_response(wsi);
		if (status != 0 && status != 101)
			snprintf(why, sizeof(why), "HTTP %u", status);
		else
			snprintf(why, sizeof(why), "%s", in != NULL ?
			    (const char *)in : "connection failed");
		if (status == 0 && ws_wsi == NULL)
			errno = ECONNREFUSED;
		ws_end(0, why);
		return (0);
	case LWS_CALLBACK_CLIENT_CLOSED:
		ws_end(ws_close_code != 0 ? ws_close_code : 1006,
		    ws_close_why);
		return (0);
	default:
		return (0);
	}
}
