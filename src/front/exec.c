/*
 * exec.c: POST /v1/exec, a command run to completion with buffered output.
 *
 * The template runs the command (worker/execrun.c): it writes the stdin,
 * reads the output, enforces the timeout and sends the output in "output"
 * frames, then "exited" (or "spawned" with an error when the command could
 * not start).  The front only keeps the output for the reply: an exec call
 * costs it no descriptor.  A client that goes away takes its command with
 * it: the template sends HUP, then KILL.
 *
 * Memory: a call reserves room for twice its maxOutputBytes (stdout and
 * stderr) from --exec-memory before it runs, or is refused; the reply is
 * encoded piece by piece as the socket takes it (outjson), so a call never
 * holds more than its output and one piece, and gives it all back when the
 * reply is out or its connection gone (--write-timeout).
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <malloc.h>
#include <pwd.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "metrics.h"
#include "log.h"
#include "mpack.h"
#include "outjson.h"
#include "signame.h"
#include "spawnreq.h"

#define EXEC_BUF_FIRST		65536
#define EXEC_TRIM_MIN		(1024 * 1024)	/* give a big output back */

struct exec_buf {
	char		*buf;
	size_t		 len;
	size_t		 size;
};

/* The parts of a reply, in order. */
enum exec_part {
	EXEC_PART_HEAD,		/* {"stdout":" */
	EXEC_PART_STDOUT,
	EXEC_PART_MID,		/* ","stderr":" */
	EXEC_PART_STDERR,
	EXEC_PART_TAIL,		/* ","exitCode":...} */
	EXEC_PART_END,
};

struct exec_call {
	LIST_ENTRY(exec_call)	 entry;
	int64_t			 id;
	struct conn		*conn;
	int			 base64;
	size_t			 max_output;
	uint64_t		 t0;		/* metrics_now() at the start */
	struct exec_buf		 out, err;
	size_t			 reserved;	/* of --exec-memory */

	/* The reply, once the command is done. */
	enum exec_part		 part;
	size_t			 part_off;
	struct outjson		 enc;
	char			 tail[256];
	size_t			 tail_len;
};

static LIST_HEAD(, exec_call) exec_calls = LIST_HEAD_INITIALIZER(exec_calls);
static int64_t	exec_ids;
static size_t	exec_reserved;	/* by all calls, of --exec-memory */

static const char exec_head[] = "{\"stdout\":\"";
static const char exec_mid[] = "\",\"stderr\":\"";

static struct exec_call *
exec_find(const msgpack_object *o)
{
	struct exec_call	*e;
	int64_t			 id = 0;

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	LIST_FOREACH(e, &exec_calls, entry)
		if (e->id == id)
			return (e);
	return (NULL);
}

/* Give back what a call held; e is off the list. */
static void
exec_release(void *arg)
{
	struct exec_call	*e = arg;
	size_t			 held = e->out.size + e->err.size;

	exec_reserved -= e->reserved;
	free(e->out.buf);
	free(e->err.buf);
	free(e);
	/* The heap would keep freed megabytes resident. */
	if (held >= EXEC_TRIM_MIN)
		malloc_trim(0);
}

static void
exec_unlist(struct exec_call *e)
{
	if (e->conn != NULL)
		e->conn->exec = NULL;
	LIST_REMOVE(e, entry);
}

static void
exec_free(struct exec_call *e)
{
	exec_unlist(e);
	exec_release(e);
}

/* Add the bytes of key (a bin) to b, never past the call's maximum. */
static int
exec_append(struct exec_call *e, struct exec_buf *b, const msgpack_object *o,
    const char *key)
{
	const msgpack_object	*v = mpack_get(o, key);
	size_t			 n, size;
	char			*nb;

	if (v == NULL)
		return (0);
	if (v->type != MSGPACK_OBJECT_BIN)
		return (-1);
	n = v->via.bin.size;
	if (n > e->max_output - b->len)
		n = e->max_output - b->len;
	if (n == 0)
		return (0);
	if (b->len + n > b->size) {
		/* Doubling, within the maximum: few copies, little slack. */
		size = b->size == 0 ? EXEC_BUF_FIRST : b->size * 2;
		while (size < b->len + n)
			size *= 2;
		if (size > e->max_output)
			size = e->max_output;
		if ((nb = realloc(b->buf, size)) == NULL)
			return (-1);
		b->buf = nb;
		b->size = size;
	}
	memcpy(b->buf + b->len, v->via.bin.ptr, n);
	b->len += n;
	return (0);
}

