/*
 * api.c: the REST calls of the protocol, answered by the front.
 *
 * Requests are checked here (token, route, body) before any worker hears of
 * them.  conn.c asks twice, at the head and once the body is in; each
 * answer is a struct reply that says what the request gets.  Calls on one
 * session become control requests to its worker, whose answer completes
 * the HTTP reply later (registry.c, through conn_reply).  WebSocket
 * upgrades and log requests are handed to the worker whole.
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
#define API_OBJECT	NULL, 0		/* any object: spawnreq checks it */

#define API_WAIT_DEFAULT	30	/* seconds a wait lasts, unless told */
#define API_WAIT_MAX		3600
#define API_LIST_MAX		100000	/* sessions in a page */

/* A ref is an id or a name: the same characters, at most 64 of them. */
static int
api_ref_valid(const char *ref)
{
	return (spawnreq_name_valid(ref, strlen(ref)));
}

/*
 * A session a restricted peer (arg, its connection) may touch: its own.
 * The owner is the session object's user.  Also registry_list's filter.
 */
static int
api_peer_owns(struct session *s, void *arg)
{
	struct conn	*c = arg;
	struct passwd	 pw;
	char		 buf[4096];

	if (!CONN_RESTRICTED(c))
		return (1);
	if (s->json == NULL || s->user[0] == '\0')
		return (0);
	if (pwcache_get(s->user, 0, &pw, buf, sizeof(buf)) == -1)
		return (0);
	return (pw.pw_uid == c->peer_uid);
}

static struct session *
api_session(struct conn *c, struct reply *r)
{
	struct session	*s;

	if (!api_ref_valid(c->ref))
		reply_error(r, 400, "bad_request", "invalid session reference: "
		    "ids and names are 1 to 64 characters of A-Z a-z 0-9 . _ -");
	else if ((s = registry_find(c->ref)) == NULL || !s->ready || s->gone)
		reply_error(r, 404, "not_found", "session '%s' does not exist",
		    c->ref);
	else if (!api_peer_owns(s, c))
		reply_error(r, 403, "forbidden", "session '%s' belongs to "
		    "another user", c->ref);
	else
		return (s);
	return (NULL);
}

/* A request body, as msgpack: one decoder checks every request. */
struct api_body {
	msgpack_sbuffer		 sb;
	msgpack_unpacked	 up;
};

/* Parse the JSON body into b; with a table, check its fields too. */
static int
api_body_object(struct conn *c, struct api_body *b,
    const struct field *fields, size_t nfields, struct reply *r)
{
	char		 why[512];
	json_error_t	 err;
	json_t		*j;
	msgpack_packer	 pk;
	size_t		 off = 0;
	int		 rc = -1;

	if ((j = json_loadb(c->body != NULL ? c->body : "", c->body_len,
	    JSON_REJECT_DUPLICATES, &err)) == NULL) {
		reply_error(r, 400, "bad_request", "malformed JSON: %s (line "
		    "%d, column %d)", err.text, err.line, err.column);
		return (-1);
	}
	msgpack_packer_init(&pk, &b->sb, msgpack_sbuffer_write);
	if (!json_is_object(j))
		reply_error(r, 400, "bad_request",
		    "the request body must be a JSON object");
	else if (jsonmp_pack(&pk, j) == -1)
		reply_error(r, 400, "bad_request", "unusable JSON");
	/* msgpack-c unpacks at most 32 levels; no request needs more. */
	else if (msgpack_unpack_next(&b->up, b->sb.data, b->sb.size, &off) !=
	    MSGPACK_UNPACK_SUCCESS)
		reply_error(r, 400, "bad_request",
		    "the request nests too deeply");
	else if (fields != NULL && fields_check(&b->up.data, fields, nfields,
	    why, sizeof(why)) == -1)
		reply_error(r, 400, "bad_request", "%s", why);
	else
		rc = 0;
	json_decref(j);
	return (rc);
}

