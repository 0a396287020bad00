/*
 * api.c: the REST calls of the protocol, answered by the front.
 *
 * Requests are checked here (token, route, body) before any worker hears of
 * them.  Calls on one session become control requests to its worker; the
 * worker's reply completes the HTTP reply.  WebSocket upgrades and log
 * requests are handed to the worker whole.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "base64.h"
#include "fields.h"
#include "front.h"
#include "inputq.h"
#include "metrics.h"
#include "jsonmp.h"
#include "log.h"
#include "mpack.h"
#include "signame.h"
#include "spawnreq.h"
#include "wsmsg.h"

/* The fields of the small bodies (lodge-protocol.7, REST CALLS). */
static const struct field api_signal_fields[] = {
	{ "signal", FIELD_SIGNAL, NULL },
};
static const struct field api_input_fields[] = {
	{ "data", FIELD_STR, NULL },
	{ "dataBase64", FIELD_STR, NULL },
};
static const struct field api_resize_fields[] = {
	{ "cols", FIELD_INT, NULL },
	{ "rows", FIELD_INT, NULL },
};

#define API_FIELDS(t)	(t), (sizeof(t) / sizeof((t)[0]))

#define API_WAIT_DEFAULT	30	/* seconds a wait lasts, unless told */
#define API_WAIT_MAX		3600
#define API_LIST_MAX		100000	/* sessions in a page */

static int	api_peer_restricted(struct conn *);
static int	api_peer_owns(struct conn *, struct session *);

/* A ref is an id or a name: the same characters, at most 64 of them. */
static int
api_ref_valid(const char *ref)
{
	return (spawnreq_name_valid(ref, strlen(ref)));
}

static struct session *
api_session(struct conn *c)
{
	struct session	*s;

	if (!api_ref_valid(c->ref)) {
		conn_reply_error(c, 400, "bad_request",
		    "invalid session reference: ids and names are 1 to 64 "
		    "characters of A-Z a-z 0-9 . _ -");
		return (NULL);
	}
	if ((s = registry_find(c->ref)) == NULL || !s->ready || s->gone) {
		conn_reply_error(c, 404, "not_found",
		    "session '%s' does not exist", c->ref);
		return (NULL);
	}
	if (!api_peer_owns(c, s)) {
		conn_reply_error(c, 403, "forbidden", "session '%s' belongs "
		    "to another user", c->ref);
		return (NULL);
	}
	return (s);
}

/*
 * Parse the JSON body into msgpack, so one decoder checks every request;
 * with a table, check its fields too (run requests are spawnreq's).
 */
static int
api_body_object(struct conn *c, msgpack_sbuffer *sb, msgpack_unpacked *up,
    const struct field *fields, size_t nfields)
{
	char		 why[512];
	json_error_t	 err;
	json_t		*j;
	msgpack_packer	 pk;
	size_t		 off = 0;

	if ((j = json_loadb(c->body != NULL ? c->body : "", c->body_len,
	    JSON_REJECT_DUPLICATES, &err)) == NULL) {
		conn_reply_error(c, 400, "bad_request",
		    "malformed JSON: %s (line %d, column %d)", err.text,
		    err.line, err.column);
		return (-1);
	}
	if (!json_is_object(j)) {
		json_decref(j);
		conn_reply_error(c, 400, "bad_request",
		    "the request body must be a JSON object");
		return (-1);
	}
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	if (jsonmp_pack(&pk, j) == -1) {
		json_decref(j);
		conn_reply_error(c, 400, "bad_request", "unusable JSON");
		return (-1);
	}
	json_decref(j);
	/* msgpack-c unpacks at most 32 levels; no request needs more. */
	if (msgpack_unpack_next(up, sb->data, sb->size, &off) !=
	    MSGPACK_UNPACK_SUCCESS) {
		conn_reply_error(c, 400, "bad_request", "the request nests "
		    "too deeply");
		return (-1);
	}
	if (fields != NULL && fields_check(&up->data, fields, nfields, why,
	    sizeof(why)) == -1) {
		conn_reply_error(c, 400, "bad_request", "%s", why);
		return (-1);
	}
	return (0);
}