/* The next bytes of the reply into dst; conn.c asks until it is all out. */
static size_t
exec_reply_read(void *arg, char *dst, size_t len)
{
	struct exec_call	*e = arg;
	const char		*lit;
	size_t			 w = 0, n, lit_len;

	while (w < len && e->part != EXEC_PART_END) {
		if (e->part == EXEC_PART_STDOUT || e->part == EXEC_PART_STDERR) {
			if (len - w < OUTJSON_UNIT_MAX)
				break;
			if ((n = outjson_read(&e->enc, dst + w, len - w)) > 0) {
				w += n;
				continue;
			}
			e->part++;
			continue;
		}
		lit = e->part == EXEC_PART_HEAD ? exec_head :
		    e->part == EXEC_PART_MID ? exec_mid : e->tail;
		lit_len = lit == e->tail ? e->tail_len : strlen(lit);
		n = lit_len - e->part_off;
		if (n > len - w)
			n = len - w;
		memcpy(dst + w, lit + e->part_off, n);
		w += n;
		if ((e->part_off += n) < lit_len)
			continue;
		e->part_off = 0;
		e->part++;
		if (e->part == EXEC_PART_STDOUT)
			outjson_init(&e->enc, e->out.buf, e->out.len, e->base64);
		else if (e->part == EXEC_PART_STDERR)
			outjson_init(&e->enc, e->err.buf, e->err.len, e->base64);
	}
	return (w);
}

void
exec_output(void *arg, const msgpack_object *o, int *fds)
{
	struct exec_call	*e;

	if ((e = exec_find(o)) == NULL)
		return;
	if (exec_append(e, &e->out, o, "stdout") == -1 ||
	    exec_append(e, &e->err, o, "stderr") == -1)
		log_warnx("exec %lld: output dropped (out of memory or a bad "
		    "frame)", (long long)e->id);
}

/* The command ended: answer the client, the reply encoded as it goes. */
void
exec_exited(void *arg, const msgpack_object *o, int *fds)
{
	struct exec_call	*e;
	struct conn		*c;
	struct conn_source	 src = { 0 };
	struct reply		 r;
	const char		*sig;
	double			 ms;
	int64_t			 st = 0;
	int			 timed_out = 0, truncated = 0, n;
	char			 code[32];
	size_t			 len;

	if ((e = exec_find(o)) == NULL)
		return;
	ms = (double)(metrics_now() - e->t0) / 1000.0;
	exec_output(arg, o, fds);
	(void)mpack_get_int(o, "status", INT32_MIN, INT32_MAX, &st);
	(void)mpack_get_bool(o, "timedOut", &timed_out);
	(void)mpack_get_bool(o, "truncated", &truncated);
	if ((c = e->conn) == NULL) {
		exec_free(e);
		return;
	}
	exec_unlist(e);
	if (WIFEXITED(st))
		snprintf(code, sizeof(code), "%d", (int)WEXITSTATUS(st));
	else
		strlcpy(code, "null", sizeof(code));
	sig = WIFSIGNALED(st) ? signame_name(WTERMSIG(st)) : NULL;
	/* Signal names are ASCII letters, digits and '+': no escaping. */
	n = snprintf(e->tail, sizeof(e->tail), "\",\"exitCode\":%s,"
	    "\"signal\":%s%s%s,\"timedOut\":%s,\"truncated\":%s,"
	    "\"durationMs\":%lld}", code, sig != NULL ? "\"" : "",
	    sig != NULL ? sig : "null", sig != NULL ? "\"" : "",
	    timed_out ? "true" : "false", truncated ? "true" : "false",
	    (long long)(ms + 0.5));
	e->tail_len = (size_t)n;
	len = sizeof(exec_head) - 1 + outjson_length(e->out.buf, e->out.len,
	    e->base64) + sizeof(exec_mid) - 1 + outjson_length(e->err.buf,
	    e->err.len, e->base64) + e->tail_len;
	src.read = exec_reply_read;
	src.free = exec_release;
	src.arg = e;
	conn_reply(c, reply_stream(&r, 200, "application/json", len, &src));
}