static void
api_health(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	/* The same limits as "attached" and "started", and the REST ones. */
	reply_json(r, 200, json_pack(
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
api_metrics(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	char	*body;
	size_t	 len;

	if (CONN_RESTRICTED(c))
		reply_error(r, 403, "forbidden", "/metrics is for root "
		    "and token holders");
	else if ((body = metrics_render(&len)) == NULL)
		reply_error(r, 500, "internal", "out of memory");
	else
		reply_body(r, 200, "text/plain; version=0.0.4; charset=utf-8",
		    body, len)->owned = body;
}

/* A reply of GET /v1/sessions being sent: how far into its listing. */
struct list_reader {
	struct listing	*l;
	size_t		 off;
};

static size_t
api_list_read(void *arg, char *buf, size_t len)
{
	struct list_reader	*lr = arg;

	if (len > lr->l->len - lr->off)
		len = lr->l->len - lr->off;
	memcpy(buf, lr->l->text + lr->off, len);
	lr->off += len;
	return (len);
}

/* The listing is whole and stays while it is sent: no copy of it. */
static const char *
api_list_view(void *arg, size_t *len)
{
	struct list_reader	*lr = arg;

	*len = lr->l->len - lr->off;
	return (lr->l->text + lr->off);
}

static void
api_list_release(void *arg)
{
	struct list_reader	*lr = arg;

	registry_list_done(lr->l);
	free(lr);
}

/*
 * GET /v1/sessions[?limit=N[&after=ID]]: all sessions, or a page of at
 * most N after the id ID, so that a client of many sessions need not
 * take them all at once.
 */
static void
api_list(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	struct conn_source	 src = { 0 };
	struct list_reader	*lr;
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
			reply_error(r, 400, "bad_request", "'limit' must be a "
			    "number of sessions from 1 to %d", API_LIST_MAX);
			return;
		}
	}
	if ((n = httphead_query(c->h.query, "after", after,
	    sizeof(after))) != -1 && (limit == 0 || n <= 0 ||
	    !api_ref_valid(after))) {
		reply_error(r, 400, "bad_request", "'after' must be a "
		    "session id, and comes with 'limit'");
		return;
	}
	if ((lr = calloc(1, sizeof(*lr))) == NULL ||
	    (lr->l = registry_list(CONN_RESTRICTED(c) ? api_peer_owns :
	    NULL, c, after, (int)limit)) == NULL) {
		free(lr);
		reply_error(r, 500, "internal", "out of memory");
		return;
	}
	/* Sent from the listing itself, which may be shared: no copy of it. */
	src.read = api_list_read;
	src.view = api_list_view;
	src.free = api_list_release;
	src.arg = lr;
	reply_stream(r, 200, "application/json", lr->l->len, &src);
}

/* Resolve the user a process runs as; -1 with the reply if it may not. */
static int
api_user(struct conn *c, const char *name, struct passwd *out, char *buf,
    size_t buflen, struct reply *r)
{
	struct runas_policy	 p;
	enum runas_verdict	 v;

	p.lodged = geteuid();
	p.restricted = CONN_RESTRICTED(c);
	p.peer = c->peer_uid;
	if (pwcache_get(name[0] == '\0' ? NULL : name, runas_default(&p), out,
	    buf, buflen) == -1) {
		if (name[0] == '\0')
			reply_error(r, 500, "internal",
			    "lodged's own user has no passwd entry");
		else
			reply_error(r, 422, "spawn_failed",
			    "unknown user '%s'", name);
		return (-1);
	}
	if ((v = runas_check(&p, out->pw_uid)) != RUNAS_OK) {
		reply_error(r, 403, "forbidden", "%s", runas_why(v));
		return (-1);
	}
	return (0);
}

/* Whether the front may start one more session of req's size. */
static int
api_create_allowed(struct spawnreq *req, struct reply *r)
{
	size_t	held = registry_buffer_total();

	if (req->name[0] != '\0' && (registry_name_taken(req->name) ||
	    registry_find_id(req->name) != NULL))
		reply_error(r, 409, "conflict", "a session named '%s' "
		    "exists already", req->name);
	else if (registry_count() >= front->conf.max_sessions) {
		metrics_limit(L_MAX_SESSIONS);
		reply_error(r, 503, "unavailable", "too many sessions "
		    "(--max-sessions %d)", front->conf.max_sessions);
	} else if (held > front->conf.buffer_budget ||
	    req->buffer_size > front->conf.buffer_budget - held)
		reply_error(r, 503, "unavailable", "the buffer budget is "
		    "spent: %zu of %zu bytes (--buffer-budget) are held by "
		    "sessions, this one asks %zu", held,
		    front->conf.buffer_budget, req->buffer_size);
	else
		return (1);
	return (0);
}

/* POST /v1/sessions: answered by the new worker's "created". */
static void
api_create(struct conn *c, struct session *unused, const msgpack_object *o,
    struct reply *r)
{
	msgpack_packer	*pk;
	struct proto_out m;
	struct spawnreq	 req;
	struct passwd	 pw;
	struct session	*s;
	unsigned char	 raw[16];
	char		 why[512], id[64], pwbuf[4096];
	size_t		 i;
	int		 sp[2];

	if (spawnreq_decode(o, SPAWN_SESSION, front->conf.max_buffer, &req,
	    why, sizeof(why)) == -1) {
		reply_error(r, 400, "bad_request", "%s", why);
		return;
	}
	if (!api_create_allowed(&req, r) ||
	    api_user(c, req.user, &pw, pwbuf, sizeof(pwbuf), r) == -1)
		goto done;
	arc4random_buf(raw, sizeof(raw));
	for (i = 0; i < sizeof(raw); i++)
		snprintf(id + i * 2, 3, "%02x", raw[i]);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
	    sp) == -1) {
		reply_error(r, 503, "unavailable", "socketpair: %s",
		    strerror(errno));
		goto done;
	}
	if ((s = registry_add(id, req.name, sp[0])) == NULL) {
		close(sp[1]);
		reply_error(r, 503, "unavailable", "out of memory");
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
	msgpack_pack_object(pk, *o);
	if (spawner_send(&m, sp[1]) == -1) {
		registry_remove(s);
		reply_error(r, 503, "unavailable",
		    "cannot start a session worker");
		goto done;
	}
	c->creating = 1;
	registry_expect(s, c, REGISTRY_CREATE_MS);
	r->kind = REPLY_WAIT;
done:
	spawnreq_free(&req);
}

