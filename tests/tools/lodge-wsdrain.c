/*
 * lodge-wsdrain: a small, fast, independent exec-stream client for the
 * integration tests (GET /v1/exec/stream, lodge-protocol(7) EXEC STREAM).
 *
 * It connects to ws://HOST:PORT/v1/exec/stream with a bearer token, sends
 * one `start` message built from the command line, and reads the stream to
 * its end: every stdout/stderr message's offset must continue the previous
 * one (one counter over both streams), bytes are counted per stream, and the
 * `exit` message is recorded.  With --pause SECS it stops reading the socket
 * (lws_rx_flow_control) for SECS seconds after the first output message, so
 * that a test can watch the server hold back while the client is slow.
 *
 * Progress lines and the final result go to stdout, one JSON object a line:
 *   {"event":"started","pid":N}
 *   {"event":"paused"}, {"event":"resumed"}          (with --pause)
 *   {"result":true,"bytes":N,"stdoutBytes":N,"stderrBytes":N,...}
 * The exit status is 0 when the stream ended with `exit` then close 1000,
 * every offset was contiguous and no output came after `exit`; 1 otherwise;
 * 2 for a usage error.
 *
 * usage: lodge-wsdrain --port PORT [--host HOST] [--token TOKEN]
 *            [--pause SECS] [--crc] [--tty] [--timeout SECS]
 *            [--deadline SECS] (--command STRING | -- ARG...)
 * The token may also come from the LODGE_TOKEN environment variable.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libwebsockets.h>
#include <msgpack.h>

#define MSG_MAX		(64u * 1024 * 1024)	/* one reassembled message */

static struct {
	/* options */
	const char	*host;
	int		 port;
	const char	*token;
	double		 pause;
	int		 crc;
	int		 tty;
	double		 timeout;
	double		 deadline;
	const char	*command;
	char		**args;
	int		 nargs;

	/* state */
	struct lws_context	*ctx;
	struct lws		*wsi;
	lws_sorted_usec_list_t	 sul_resume;
	lws_sorted_usec_list_t	 sul_deadline;
	int		 start_sent;
	int		 done;
	int		 paused_once;
	unsigned char	*rx;
	size_t		 rxlen, rxcap;
	double		 t0;

	/* what we saw */
	int64_t		 pid;
	uint64_t	 next_off;
	uint64_t	 out_bytes, err_bytes, nonzero;
	uint64_t	 messages;
	int		 contiguous;
	int64_t		 bad_offset, bad_expected;
	int		 got_exit;
	int		 data_after_exit;
	int		 exit_code_null;
	int64_t		 exit_code;
	char		 exit_signal[32];
	int		 timed_out;
	int		 close_code;
	char		 error_code[64];
	char		 error_msg[256];
	char		 conn_error[256];
	int		 protocol_error;
	char		 protocol_msg[256];
	uint32_t	 crc32;
} S;

static uint32_t crc_table[256];

static void
crc_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t
crc_update(uint32_t crc, const unsigned char *p, size_t n)
{
	crc = ~crc;
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
protocol_error(const char *fmt, ...)
{
	va_list ap;

	if (S.protocol_error)
		return;
	S.protocol_error = 1;
	va_start(ap, fmt);
	vsnprintf(S.protocol_msg, sizeof(S.protocol_msg), fmt, ap);
	va_end(ap);
}

/* A map's value by string key, or NULL. */
static msgpack_object *
map_get(msgpack_object *m, const char *key)
{
	size_t i, kl = strlen(key);

	for (i = 0; i < m->via.map.size; i++) {
		msgpack_object *k = &m->via.map.ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == kl &&
		    memcmp(k->via.str.ptr, key, kl) == 0)
			return &m->via.map.ptr[i].val;
	}
	return NULL;
}

static int
str_is(msgpack_object *o, const char *s)
{
	return o != NULL && o->type == MSGPACK_OBJECT_STR &&
	    o->via.str.size == strlen(s) &&
	    memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

static void
str_copy(char *dst, size_t dstlen, msgpack_object *o)
{
	size_t n;

	dst[0] = '\0';
	if (o == NULL || o->type != MSGPACK_OBJECT_STR)
		return;
	n = o->via.str.size < dstlen - 1 ? o->via.str.size : dstlen - 1;
	memcpy(dst, o->via.str.ptr, n);
	dst[n] = '\0';
}

static int
get_int(msgpack_object *o, int64_t *v)
{
	if (o == NULL)
		return -1;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		*v = (int64_t)o->via.u64;
		return 0;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*v = o->via.i64;
		return 0;
	}
	return -1;
}