static void
api_health(struct conn *c)
{
	/* The same limits as "attached" and "started", and the REST ones. */
	conn_reply_json(c, 200, json_pack(
	    "{s:s,s:s,s:i,s:i,s:{s:I,s:I,s:I,s:I}}", "status", "ok",
	    "version", PACKAGE_VERSION, "protocol", WSMSG_PROTOCOL_VERSION,
	    "sessions", registry_count(), "limits",
	    "maxMessageBytes", (json_int_t)front->conf.max_message,
	    "inputQueueBytes", (json_int_t)INPUTQ_CLIENT,
	    "maxBodyBytes", (json_int_t)front->conf.max_body,
	    "restInputQueueBytes", (json_int_t)INPUTQ_REST));
}

/* Counters of every session and client: root's and token holders' only. */
static void
api_metrics(struct conn *c)
{
	char	*body;
	size_t	 len;

	if (api_peer_restricted(c)) {
		conn_reply_error(c, 403, "forbidden", "/metrics is for root "
		    "and token holders");
		return;
	}
	if ((body = metrics_render(&len)) == NULL) {
		conn_reply_error(c, 500, "internal", "out of memory");
		return;
	}
	conn_reply_body(c, 200, "text/plain; version=0.0.4; charset=utf-8",
	    body, len);
	free(body);
}

/* registry_list's filter for a restricted peer: its own sessions. */
static int
api_list_owned(struct session *s, void *arg)
{
	return (api_peer_owns(arg, s));
}

/* A reply of GET /v1/sessions being sent: how far into its listing. */
struct list_reader {
	struct listing	*l;
	size_t		 off;
};

static size_t
api_list_read(void *arg, char *buf, size_t len)
{
	struct list_reader	*r = arg;

	if (len > r->l->len - r->off)
		len = r->l->len - r->off;
	memcpy(buf, r->l->text + r->off, len);
	r->off += len;
	return (len);
}

static void
api_list_release(void *arg)
{
	struct list_reader	*r = arg;

	registry_list_done(r->l);
	free(r);
}

/*
 * GET /v1/sessions[?limit=N[&after=ID]]: all sessions, or a page of at
 * most N after the id ID, so that a client of many sessions need not
 * take them all at once.
 */
static void
api_list(struct conn *c)
{
	struct conn_source	 src;
	struct list_reader	*r;
	char			 v[16], after[HTTPHEAD_REF_MAX] = "";
	char			*end = NULL;
	long			 limit = 0;
	int			 n;

	if ((n = httphead_query(c->h.query, "limit", v, sizeof(v))) != -1) {
		/* Digits only: strtol would take a sign and blanks. */
		errno = 0;
		if (n > 0 && v[0] >= '0' && v[0] <= '9')
			limit = strtol(v, &end, 10);
		if (end == NULL || *end != '\0' || errno != 0 || limit < 1 ||
		    limit > API_LIST_MAX) {
			conn_reply_error(c, 400, "bad_request", "'limit' must "
			    "be a number of sessions from 1 to %d",
			    API_LIST_MAX);
			return;
		}
	}
	if ((n = httphead_query(c->h.query, "after", after,
	    sizeof(after))) != -1 && (limit == 0 || n <= 0 ||
	    !api_ref_valid(after))) {
		conn_reply_error(c, 400, "bad_request", "'after' must be a "
		    "session id, and comes with 'limit'");
		return;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->l = registry_list(api_peer_restricted(c) ? api_list_owned :
	    NULL, c, after, (int)limit)) == NULL) {
		free(r);
		conn_reply_error(c, 500, "internal", "out of memory");
		return;
	}
	/* Sent from the listing itself, which may be shared: no copy of it. */
	src.read = api_list_read;
	src.free = api_list_release;
	src.arg = r;
	conn_reply_stream(c, 200, "application/json", r->l->len, &src);
}

/* A non-root peer on the Unix socket: it may act only as itself. */
static int
api_peer_restricted(struct conn *c)
{
	return (c->l->is_unix && c->peer_uid != 0);
}