static void
api_exec(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	struct spawnreq	 req;
	struct passwd	 pw;
	char		 why[512], pwbuf[4096];

	if (spawnreq_decode(o, SPAWN_EXEC, 0, &req, why, sizeof(why)) == -1) {
		reply_error(r, 400, "bad_request", "%s", why);
		return;
	}
	if (api_user(c, req.user, &pw, pwbuf, sizeof(pwbuf), r) == 0)
		exec_start(c, o, &pw, &req, r);
	spawnreq_free(&req);
}

/*
 * Start a request to s's worker with a fresh id; NULL if it is marked
 * unresponsive (registry.c asks it, unprompted): 503 at once.
 */
static msgpack_packer *
api_ask(struct conn *c, struct session *s, struct proto_out *m,
    enum proto_type type, struct reply *r)
{
	char	why[128];

	if (!registry_answers(s)) {
		registry_unanswered(s, why, sizeof(why));
		reply_error(r, 503, "unavailable", "%s", why);
		return (NULL);
	}
	c->reqid = registry_next_id();
	mpack_kv_int(proto_begin(m, type), "id", c->reqid);
	return (&m->pk);
}

/* Send it: the worker's answer is the reply. */
static void
api_forward(struct conn *c, struct session *s, struct proto_out *m,
    struct reply *r)
{
	if (registry_request(s, c, m, -1) == -1)
		reply_error(r, 404, "not_found",
		    "session '%s' does not exist", c->ref);
	else
		r->kind = REPLY_WAIT;
}

static void
api_get(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	struct proto_out m;

	/* A worker that does not answer: what is known of it. */
	if (!registry_answers(s))
		reply_session(r, s);
	else if (api_ask(c, s, &m, PROTO_INFO, r) != NULL)
		api_forward(c, s, &m, r);
}

static void
api_delete(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	r->kind = REPLY_WAIT;
	registry_delete(s, c);
}