static void
resume_cb(lws_sorted_usec_list_t *sul)
{
	if (S.wsi != NULL)
		lws_rx_flow_control(S.wsi, 1);
	printf("{\"event\":\"resumed\"}\n");
	fflush(stdout);
}

static void
deadline_cb(lws_sorted_usec_list_t *sul)
{
	snprintf(S.conn_error, sizeof(S.conn_error),
	    "deadline of %.0f s passed", S.deadline);
	S.done = 1;
	lws_cancel_service(S.ctx);
}

static void
handle_output(msgpack_object *m, int is_err)
{
	msgpack_object *data = map_get(m, "data");
	int64_t off;
	const unsigned char *p;
	size_t n, i, nz;

	if (data == NULL || data->type != MSGPACK_OBJECT_BIN) {
		protocol_error("output message without bin data");
		return;
	}
	if (get_int(map_get(m, "offset"), &off) != 0) {
		protocol_error("output message without an integer offset");
		return;
	}
	if (S.got_exit)
		S.data_after_exit = 1;
	if ((uint64_t)off != S.next_off && S.contiguous) {
		S.contiguous = 0;
		S.bad_offset = off;
		S.bad_expected = (int64_t)S.next_off;
	}
	p = (const unsigned char *)data->via.bin.ptr;
	n = data->via.bin.size;
	S.next_off = (uint64_t)off + n;
	if (is_err)
		S.err_bytes += n;
	else {
		S.out_bytes += n;
		if (S.crc)
			S.crc32 = crc_update(S.crc32, p, n);
		nz = 0;
		for (i = 0; i < n; i++)
			nz += p[i] != 0;
		S.nonzero += nz;
	}
	if (S.pause > 0 && !S.paused_once && S.wsi != NULL) {
		S.paused_once = 1;
		lws_rx_flow_control(S.wsi, 0);
		lws_sul_schedule(S.ctx, 0, &S.sul_resume, resume_cb,
		    (lws_usec_t)(S.pause * LWS_US_PER_SEC));
		printf("{\"event\":\"paused\"}\n");
		fflush(stdout);
	}
}

static void
handle_message(const unsigned char *buf, size_t len)
{
	msgpack_unpacked u;
	msgpack_object *m, *t;
	size_t off = 0;
	int64_t v = -1;

	S.messages++;
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, (const char *)buf, len, &off) !=
	    MSGPACK_UNPACK_SUCCESS || off != len) {
		protocol_error("undecodable message of %zu bytes", len);
		goto out;
	}
	m = &u.data;
	if (m->type != MSGPACK_OBJECT_MAP ||
	    (t = map_get(m, "type")) == NULL || t->type != MSGPACK_OBJECT_STR) {
		protocol_error("message is not a map with a string type");
		goto out;
	}
	if (str_is(t, "stdout"))
		handle_output(m, 0);
	else if (str_is(t, "stderr"))
		handle_output(m, 1);
	else if (str_is(t, "started")) {
		if (get_int(map_get(m, "pid"), &v) != 0)
			protocol_error("started without an integer pid");
		S.pid = v;
		printf("{\"event\":\"started\",\"pid\":%" PRId64 "}\n", v);
		fflush(stdout);
	} else if (str_is(t, "exit")) {
		msgpack_object *ec = map_get(m, "exitCode");
		msgpack_object *to = map_get(m, "timedOut");

		if (S.got_exit)
			protocol_error("a second exit message");
		S.got_exit = 1;
		if (ec == NULL || ec->type == MSGPACK_OBJECT_NIL)
			S.exit_code_null = 1;
		else if (get_int(ec, &S.exit_code) != 0)
			protocol_error("exitCode is neither nil nor an integer");
		str_copy(S.exit_signal, sizeof(S.exit_signal),
		    map_get(m, "signal"));
		S.timed_out = to != NULL && to->type == MSGPACK_OBJECT_BOOLEAN
		    && to->via.boolean;
	} else if (str_is(t, "error")) {
		str_copy(S.error_code, sizeof(S.error_code),
		    map_get(m, "code"));
		str_copy(S.error_msg, sizeof(S.error_msg),
		    map_get(m, "message"));
	} else
		protocol_error("unexpected message type %.*s",
		    (int)t->via.str.size, t->via.str.ptr);
out:
	msgpack_unpacked_destroy(&u);
}

static int
send_start(struct lws *wsi)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	unsigned char *buf;
	int i, n, ret;