/* Resolve the user a process runs as; 0, or an HTTP status. */
static int
api_user(struct conn *c, const char *name, struct passwd *out, char *buf,
    size_t buflen)
{
	struct runas_policy	 p;
	enum runas_verdict	 v;

	p.lodged = geteuid();
	p.restricted = api_peer_restricted(c);
	p.peer = c->peer_uid;
	if (pwcache_get(name[0] == '\0' ? NULL : name, runas_default(&p), out,
	    buf, buflen) == -1) {
		if (name[0] == '\0')
			conn_reply_error(c, 500, "internal",
			    "lodged's own user has no passwd entry");
		else
			conn_reply_error(c, 422, "spawn_failed",
			    "unknown user '%s'", name);
		return (-1);
	}
	if ((v = runas_check(&p, out->pw_uid)) != RUNAS_OK) {
		conn_reply_error(c, 403, "forbidden", "%s", runas_why(v));
		return (-1);
	}
	return (0);
}

/*
 * A session a restricted peer may touch: its own.  The owner is the
 * session object's user.
 */
static int
api_peer_owns(struct conn *c, struct session *s)
{
	struct passwd	 pw;
	char		 buf[4096];

	if (!api_peer_restricted(c))
		return (1);
	if (s->json == NULL || s->user[0] == '\0')
		return (0);
	if (pwcache_get(s->user, 0, &pw, buf, sizeof(buf)) == -1)
		return (0);
	return (pw.pw_uid == c->peer_uid);
}

static void
api_create(struct conn *c)
{
	msgpack_sbuffer	 body;
	msgpack_unpacked up;
	msgpack_packer	*pk;
	struct proto_out m;
	struct spawnreq	 req;
	struct passwd	 pw;
	struct session	*s;
	unsigned char	 raw[16];
	char		 why[512], id[64], pwbuf[4096];
	size_t		 i;
	int		 sp[2];

	msgpack_sbuffer_init(&body);
	msgpack_unpacked_init(&up);
	if (api_body_object(c, &body, &up, NULL, 0) == -1)
		goto out;
	if (spawnreq_decode(&up.data, SPAWN_SESSION, front->conf.max_buffer,
	    &req, why, sizeof(why)) == -1) {
		conn_reply_error(c, 400, "bad_request", "%s", why);
		goto out;
	}
	if (req.name[0] != '\0' && (registry_name_taken(req.name) ||
	    registry_find_id(req.name) != NULL)) {
		conn_reply_error(c, 409, "conflict", "a session named '%s' "
		    "exists already", req.name);
		goto done;
	}
	if (registry_count() >= front->conf.max_sessions) {
		metrics_limit(L_MAX_SESSIONS);
		conn_reply_error(c, 503, "unavailable", "too many sessions "
		    "(--max-sessions %d)", front->conf.max_sessions);
		goto done;
	}
	if (registry_buffer_total() > front->conf.buffer_budget ||
	    req.buffer_size > front->conf.buffer_budget -
	    registry_buffer_total()) {
		conn_reply_error(c, 503, "unavailable", "the buffer budget is "
		    "spent: %zu of %zu bytes (--buffer-budget) are held by "
		    "sessions, this one asks %zu", registry_buffer_total(),
		    front->conf.buffer_budget, req.buffer_size);
		goto done;
	}
	if (api_user(c, req.user, &pw, pwbuf, sizeof(pwbuf)) == -1)
		goto done;

	arc4random_buf(raw, sizeof(raw));
	for (i = 0; i < sizeof(raw); i++)
		snprintf(id + i * 2, 3, "%02x", raw[i]);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
	    sp) == -1) {
		conn_reply_error(c, 503, "unavailable", "socketpair: %s",
		    strerror(errno));
		goto done;
	}
	if ((s = registry_add(id, req.name, sp[0])) == NULL) {
		close(sp[0]);
		close(sp[1]);
		conn_reply_error(c, 503, "unavailable", "out of memory");
		goto done;
	}
	registry_set_buffer(s, req.buffer_size);
	c->reqid = registry_next_id();
	pk = proto_begin(&m, PROTO_SPAWN);
	mpack_kv_int(pk, "reqid", c->reqid);
	front_pack_limits(pk);
	mpack_kv_str(pk, "id", id);
	mpack_kv_str(pk, "rundir", front->conf.rundir);
	front_pack_user(pk, &pw);
	mpack_kv_uint(pk, "bufferMax", front->conf.max_buffer);
	mpack_str(pk, "req");
	msgpack_pack_object(pk, up.data);
	if (spawner_send(&m, sp[1]) == -1) {
		registry_remove(s);
		conn_reply_error(c, 503, "unavailable",
		    "cannot start a session worker");
		goto done;
	}
	c->creating = 1;
	registry_expect(s, c, REGISTRY_CREATE_MS);