/* The template could not start the command, or a limit refused it. */
void
exec_spawned(void *arg, const msgpack_object *o, int *fds)
{
	struct exec_call	*e;
	struct reply		 r;
	const char		*msg;
	size_t			 len;
	int64_t			 status = 422;

	if ((e = exec_find(o)) == NULL)
		return;
	if (mpack_get_str(o, "message", &msg, &len) != 1) {
		msg = "cannot start the command";
		len = strlen(msg);
	}
	(void)mpack_get_int(o, "status", 400, 599, &status);
	if (e->conn != NULL)
		conn_reply(e->conn, reply_error(&r, (int)status, status == 503 ?
		    "unavailable" : "spawn_failed", "%.*s", (int)len, msg));
	exec_free(e);
}

/* The template went away: every call in flight fails. */
void
exec_template_lost(void)
{
	struct exec_call	*e;
	struct reply		 r;

	while ((e = LIST_FIRST(&exec_calls)) != NULL) {
		if (e->conn != NULL)
			conn_reply(e->conn, reply_error(&r, 500, "internal",
			    "the worker template exited"));
		exec_free(e);
	}
}

/* The client went away: its command goes too (HUP, then KILL). */
void
exec_conn_closed(struct exec_call *e)
{
	struct proto_out	 m;
	msgpack_packer		*pk = proto_begin(&m, PROTO_KILL);

	e->conn = NULL;
	mpack_kv_int(pk, "id", e->id);
	mpack_kv_int(pk, "signal", SIGHUP);
	(void)spawner_send(&m, -1);
}

/* Start the call: the template's "exited" or "spawned" answers it. */
void
exec_start(struct conn *c, const msgpack_object *o, const struct passwd *pw,
    struct spawnreq *req, struct reply *r)
{
	struct exec_call	*e;
	struct proto_out	 m;
	msgpack_packer		*pk;

	if ((e = calloc(1, sizeof(*e))) == NULL) {
		reply_error(r, 503, "unavailable", "out of memory");
		return;
	}
	e->id = ++exec_ids;
	e->conn = c;
	e->base64 = req->base64;
	e->max_output = front->conf.default_output;
	if (req->max_output > 0)
		e->max_output = (size_t)req->max_output;
	if (e->max_output > front->conf.max_output)
		e->max_output = front->conf.max_output;
	e->reserved = e->max_output * 2;
	if (e->reserved > front->conf.exec_memory - exec_reserved) {
		reply_error(r, 503, "unavailable", "the exec calls in flight "
		    "hold their output budget (--exec-memory %zu bytes, twice "
		    "maxOutputBytes a call): retry, or ask for less "
		    "maxOutputBytes", front->conf.exec_memory);
		free(e);
		return;
	}
	pk = proto_begin(&m, PROTO_EXEC);
	mpack_kv_int(pk, "id", e->id);
	mpack_kv_int(pk, "maxOutput", (int64_t)e->max_output);
	front_pack_user(pk, pw);
	if (peer_pack_limits(c, pk) == -1) {
		proto_free(&m);
		reply_error(r, 503, "unavailable", "cannot read the process "
		    "limit of the connecting process");
		free(e);
		return;
	}
	mpack_str(pk, "req");
	msgpack_pack_object(pk, *o);
	if (spawner_send(&m, -1) == -1) {
		reply_error(r, 503, "unavailable",
		    "the worker template does not answer");
		free(e);
		return;
	}
	exec_reserved += e->reserved;
	e->t0 = metrics_now();
	LIST_INSERT_HEAD(&exec_calls, e, entry);
	c->exec = e;
	r->kind = REPLY_WAIT;
	metrics_count(M_EXECS_STARTED);
}