#define PSTR(s) do {							\
		size_t _l = strlen(s);					\
		msgpack_pack_str(&pk, _l);				\
		msgpack_pack_str_body(&pk, (s), _l);			\
	} while (0)

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	n = 2 + (S.tty ? 1 : 0) + (S.timeout > 0 ? 1 : 0);
	msgpack_pack_map(&pk, (size_t)n);
	PSTR("type");
	PSTR("start");
	if (S.command != NULL) {
		PSTR("command");
		PSTR(S.command);
	} else {
		PSTR("args");
		msgpack_pack_array(&pk, (size_t)S.nargs);
		for (i = 0; i < S.nargs; i++)
			PSTR(S.args[i]);
	}
	if (S.tty) {
		PSTR("tty");
		msgpack_pack_true(&pk);
	}
	if (S.timeout > 0) {
		PSTR("timeoutSeconds");
		msgpack_pack_double(&pk, S.timeout);
	}
#undef PSTR
	if ((buf = malloc(LWS_PRE + sb.size)) == NULL) {
		msgpack_sbuffer_destroy(&sb);
		return -1;
	}
	memcpy(buf + LWS_PRE, sb.data, sb.size);
	ret = lws_write(wsi, buf + LWS_PRE, sb.size, LWS_WRITE_BINARY);
	n = (int)sb.size;
	free(buf);
	msgpack_sbuffer_destroy(&sb);
	return ret < n ? -1 : 0;
}