done:
	spawnreq_free(&req);
out:
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&body);
}

static void
api_exec(struct conn *c)
{
	msgpack_sbuffer	 body;
	msgpack_unpacked up;
	struct spawnreq	 req;
	struct passwd	 pw;
	char		 why[512], pwbuf[4096];

	msgpack_sbuffer_init(&body);
	msgpack_unpacked_init(&up);
	if (api_body_object(c, &body, &up, NULL, 0) == -1)
		goto out;
	if (spawnreq_decode(&up.data, SPAWN_EXEC, 0, &req, why,
	    sizeof(why)) == -1) {
		conn_reply_error(c, 400, "bad_request", "%s", why);
		goto out;
	}
	if (api_user(c, req.user, &pw, pwbuf, sizeof(pwbuf)) == 0)
		exec_start(c, &up.data, &pw, &req);
	spawnreq_free(&req);
out:
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&body);
}

/*
 * A worker marked unresponsive gets no more requests until it says
 * something (registry.c asks it, unprompted): 503 at once.
 */
static int
api_worker_answers(struct conn *c, struct session *s)
{
	char	why[128];

	if (registry_answers(s))
		return (1);
	registry_unanswered(s, why, sizeof(why));
	conn_reply_error(c, 503, "unavailable", "%s", why);
	return (0);
}

/* The session object as the front knows it (see registry_update). */
void
api_reply_session(struct conn *c, struct session *s)
{
	if (s->json == NULL) {
		conn_reply_error(c, 500, "internal", "no session object");
		return;
	}
	conn_reply_body(c, 200, "application/json", s->json, s->json_len);
}

/* Start a request to s's worker with a fresh id; NULL if it is marked. */
static msgpack_packer *
api_ask(struct conn *c, struct session *s, struct proto_out *m,
    enum proto_type type)
{
	if (!api_worker_answers(c, s))
		return (NULL);
	c->reqid = registry_next_id();
	mpack_kv_int(proto_begin(m, type), "id", c->reqid);
	return (&m->pk);
}

/* Send it: the reply goes to c. */
static void
api_forward(struct conn *c, struct session *s, struct proto_out *m)
{
	if (registry_request(s, c, m, -1) == -1)
		conn_reply_error(c, 404, "not_found",
		    "session '%s' does not exist", c->ref);
}

/*
 * GET /v1/sessions/{ref}/wait[?timeout=SECONDS]: the session object once
 * its process has exited, or at the timeout with the state it has then.
 */
static void
api_wait(struct conn *c, struct session *s)
{
	char	 v[32], *end = NULL;
	double	 t = API_WAIT_DEFAULT;
	int	 n;

	if ((n = httphead_query(c->h.query, "timeout", v, sizeof(v))) != -1) {
		/* Decimal digits and a point only: no sign, exponent, hex. */
		t = -1;
		if (n > 0 && v[0] >= '0' && v[0] <= '9' &&
		    strspn(v, "0123456789.") == (size_t)n) {
			errno = 0;
			t = strtod(v, &end);
		}
		if (end == NULL || *end != '\0' || errno != 0 || !(t >= 0) ||
		    t > API_WAIT_MAX) {
			conn_reply_error(c, 400, "bad_request", "'timeout' "
			    "must be a number of seconds from 0 to %d",
			    API_WAIT_MAX);
			return;
		}
	}
	registry_wait(s, c, (int)(t * 1000));
}