/*
 * GET /v1/sessions/{ref}/wait[?timeout=SECONDS]: the session object once
 * its process has exited, or at the timeout with the state it has then.
 */
static void
api_wait(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
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
			reply_error(r, 400, "bad_request", "'timeout' must be a "
			    "number of seconds from 0 to %d", API_WAIT_MAX);
			return;
		}
	}
	if ((int)(t * 1000) == 0 || strcmp(s->state, "exited") == 0)
		reply_session(r, s);
	else {
		registry_expect(s, c, (int)(t * 1000));
		r->kind = REPLY_WAIT;
	}
}

static void
api_signal(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	const msgpack_object	*v;
	struct proto_out	 m;
	msgpack_packer		*pk;

	if ((v = mpack_get(o, "signal")) == NULL ||
	    signame_from_object(v) == -1)
		reply_error(r, 400, "bad_request", "'signal' must be a signal "
		    "name such as \"INT\" or a number from 1 to 64");
	else if ((pk = api_ask(c, s, &m, PROTO_SIGNAL, r)) != NULL) {
		mpack_str(pk, "signal");
		msgpack_pack_object(pk, *v);
		api_forward(c, s, &m, r);
	}
}

/* The bytes of "dataBase64" into raw (b64len + 4 bytes); -1 if invalid. */
static int
api_base64(const char *b64, size_t b64len, char *raw)
{
	char	*tmp;
	int	 n;

	if (!base64_valid(b64, b64len) || (tmp = strndup(b64, b64len)) == NULL)
		return (-1);
	n = lws_b64_decode_string_len(tmp, (int)b64len, raw, (int)b64len + 4);
	free(tmp);
	return (n < 0 || (b64len > 0 && n == 0) ? -1 : n);
}

static void
api_input(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	struct proto_out m;
	msgpack_packer	*pk;
	const char	*p, *b64;
	size_t		 len, b64len;
	char		*raw = NULL;
	int		 has, hasb64, n;

	has = mpack_get_str(o, "data", &p, &len);
	hasb64 = mpack_get_str(o, "dataBase64", &b64, &b64len);
	if (has == -1 || hasb64 == -1 || has + hasb64 != 1) {
		reply_error(r, 400, "bad_request", "give one of 'data' "
		    "(a string) or 'dataBase64' (a base64 string)");
		return;
	}
	if (hasb64) {
		if ((raw = malloc(b64len + 4)) == NULL) {
			reply_error(r, 503, "unavailable", "out of memory");
			return;
		}
		if ((n = api_base64(b64, b64len, raw)) == -1) {
			reply_error(r, 400, "bad_request",
			    "'dataBase64' is not valid base64");
			goto out;
		}
		p = raw;
		len = (size_t)n;
	}
	if ((pk = api_ask(c, s, &m, PROTO_INPUT, r)) != NULL) {
		mpack_kv_bin(pk, "data", p, len);
		api_forward(c, s, &m, r);
	}
out:
	free(raw);
}

static void
api_resize(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	struct proto_out m;
	msgpack_packer	*pk;
	int64_t		 cols, rows;

	if (mpack_get_int(o, "cols", 1, SPAWNREQ_SIZE_MAX, &cols) != 1 ||
	    mpack_get_int(o, "rows", 1, SPAWNREQ_SIZE_MAX, &rows) != 1)
		reply_error(r, 400, "bad_request", "'cols' and 'rows' must be "
		    "integers from 1 to %d", SPAWNREQ_SIZE_MAX);
	else if ((pk = api_ask(c, s, &m, PROTO_RESIZE, r)) != NULL) {
		mpack_kv_int(pk, "cols", cols);
		mpack_kv_int(pk, "rows", rows);
		api_forward(c, s, &m, r);
	}
}

/* What a worker's answer to c's request (o) means to the client. */
void
api_worker_reply(struct conn *c, struct session *s, const msgpack_object *o,
    struct reply *r)
{
	const char	*code = "internal", *msg = "worker failed";
	char		 codebuf[64];
	size_t		 len, msglen = strlen(msg);
	int64_t		 status = 500;