static int
callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	switch (reason) {
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: {
		unsigned char **p = (unsigned char **)in, *end = *p + len;
		char auth[600];

		if (S.token == NULL)
			break;
		snprintf(auth, sizeof(auth), "Bearer %s", S.token);
		if (lws_add_http_header_by_token(wsi,
		    WSI_TOKEN_HTTP_AUTHORIZATION, (unsigned char *)auth,
		    (int)strlen(auth), p, end))
			return -1;
		break;
	}
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		snprintf(S.conn_error, sizeof(S.conn_error), "connection "
		    "error: %s", in != NULL ? (const char *)in : "(none)");
		S.wsi = NULL;
		S.done = 1;
		break;
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		lws_callback_on_writable(wsi);
		break;
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		if (!S.start_sent) {
			S.start_sent = 1;
			if (send_start(wsi) != 0) {
				snprintf(S.conn_error, sizeof(S.conn_error),
				    "could not send start");
				return -1;
			}
		}
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		if (lws_is_first_fragment(wsi)) {
			S.rxlen = 0;
			if (!lws_frame_is_binary(wsi))
				protocol_error("text frame from the server");
		}
		if (S.rxlen + len > MSG_MAX) {
			protocol_error("message larger than %u bytes",
			    MSG_MAX);
			return -1;
		}
		if (S.rxlen + len > S.rxcap) {
			size_t nc = S.rxcap ? S.rxcap : 65536;
			unsigned char *nb;

			while (nc < S.rxlen + len)
				nc *= 2;
			if ((nb = realloc(S.rx, nc)) == NULL)
				return -1;
			S.rx = nb;
			S.rxcap = nc;
		}
		memcpy(S.rx + S.rxlen, in, len);
		S.rxlen += len;
		if (lws_is_final_fragment(wsi) &&
		    lws_remaining_packet_payload(wsi) == 0) {
			handle_message(S.rx, S.rxlen);
			S.rxlen = 0;
		}
		break;
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		if (len >= 2) {
			const unsigned char *c = in;
			S.close_code = (c[0] << 8) | c[1];
		} else
			S.close_code = 1005;
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		S.wsi = NULL;
		S.done = 1;
		break;
	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols protocols[] = {
	{ "lodge-wsdrain", callback, 0, 256 * 1024, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

static void
usage(void)
{
	fprintf(stderr, "usage: lodge-wsdrain --port PORT [--host HOST] "
	    "[--token TOKEN] [--pause SECS] [--crc] [--tty]\n"
	    "           [--timeout SECS] [--deadline SECS] "
	    "(--command STRING | -- ARG...)\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct lws_context_creation_info info;
	struct lws_client_connect_info ci;
	double secs;
	int i, ok;

	S.host = "127.0.0.1";
	S.deadline = 900;
	S.token = getenv("LODGE_TOKEN");
	S.contiguous = 1;
	S.bad_offset = S.bad_expected = -1;
	S.pid = -1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--") == 0) {
			S.args = argv + i + 1;
			S.nargs = argc - i - 1;
			break;
		} else if (strcmp(a, "--crc") == 0)
			S.crc = 1;
		else if (strcmp(a, "--tty") == 0)
			S.tty = 1;
		else if (v == NULL)
			usage();
		else if (strcmp(a, "--host") == 0)
			S.host = v, i++;
		else if (strcmp(a, "--port") == 0)
			S.port = atoi(v), i++;
		else if (strcmp(a, "--token") == 0)
			S.token = v, i++;
		else if (strcmp(a, "--pause") == 0)
			S.pause = atof(v), i++;
		else if (strcmp(a, "--timeout") == 0)
			S.timeout = atof(v), i++;
		else if (strcmp(a, "--deadline") == 0)
			S.deadline = atof(v), i++;
		else if (strcmp(a, "--command") == 0)
			S.command = v, i++;
		else
			usage();
	}
	if (S.port <= 0 || (S.command == NULL && S.nargs == 0) ||
	    (S.command != NULL && S.nargs != 0))
		usage();
	crc_init();

	lws_set_log_level(LLL_ERR | LLL_WARN, NULL);
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protocols;
	info.pt_serv_buf_size = 256 * 1024;
	info.gid = -1;
	info.uid = -1;
	if ((S.ctx = lws_create_context(&info)) == NULL) {
		fprintf(stderr, "lodge-wsdrain: lws_create_context failed\n");
		return 1;
	}
	memset(&ci, 0, sizeof(ci));
	ci.context = S.ctx;
	ci.address = S.host;
	ci.port = S.port;
	ci.path = "/v1/exec/stream";
	ci.host = S.host;
	ci.origin = S.host;
	ci.protocol = NULL;
	ci.local_protocol_name = protocols[0].name;
	ci.pwsi = &S.wsi;
	S.t0 = now();
	if (lws_client_connect_via_info(&ci) == NULL && !S.done) {
		snprintf(S.conn_error, sizeof(S.conn_error),
		    "lws_client_connect_via_info failed");
		S.done = 1;
	}
	lws_sul_schedule(S.ctx, 0, &S.sul_deadline, deadline_cb,
	    (lws_usec_t)(S.deadline * LWS_US_PER_SEC));
	while (!S.done)
		if (lws_service(S.ctx, 0) < 0)
			break;
	secs = now() - S.t0;
	lws_context_destroy(S.ctx);

	ok = S.got_exit && S.contiguous && !S.data_after_exit &&
	    !S.protocol_error && S.close_code == 1000 && S.conn_error[0] == 0;
	printf("{\"result\":true,\"ok\":%s,\"bytes\":%" PRIu64
	    ",\"stdoutBytes\":%" PRIu64 ",\"stderrBytes\":%" PRIu64
	    ",\"endOffset\":%" PRIu64 ",\"nonzero\":%" PRIu64
	    ",\"messages\":%" PRIu64 ",\"pid\":%" PRId64
	    ",\"contiguous\":%s,\"badOffset\":%" PRId64
	    ",\"badExpected\":%" PRId64 ",\"exit\":%s,\"dataAfterExit\":%s",
	    ok ? "true" : "false", S.out_bytes + S.err_bytes, S.out_bytes,
	    S.err_bytes, S.next_off, S.nonzero, S.messages, S.pid,
	    S.contiguous ? "true" : "false", S.bad_offset, S.bad_expected,
	    S.got_exit ? "true" : "false",
	    S.data_after_exit ? "true" : "false");
	if (!S.got_exit || S.exit_code_null)
		printf(",\"exitCode\":null");
	else
		printf(",\"exitCode\":%" PRId64, S.exit_code);
	printf(",\"signal\":");
	if (S.exit_signal[0] != '\0')
		json_str(stdout, S.exit_signal);
	else
		printf("null");
	printf(",\"timedOut\":%s,\"closeCode\":%d",
	    S.timed_out ? "true" : "false", S.close_code);
	if (S.crc)
		printf(",\"crc32\":%" PRIu32, S.crc32);
	printf(",\"errorCode\":");
	if (S.error_code[0] != '\0')
		json_str(stdout, S.error_code);
	else
		printf("null");
	printf(",\"errorMessage\":");
	json_str(stdout, S.error_msg);
	printf(",\"connError\":");
	json_str(stdout, S.conn_error);
	printf(",\"protocolError\":");
	json_str(stdout, S.protocol_msg);
	printf(",\"seconds\":%.3f}\n", secs);
	fflush(stdout);
	free(S.rx);
	return ok ? 0 : 1;
}