static void
api_signal(struct conn *c, struct session *s)
{
	msgpack_sbuffer		 body;
	msgpack_unpacked	 up;
	const msgpack_object	*v;
	struct proto_out	 m;
	msgpack_packer		*pk;

	msgpack_sbuffer_init(&body);
	msgpack_unpacked_init(&up);
	if (api_body_object(c, &body, &up, API_FIELDS(api_signal_fields)) ==
	    -1)
		goto out;
	if ((v = mpack_get(&up.data, "signal")) == NULL ||
	    signame_from_object(v) == -1) {
		conn_reply_error(c, 400, "bad_request", "'signal' must be a "
		    "signal name such as \"INT\" or a number from 1 to 64");
		goto out;
	}
	if ((pk = api_ask(c, s, &m, PROTO_SIGNAL)) != NULL) {
		mpack_str(pk, "signal");
		msgpack_pack_object(pk, *v);
		api_forward(c, s, &m);
	}
out:
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&body);
}

static void
api_input(struct conn *c, struct session *s)
{
	msgpack_sbuffer	 body;
	msgpack_unpacked up;
	struct proto_out m;
	msgpack_packer	*pk;
	const char	*p, *b64;
	size_t		 len, b64len;
	char		*raw = NULL;
	int		 has, hasb64, n;

	msgpack_sbuffer_init(&body);
	msgpack_unpacked_init(&up);
	if (api_body_object(c, &body, &up, API_FIELDS(api_input_fields)) ==
	    -1)
		goto out;
	has = mpack_get_str(&up.data, "data", &p, &len);
	hasb64 = mpack_get_str(&up.data, "dataBase64", &b64, &b64len);
	if (has == -1 || hasb64 == -1 || has + hasb64 != 1) {
		conn_reply_error(c, 400, "bad_request", "give one of 'data' "
		    "(a string) or 'dataBase64' (a base64 string)");
		goto out;
	}
	if (hasb64 && !base64_valid(b64, b64len)) {
		conn_reply_error(c, 400, "bad_request",
		    "'dataBase64' is not valid base64");
		goto out;
	}
	if (hasb64) {
		char *tmp;

		if ((raw = malloc(b64len + 4)) == NULL ||
		    (tmp = strndup(b64, b64len)) == NULL) {
			conn_reply_error(c, 503, "unavailable",
			    "out of memory");
			goto out;
		}
		n = lws_b64_decode_string_len(tmp, (int)b64len, raw,
		    (int)b64len + 4);
		free(tmp);
		if (n < 0 || (b64len > 0 && n == 0)) {
			conn_reply_error(c, 400, "bad_request",
			    "'dataBase64' is not valid base64");
			goto out;
		}
		p = raw;
		len = (size_t)n;
	}
	if ((pk = api_ask(c, s, &m, PROTO_INPUT)) != NULL) {
		mpack_kv_bin(pk, "data", p, len);
		api_forward(c, s, &m);
	}
out:
	free(raw);
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&body);
}

static void
api_resize(struct conn *c, struct session *s)
{
	msgpack_sbuffer	 body;
	msgpack_unpacked up;
	struct proto_out m;
	msgpack_packer	*pk;
	int64_t		 cols, rows;

	msgpack_sbuffer_init(&body);
	msgpack_unpacked_init(&up);
	if (api_body_object(c, &body, &up, API_FIELDS(api_resize_fields)) ==
	    -1)
		goto out;
	if (mpack_get_int(&up.data, "cols", 1, SPAWNREQ_SIZE_MAX, &cols) !=
	    1 || mpack_get_int(&up.data, "rows", 1, SPAWNREQ_SIZE_MAX,
	    &rows) != 1) {
		conn_reply_error(c, 400, "bad_request", "'cols' and 'rows' "
		    "must be integers from 1 to %d", SPAWNREQ_SIZE_MAX);
		goto out;
	}
	if ((pk = api_ask(c, s, &m, PROTO_RESIZE)) != NULL) {
		mpack_kv_int(pk, "cols", cols);
		mpack_kv_int(pk, "rows", rows);
		api_forward(c, s, &m);
	}
out:
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&body);
}