	(void)mpack_get_int(o, "status", 100, 599, &status);
	if (mpack_get_str(o, "code", &code, &len) == 1) {
		snprintf(codebuf, sizeof(codebuf), "%.*s", (int)len, code);
		code = codebuf;
	}
	(void)mpack_get_str(o, "message", &msg, &msglen);
	if (c->creating) {
		c->creating = 0;
		if (status == 201 && s != NULL && s->json != NULL) {
			registry_set_ready(s);
			metrics_count(M_SESSIONS_CREATED);
			log_info("session %s%s%s: created", s->id,
			    s->name[0] != '\0' ? " " : "", s->name);
			reply_session(r, s)->status = 201;
			return;
		}
		if (s != NULL)
			registry_remove(s);
		reply_error(r, (int)status, code, "%.*s", (int)msglen, msg);
	} else if (status >= 300)
		reply_error(r, (int)status, code, "%.*s", (int)msglen, msg);
	else if (c->route == ROUTE_SESSION_GET &&
	    mpack_get(o, "session") == NULL)
		reply_error(r, 500, "internal", "no session");
	/* The registry has just taken the reply's session object. */
	else if (c->route == ROUTE_SESSION_GET)
		reply_session(r, s);
	else {
		if (c->route == ROUTE_SESSION_DELETE) {
			log_info("session %s: deleted", s->id);
			registry_remove(s);
		}
		reply_empty(r, 204);
	}
}

/* A WebSocket upgrade or a log request: check it, then hand it over. */
static void
api_handoff(struct conn *c, struct reply *r)
{
	struct session		*s;
	struct httphead_attach	 q;
	const char		*why;
	char			 whybuf[256];

	c->pass_to = NULL;
	if (c->route == ROUTE_EXEC_STREAM && c->h.upgrade) {
		r->kind = REPLY_HANDOFF;
		return;
	}
	if (c->route != ROUTE_SESSION_ATTACH && c->route != ROUTE_SESSION_LOG)
		reply_error(r, 400, "bad_request", "WebSocket upgrades are for "
		    "/v1/sessions/{ref}/attach and /v1/exec/stream");
	/* The worker parses the query again, with the same function. */
	else if (httphead_attach_query(c->h.query, &q, &why) == -1)
		reply_error(r, 400, "bad_request", "%s", why);
	else if (c->route == ROUTE_SESSION_ATTACH && !c->h.upgrade)
		reply_error(r, 400, "bad_request", "attach is a WebSocket: "
		    "send Upgrade: websocket");
	else if (c->route == ROUTE_SESSION_LOG && c->h.upgrade)
		reply_error(r, 400, "bad_request",
		    "log is plain HTTP, not a WebSocket");
	else if ((s = api_session(c, r)) == NULL)
		return;
	else if (registry_handoff_check(s, whybuf, sizeof(whybuf)) == -1)
		reply_error(r, 503, "unavailable", "%s", whybuf);
	else if (c->route == ROUTE_SESSION_ATTACH && s->json != NULL &&
	    s->clients >= front->conf.max_clients) {
		metrics_limit(L_MAX_CLIENTS);
		reply_error(r, 503, "unavailable", "session '%s' has %d "
		    "clients already (--max-clients)", c->ref,
		    front->conf.max_clients);
	} else {
		c->pass_to = s;
		r->kind = REPLY_HANDOFF;
	}
}

/* Who may ask at all: the token, then the Host and Origin fields. */
static int
api_refused(struct conn *c, struct reply *r)
{
	const char	*v;

	if (!c->l->is_unix && !auth_check(&c->h))
		reply_error(r, 401, "unauthorized", "missing or wrong token");
	else if (!auth_host_allowed(c->l, &c->h)) {
		v = httphead_field(&c->h, "Host");
		reply_error(r, 403, "forbidden", "Host '%.64s' does not name "
		    "this server (--allow-host)", v != NULL ? v : "");
	} else if (!auth_origin_allowed(c->l, &c->h))
		reply_error(r, 403, "forbidden", "origin not allowed "
		    "(--allow-origin)");
	else
		return (0);
	return (1);
}

/*
 * The head is complete: who asks, the route, then hand off or read the
 * body.  A refusal here closes the connection after its reply, unread,
 * so a client without the token costs the front its head and no more.
 */
