/*
 * exec.c: POST /v1/exec, a command run to completion with buffered output.
 *
 * The template runs the command (worker/execrun.c): it writes the stdin,
 * reads the output, enforces the timeout and sends the output in "output"
 * frames, then "exited" (or "spawned" with an error when the command could
 * not start).  The front only keeps the output for the reply: an exec call
 * costs it no descriptor.  A client that goes away takes its command with
 * it: the template sends HUP, then KILL.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <pwd.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "front.h"
#include "metrics.h"
#include "log.h"
#include "mpack.h"
#include "signame.h"
#include "spawnreq.h"
#include "utf8.h"

struct exec_buf {
	char		*buf;
	size_t		 len;
};

struct exec_call {
	LIST_ENTRY(exec_call)	 entry;
	int64_t			 id;
	struct conn		*conn;
	int			 base64;
	size_t			 max_output;
	struct timespec		 t0;
	struct exec_buf		 out, err;
};

static LIST_HEAD(, exec_call) exec_calls = LIST_HEAD_INITIALIZER(exec_calls);
static int64_t	exec_ids;

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

static void
exec_free(struct exec_call *e)
{
	if (e->conn != NULL)
		e->conn->exec = NULL;
	LIST_REMOVE(e, entry);
	free(e->out.buf);
	free(e->err.buf);
	free(e);
}

/* Add the bytes of key (a bin) to b, never past the call's maximum. */
static int
exec_append(struct exec_call *e, struct exec_buf *b, const msgpack_object *o,
    const char *key)
{
	const msgpack_object	*v = mpack_get(o, key);
	size_t			 n;
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
	if ((nb = realloc(b->buf, b->len + n)) == NULL)
		return (-1);
	memcpy(nb + b->len, v->via.bin.ptr, n);
	b->buf = nb;
	b->len += n;
	return (0);
}

static json_t *
exec_json_output(struct exec_call *e, struct exec_buf *b)
{
	json_t	*j;
	char	*s;
	size_t	 n;

	if (b->len == 0)
		return (json_string(""));
	if (e->base64) {
		n = (b->len + 2) / 3 * 4 + 2;
		if ((s = malloc(n)) == NULL)
			return (NULL);
		if (lws_b64_encode_string(b->buf, (int)b->len, s, (int)n) < 0) {
			free(s);
			return (NULL);
		}
		n = strlen(s);
	} else if ((s = utf8_sanitize((unsigned char *)b->buf, b->len,
	    &n)) == NULL)
		return (NULL);
	/* utf8_sanitize made it valid: no second check. */
	j = json_stringn_nocheck(s, n);
	free(s);
	return (j);
}

void
exec_output(const msgpack_object *o)
{
	struct exec_call	*e;

	if ((e = exec_find(o)) == NULL)
		return;
	if (exec_append(e, &e->out, o, "stdout") == -1 ||
	    exec_append(e, &e->err, o, "stderr") == -1)
		log_warnx("exec %lld: output dropped (out of memory or a bad "
		    "frame)", (long long)e->id);
}