void
api_worker_reply(struct conn *c, struct session *s, const msgpack_object *o)
{
	const char	*code = "internal", *msg = "worker failed";
	char		 codebuf[64], msgbuf[512];
	size_t		 len;
	int64_t		 status = 500;

	(void)mpack_get_int(o, "status", 100, 599, &status);
	if (mpack_get_str(o, "code", &code, &len) == 1) {
		snprintf(codebuf, sizeof(codebuf), "%.*s", (int)len, code);
		code = codebuf;
	}
	if (mpack_get_str(o, "message", &msg, &len) == 1) {
		snprintf(msgbuf, sizeof(msgbuf), "%.*s", (int)len, msg);
		msg = msgbuf;
	}
	if (c->creating) {
		c->creating = 0;
		if (status == 201 && s != NULL && s->json != NULL) {
			registry_set_ready(s);
			metrics_count(M_SESSIONS_CREATED);
			log_info("session %s%s%s: created", s->id,
			    s->name[0] != '\0' ? " " : "", s->name);
			conn_reply_body(c, 201, "application/json", s->json,
			    s->json_len);
			return;
		}
		if (s != NULL)
			registry_remove(s);
		conn_reply_error(c, (int)status, code, "%s", msg);
		return;
	}
	if (status >= 300) {
		conn_reply_error(c, (int)status, code, "%s", msg);
		return;
	}
	switch (c->route) {
	case ROUTE_SESSION_GET:
		/* The registry has just taken the reply's session object. */
		if (mpack_get(o, "session") == NULL) {
			conn_reply_error(c, 500, "internal", "no session");
			return;
		}
		api_reply_session(c, s);
		return;
	case ROUTE_SESSION_DELETE:
		log_info("session %s: deleted", s->id);
		registry_remove(s);
		conn_reply_empty(c, 204);
		return;
	default:
		conn_reply_empty(c, 204);
		return;
	}
}

/* A WebSocket upgrade or a log request: check it, then hand it over. */
static void
api_handoff(struct conn *c)
{
	struct session		*s;
	struct httphead_attach	 q;
	const char		*why;
	char			 whybuf[256];

	if (c->route == ROUTE_EXEC_STREAM && c->h.upgrade) {
		if (conn_handoff_stream(c, api_peer_restricted(c) ?
		    c->peer_uid : (uid_t)-1) == -1)
			conn_reply_error(c, 503, "unavailable",
			    "cannot start an exec stream");
		return;
	}
	if (c->route != ROUTE_SESSION_ATTACH && c->route != ROUTE_SESSION_LOG) {
		conn_reply_error(c, 400, "bad_request", "WebSocket upgrades are "
		    "for /v1/sessions/{ref}/attach and /v1/exec/stream");
		return;
	}
	/* The worker parses the query again, with the same function. */
	if (httphead_attach_query(c->h.query, &q, &why) == -1) {
		conn_reply_error(c, 400, "bad_request", "%s", why);
		return;
	}
	if (c->route == ROUTE_SESSION_ATTACH && !c->h.upgrade) {
		conn_reply_error(c, 400, "bad_request", "attach is a WebSocket: "
		    "send Upgrade: websocket");
		return;
	}
	if (c->route == ROUTE_SESSION_LOG && c->h.upgrade) {
		conn_reply_error(c, 400, "bad_request",
		    "log is plain HTTP, not a WebSocket");
		return;
	}
	if ((s = api_session(c)) == NULL)
		return;
	if (registry_handoff_check(s, whybuf, sizeof(whybuf)) == -1) {
		conn_reply_error(c, 503, "unavailable", "%s", whybuf);
		return;
	}
	if (c->route == ROUTE_SESSION_ATTACH && s->json != NULL &&
	    s->clients >= front->conf.max_clients) {
		metrics_limit(L_MAX_CLIENTS);
		conn_reply_error(c, 503, "unavailable", "session '%s' has %d "
		    "clients already (--max-clients)", c->ref,
		    front->conf.max_clients);
		return;
	}
	if (conn_handoff(c, s) == -1)
		conn_reply_error(c, 503, "unavailable",
		    "cannot reach the session's worker");
}

/*
 * Who may ask at all: the token, then the Host and Origin fields.  A
 * refusal closes the connection after its reply, unread (conn.c).
 */
static int
api_refused(struct conn *c)
{
	const char	*v;

	c->close_after = 1;
	if (!c->l->is_unix && !auth_check(&c->h)) {
		conn_reply_error(c, 401, "unauthorized",
		    "missing or wrong token");
		return (1);
	}
	if (!auth_host_allowed(c->l, &c->h)) {
		v = httphead_field(&c->h, "Host");
		conn_reply_error(c, 403, "forbidden", "Host '%.64s' does not "
		    "name this server (--allow-host)", v != NULL ? v : "");
		return (1);
	}
	if (!auth_origin_allowed(c->l, &c->h)) {
		conn_reply_error(c, 403, "forbidden", "origin not allowed "
		    "(--allow-origin)");
		return (1);
	}
	c->close_after = 0;
	return (0);
}