void
api_head(struct conn *c, struct reply *r)
{
	c->route = httphead_route(c->h.method, c->h.path, c->ref,
	    sizeof(c->ref));
	/* The page's own files are public (web.c); what it calls is not. */
	if (c->route == ROUTE_NONE && web_request(c, r))
		return;
	if (api_refused(c, r))
		r->close = 1;
	else if (c->h.upgrade || c->route == ROUTE_SESSION_LOG ||
	    c->route == ROUTE_SESSION_ATTACH) {
		api_handoff(c, r);
		r->close = 1;	/* if refused: the stream is unusable */
	} else if (c->route == ROUTE_NONE)
		reply_error(r, 404, "not_found", "no such path: %s", c->h.path);
	else if (c->route == ROUTE_BAD_METHOD)
		reply_error(r, 405, "method_not_allowed", "%s is not allowed "
		    "on %s", c->h.method, c->h.path);
	else if (c->route == ROUTE_EXEC_STREAM)
		reply_error(r, 400, "bad_request", "exec/stream is a "
		    "WebSocket: send Upgrade: websocket");
	else if (!auth_body_type_allowed(c->l, &c->h))
		reply_error(r, 415, "bad_request", "without a token, a request "
		    "body must be sent as Content-Type: application/json")->
		    close = 1;
	else if (c->h.chunked)
		reply_error(r, 411, "bad_request", "chunked bodies are not "
		    "supported: send Content-Length");
	else if (c->h.content_length > (int64_t)front->conf.max_body)
		reply_error(r, 413, "payload_too_large", "the body is "
		    "larger than %zu bytes", front->conf.max_body);
	else
		r->kind = REPLY_BODY;
}

/* The calls answered once the body is in, in the order they check. */
static const struct api_call {
	void	(*fn)(struct conn *, struct session *,
		    const msgpack_object *, struct reply *);
	int			 session;	/* on the session {ref} */
	int			 body;		/* a JSON object */
	const struct field	*fields;	/* ... with these fields */
	size_t			 nfields;
} api_calls[ROUTE_COUNT] = {
	[ROUTE_HEALTH] =		{ api_health, 0, 0, NULL, 0 },
	[ROUTE_METRICS] =		{ api_metrics, 0, 0, NULL, 0 },
	[ROUTE_SESSIONS_LIST] =		{ api_list, 0, 0, NULL, 0 },
	[ROUTE_SESSIONS_CREATE] =	{ api_create, 0, 1, API_OBJECT },
	[ROUTE_EXEC] =			{ api_exec, 0, 1, API_OBJECT },
	[ROUTE_SESSION_GET] =		{ api_get, 1, 0, NULL, 0 },
	[ROUTE_SESSION_DELETE] =	{ api_delete, 1, 0, NULL, 0 },
	[ROUTE_SESSION_WAIT] =		{ api_wait, 1, 0, NULL, 0 },
	[ROUTE_SESSION_SIGNAL] =	{ api_signal, 1, 1,
					    API_FIELDS(api_signal_fields) },
	[ROUTE_SESSION_INPUT] =		{ api_input, 1, 1,
					    API_FIELDS(api_input_fields) },
	[ROUTE_SESSION_RESIZE] =	{ api_resize, 1, 1,
					    API_FIELDS(api_resize_fields) },
};

/* The body is in: the call's answer, or REPLY_WAIT for a worker's. */
void
api_request(struct conn *c, struct reply *r)
{
	const struct api_call	*call = &api_calls[c->route];
	struct session		*s = NULL;
	struct api_body		 b;

	if (call->fn == NULL) {
		reply_error(r, 404, "not_found", "no such path");
		return;
	}
	if (call->session && (s = api_session(c, r)) == NULL)
		return;
	msgpack_sbuffer_init(&b.sb);
	msgpack_unpacked_init(&b.up);
	if (!call->body || api_body_object(c, &b, call->fields,
	    call->nfields, r) == 0)
		call->fn(c, s, &b.up.data, r);
	msgpack_unpacked_destroy(&b.up);
	msgpack_sbuffer_destroy(&b.sb);
}