/* The command ended: answer the client. */
void
exec_exited(const msgpack_object *o)
{
	struct exec_call	*e;
	struct timespec		 t1;
	const msgpack_object	*v;
	json_t			*r, *out, *err;
	double			 ms;
	int64_t			 st = 0;
	int			 timed_out = 0, truncated = 0;

	if ((e = exec_find(o)) == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	exec_output(o);
	(void)mpack_get_int(o, "status", INT32_MIN, INT32_MAX, &st);
	if ((v = mpack_get(o, "timedOut")) != NULL &&
	    v->type == MSGPACK_OBJECT_BOOLEAN)
		timed_out = v->via.boolean;
	if ((v = mpack_get(o, "truncated")) != NULL &&
	    v->type == MSGPACK_OBJECT_BOOLEAN)
		truncated = v->via.boolean;
	if (e->conn == NULL) {
		exec_free(e);
		return;
	}
	ms = (double)(t1.tv_sec - e->t0.tv_sec) * 1000.0 +
	    (double)(t1.tv_nsec - e->t0.tv_nsec) / 1e6;
	out = exec_json_output(e, &e->out);
	err = exec_json_output(e, &e->err);
	r = json_pack("{s:o*,s:o*,s:o,s:o,s:b,s:b,s:i}",
	    "stdout", out, "stderr", err,
	    "exitCode", WIFEXITED(st) ? json_integer(WEXITSTATUS(st)) :
	    json_null(),
	    "signal", WIFSIGNALED(st) && signame_name(WTERMSIG(st)) != NULL ?
	    json_string(signame_name(WTERMSIG(st))) : json_null(),
	    "timedOut", timed_out,
	    "truncated", truncated,
	    "durationMs", (json_int_t)(ms + 0.5));
	if (r == NULL || out == NULL || err == NULL) {
		json_decref(r);
		conn_reply_error(e->conn, 500, "internal", "out of memory");
	} else
		conn_reply_json(e->conn, 200, r);
	exec_free(e);
}

/* The template could not start the command, or a limit refused it. */
void
exec_spawned(const msgpack_object *o)
{
	struct exec_call	*e;
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
		conn_reply_error(e->conn, (int)status, status == 503 ?
		    "unavailable" : "spawn_failed", "%.*s", (int)len, msg);
	exec_free(e);
}

/* The template went away: every call in flight fails. */
void
exec_template_lost(void)
{
	struct exec_call	*e;

	while ((e = LIST_FIRST(&exec_calls)) != NULL) {
		if (e->conn != NULL)
			conn_reply_error(e->conn, 500, "internal",
			    "the worker template exited");
		exec_free(e);
	}
}

/* The client went away: its command goes too (HUP, then KILL). */
void
exec_conn_closed(struct exec_call *e)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;

	e->conn = NULL;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	mpack_kv_str(&pk, "type", "kill");
	mpack_kv_int(&pk, "id", e->id);
	mpack_kv_int(&pk, "signal", SIGHUP);
	(void)spawner_send(&sb, -1);
	msgpack_sbuffer_destroy(&sb);
}

void
exec_start(struct conn *c, const msgpack_object *o, const struct passwd *pw,
    struct spawnreq *req)
{
	struct exec_call	*e;
	msgpack_sbuffer		 sb;
	msgpack_packer		 pk;
	int			 r;

	if ((e = calloc(1, sizeof(*e))) == NULL) {
		conn_reply_error(c, 503, "unavailable", "out of memory");
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
	clock_gettime(CLOCK_MONOTONIC, &e->t0);

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 12);
	mpack_kv_str(&pk, "type", "exec");
	mpack_kv_int(&pk, "id", e->id);
	mpack_kv_int(&pk, "maxOutput", (int64_t)e->max_output);
	mpack_kv_int(&pk, "uid", pw->pw_uid);
	mpack_kv_int(&pk, "gid", pw->pw_gid);
	mpack_kv_str(&pk, "user", pw->pw_name);
	mpack_kv_str(&pk, "home", pw->pw_dir);
	mpack_kv_str(&pk, "shell", pw->pw_shell != NULL &&
	    pw->pw_shell[0] != '\0' ? pw->pw_shell : "/bin/sh");
	if (conn_pack_peer(c, &pk, c->l->is_unix && c->peer_uid != 0) ==
	    -1) {
		msgpack_sbuffer_destroy(&sb);
		free(e);
		conn_reply_error(c, 503, "unavailable", "cannot read the "
		    "process limit of the connecting process");
		return;
	}
	mpack_str(&pk, "req");
	msgpack_pack_object(&pk, *o);
	r = spawner_send(&sb, -1);
	msgpack_sbuffer_destroy(&sb);
	if (r == -1) {
		free(e);
		conn_reply_error(c, 503, "unavailable", "the worker template "
		    "does not answer");
		return;
	}
	LIST_INSERT_HEAD(&exec_calls, e, entry);
	c->exec = e;
	c->state = CONN_WAIT;
	metrics_count(M_EXECS_STARTED);
}