/*
 * The head is complete: who asks, the route, then hand off or read the
 * body.  Nothing of a body is read for a request that is refused here, so
 * a client without the token costs the front its head and no more.
 */
static void
api_head(struct conn *c)
{
	c->close_after = 0;
	c->route = httphead_route(c->h.method, c->h.path, c->ref,
	    sizeof(c->ref));
	/* The page's own files are public (web.c); what it calls is not. */
	if (c->route == ROUTE_NONE && web_request(c))
		return;
	if (api_refused(c))
		return;
	if (c->h.upgrade || c->route == ROUTE_SESSION_LOG ||
	    c->route == ROUTE_SESSION_ATTACH) {
		c->close_after = 1;	/* if refused: the stream is unusable */
		api_handoff(c);
		return;
	}
	/* A body left unread cannot be followed by another request. */
	c->close_after = c->h.content_length > 0 || c->h.chunked;
	switch (c->route) {
	case ROUTE_NONE:
		conn_reply_error(c, 404, "not_found", "no such path: %s",
		    c->h.path);
		return;
	case ROUTE_BAD_METHOD:
		conn_reply_error(c, 405, "method_not_allowed", "%s is not "
		    "allowed on %s", c->h.method, c->h.path);
		return;
	case ROUTE_EXEC_STREAM:
		conn_reply_error(c, 400, "bad_request", "exec/stream is a "
		    "WebSocket: send Upgrade: websocket");
		return;
	default:
		break;
	}
	if (!auth_body_type_allowed(c->l, &c->h)) {
		c->close_after = 1;
		conn_reply_error(c, 415, "bad_request", "without a token, a "
		    "request body must be sent as Content-Type: "
		    "application/json");
		return;
	}
	if (c->h.chunked) {
		conn_reply_error(c, 411, "bad_request", "chunked bodies are not "
		    "supported: send Content-Length");
		return;
	}
	if (c->h.content_length > (int64_t)front->conf.max_body) {
		conn_reply_error(c, 413, "payload_too_large", "the body is "
		    "larger than %zu bytes", front->conf.max_body);
		return;
	}
	c->close_after = 0;
	if (conn_start_body(c, c->h.content_length > 0 ?
	    (size_t)c->h.content_length : 0) == -1) {
		c->close_after = 1;
		conn_reply_error(c, 500, "internal", "cannot read the request");
	}
}

static void
api_request(struct conn *c)
{
	struct session	*s;
	struct proto_out m;

	switch (c->route) {
	case ROUTE_HEALTH:
		api_health(c);
		return;
	case ROUTE_METRICS:
		api_metrics(c);
		return;
	case ROUTE_SESSIONS_LIST:
		api_list(c);
		return;
	case ROUTE_SESSIONS_CREATE:
		api_create(c);
		return;
	case ROUTE_EXEC:
		api_exec(c);
		return;
	default:
		break;
	}
	if ((s = api_session(c)) == NULL)
		return;
	switch (c->route) {
	case ROUTE_SESSION_GET:
		/* A worker that does not answer: what is known of it. */
		if (!registry_answers(s))
			api_reply_session(c, s);
		else if (api_ask(c, s, &m, PROTO_INFO) != NULL)
			api_forward(c, s, &m);
		break;
	case ROUTE_SESSION_DELETE:
		registry_delete(s, c);
		break;
	case ROUTE_SESSION_WAIT:
		api_wait(c, s);
		break;
	case ROUTE_SESSION_SIGNAL:
		api_signal(c, s);
		break;
	case ROUTE_SESSION_INPUT:
		api_input(c, s);
		break;
	case ROUTE_SESSION_RESIZE:
		api_resize(c, s);
		break;
	default:
		conn_reply_error(c, 404, "not_found", "no such path");
		break;
	}
}

void
api_dispatch(struct conn *c)
{
	if (c->state == CONN_HEAD)
		api_head(c);
	else
		api_request(c);
}
