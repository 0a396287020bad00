/*
 * exec.c: POST /v1/exec, a command run to completion with buffered output.
 *
 * The front makes the pipes; the worker template starts the command on them
 * (vfork, no worker process per call) and reports its exit status, or that
 * it could not start it.  The front reads both pipes to EOF, keeping at most
 * maxOutputBytes of each and dropping the rest (the child is never left
 * blocked on a full pipe), writes the request's stdin, and enforces the
 * timeout: TERM to the process group, KILL after a grace time.  A client
 * that goes away takes its command with it (HUP, then KILL).
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <pwd.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "front.h"
#include "log.h"
#include "rawio.h"
#include "mpack.h"
#include "signame.h"
#include "spawnreq.h"
#include "utf8.h"

#define EXEC_DRAIN_MS		250	/* grandchildren holding the pipes */
#define EXEC_KILL_GRACE_MS	2000	/* TERM or HUP, then KILL */
#define EXEC_READ_CHUNK		65536

struct exec_call;

struct exec_pipe {
	struct front_fd		 ffd;
	struct exec_call	*call;
	struct lws		*wsi;
	int			 fd;
	int			 open;
	char			*buf;
	size_t			 len;
	size_t			 cap;
	int			 truncated;
};

struct exec_call {
	LIST_ENTRY(exec_call)	 entry;
	int64_t			 id;
	struct conn		*conn;
	int			 spawned;
	int			 exited;
	int			 status;
	int			 timed_out;
	int			 killing;
	int			 draining;
	int			 base64;
	size_t			 max_output;
	double			 timeout;
	struct timespec		 t0;
	struct timespec		 t1;
	struct exec_pipe	 out, err, in;
	char			*stdin_data;
	size_t			 stdin_len;
	size_t			 stdin_off;
	lws_sorted_usec_list_t	 sul_timeout;
	lws_sorted_usec_list_t	 sul_drain;
	lws_sorted_usec_list_t	 sul_kill;
};

static LIST_HEAD(, exec_call) exec_calls = LIST_HEAD_INITIALIZER(exec_calls);
static int64_t	exec_ids;

static struct exec_call *
exec_find(int64_t id)
{
	struct exec_call	*e;

	LIST_FOREACH(e, &exec_calls, entry)
		if (e->id == id)
			return (e);
	return (NULL);
}

static void
exec_pipe_close(struct exec_pipe *p)
{
	if (p->wsi != NULL) {
		lws_set_opaque_user_data(p->wsi, NULL);
		lws_set_timeout(p->wsi, 1, LWS_TO_KILL_ASYNC);
		p->wsi = NULL;
	} else if (p->fd != -1)
		close(p->fd);
	p->fd = -1;
	p->open = 0;
}

static void
exec_free(struct exec_call *e)
{
	lws_sul_cancel(&e->sul_timeout);
	lws_sul_cancel(&e->sul_drain);
	lws_sul_cancel(&e->sul_kill);
	exec_pipe_close(&e->out);
	exec_pipe_close(&e->err);
	exec_pipe_close(&e->in);
	if (e->conn != NULL)
		e->conn->exec = NULL;
	LIST_REMOVE(e, entry);
	free(e->out.buf);
	free(e->err.buf);
	free(e->stdin_data);
	free(e);
}

static void
exec_signal(struct exec_call *e, int sig)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	mpack_kv_str(&pk, "type", "kill");
	mpack_kv_int(&pk, "id", e->id);
	mpack_kv_int(&pk, "signal", sig);
	(void)spawner_send(&sb, -1);
	msgpack_sbuffer_destroy(&sb);
}

static void
exec_kill_cb(lws_sorted_usec_list_t *sul)
{
	struct exec_call	*e = lws_container_of(sul, struct exec_call,
				    sul_kill);

	if (!e->exited)
		exec_signal(e, SIGKILL);
}

/* Start the escalation: sig now, KILL after the grace time. */
static void
exec_terminate(struct exec_call *e, int sig)
{
	if (e->killing || e->exited)
		return;
	e->killing = 1;
	exec_signal(e, sig);
	lws_sul_schedule(front->ctx, 0, &e->sul_kill, exec_kill_cb,
	    EXEC_KILL_GRACE_MS * LWS_US_PER_MS);
}

static void
exec_timeout_cb(lws_sorted_usec_list_t *sul)
{
	struct exec_call	*e = lws_container_of(sul, struct exec_call,
				    sul_timeout);

	if (e->exited)
		return;
	e->timed_out = 1;
	exec_terminate(e, SIGTERM);
}

static json_t *
exec_output(struct exec_call *e, struct exec_pipe *p)
{
	json_t	*j;
	char	*s;
	size_t	 n;

	if (p->len == 0)
		return (json_string(""));
	if (e->base64) {
		n = (p->len + 2) / 3 * 4 + 2;
		if ((s = malloc(n)) == NULL)
			return (NULL);
		if (lws_b64_encode_string(p->buf != NULL ? p->buf : "",
		    (int)p->len, s, (int)n) < 0) {
			free(s);
			return (NULL);
		}
		n = strlen(s);
	} else if ((s = utf8_sanitize((unsigned char *)(p->buf != NULL ?
	    p->buf : ""), p->len, &n)) == NULL)
		return (NULL);
	/* utf8_sanitize made it valid: no second check. */
	j = json_stringn_nocheck(s, n);
	free(s);
	return (j);
}

/* Exited and drained: answer the client. */
static void
exec_finish(struct exec_call *e)
{
	json_t		*r, *out, *err;
	double		 ms;
	int		 st = e->status;

	if (e->out.open || e->err.open) {
		/* The deadline passed: take what is buffered, then stop. */
		exec_pipe_close(&e->out);
		exec_pipe_close(&e->err);
	}
	if (e->conn == NULL) {
		exec_free(e);
		return;
	}
	ms = (double)(e->t1.tv_sec - e->t0.tv_sec) * 1000.0 +
	    (double)(e->t1.tv_nsec - e->t0.tv_nsec) / 1e6;
	out = exec_output(e, &e->out);
	free(e->out.buf);
	e->out.buf = NULL;
	err = exec_output(e, &e->err);
	free(e->err.buf);
	e->err.buf = NULL;
	r = json_pack("{s:o*,s:o*,s:o,s:o,s:b,s:b,s:i}",
	    "stdout", out, "stderr", err,
	    "exitCode", WIFEXITED(st) ? json_integer(WEXITSTATUS(st)) :
	    json_null(),
	    "signal", WIFSIGNALED(st) && signame_name(WTERMSIG(st)) != NULL ?
	    json_string(signame_name(WTERMSIG(st))) : json_null(),
	    "timedOut", e->timed_out,
	    "truncated", e->out.truncated || e->err.truncated,
	    "durationMs", (json_int_t)(ms + 0.5));
	if (r == NULL || out == NULL || err == NULL) {
		json_decref(r);
		conn_reply_error(e->conn, 500, "internal", "out of memory");
	} else
		conn_reply_json(e->conn, 200, r);
	exec_free(e);
}

static void
exec_drain_cb(lws_sorted_usec_list_t *sul)
{
	struct exec_call	*e = lws_container_of(sul, struct exec_call,
				    sul_drain);

	/* Take what the pipes still hold before the deadline cuts them. */
	e->draining = 1;
	exec_readable(&e->out);
	exec_readable(&e->err);
	exec_finish(e);
}

/* Exited and both pipes at EOF: answer now (not while draining). */
static void
exec_check_done(struct exec_call *e)
{
	if (e->exited && !e->out.open && !e->err.open && !e->draining)
		exec_finish(e);
}

/* Read until EAGAIN or EOF; past max_output, read and drop. */
void
exec_readable(struct exec_pipe *p)
{
	struct exec_call	*e = p->call;
	char			 sink[EXEC_READ_CHUNK];
	size_t			 room, ncap;
	ssize_t			 n;
	int			 i;
	char			*nb;

	if (!p->open)
		return;
	for (i = 0; i < 16; i++) {
		room = e->max_output > p->len ? e->max_output - p->len : 0;
		if (room > 0 && p->cap - p->len < EXEC_READ_CHUNK &&
		    p->cap < e->max_output) {
			ncap = p->cap == 0 ? EXEC_READ_CHUNK : p->cap * 2;
			if (ncap > e->max_output)
				ncap = e->max_output;
			if ((nb = realloc(p->buf, ncap)) != NULL) {
				p->buf = nb;
				p->cap = ncap;
			}
		}
		if (room > 0 && p->cap > p->len) {
			n = read(p->fd, p->buf + p->len, p->cap - p->len);
			if (n > 0)
				p->len += (size_t)n;
		} else {
			n = read(p->fd, sink, sizeof(sink));
			if (n > 0)
				p->truncated = 1;
		}
		if (n > 0)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		exec_pipe_close(p);
		exec_check_done(e);
		return;
	}
}

void
exec_writeable(struct exec_pipe *p)
{
	struct exec_call	*e = p->call;
	ssize_t			 n;

	while (e->stdin_off < e->stdin_len) {
		n = write(p->fd, e->stdin_data + e->stdin_off,
		    e->stdin_len - e->stdin_off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				rawio_writable(p->wsi);
				return;
			}
			break;	/* the child closed its stdin: fine */
		}
		e->stdin_off += (size_t)n;
	}
	exec_pipe_close(p);
}

void
exec_closed(struct exec_pipe *p)
{
	p->wsi = NULL;
	p->fd = -1;
	if (p->open) {
		p->open = 0;
		exec_check_done(p->call);
	}
}

static int
exec_pipe_adopt(struct exec_pipe *p, struct exec_call *e,
    enum front_fd_kind kind, int fd)
{
	p->ffd.kind = kind;
	p->ffd.ptr = p;
	p->call = e;
	p->fd = fd;
	p->open = 1;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if ((p->wsi = front_adopt(fd, &p->ffd)) == NULL) {
		p->open = 0;
		return (-1);
	}
	return (0);
}

/* The template could not start the command. */
void
exec_spawned(const msgpack_object *o)
{
	struct exec_call	*e;
	const char		*msg;
	size_t			 len;
	int64_t			 id = 0;

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	if ((e = exec_find(id)) == NULL)
		return;
	if (mpack_get_str(o, "message", &msg, &len) != 1) {
		msg = "cannot start the command";
		len = strlen(msg);
	}
	if (e->conn != NULL)
		conn_reply_error(e->conn, 422, "spawn_failed", "%.*s", (int)len,
		    msg);
	exec_free(e);
}

void
exec_exited(const msgpack_object *o)
{
	struct exec_call	*e;
	int64_t			 id = 0, status = 0;

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	(void)mpack_get_int(o, "status", INT32_MIN, INT32_MAX, &status);
	if ((e = exec_find(id)) == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &e->t1);
	e->exited = 1;
	e->status = (int)status;
	lws_sul_cancel(&e->sul_timeout);
	lws_sul_cancel(&e->sul_kill);
	if (!e->out.open && !e->err.open) {
		exec_finish(e);
		return;
	}
	lws_sul_schedule(front->ctx, 0, &e->sul_drain, exec_drain_cb,
	    EXEC_DRAIN_MS * LWS_US_PER_MS);
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

/* The client went away: its command goes too. */
void
exec_conn_closed(struct exec_call *e)
{
	e->conn = NULL;
	if (e->spawned)
		exec_terminate(e, SIGHUP);
}

void
exec_start(struct conn *c, const msgpack_object *o, const struct passwd *pw,
    struct spawnreq *req)
{
	struct exec_call	*e;
	msgpack_sbuffer		 sb;
	msgpack_packer		 pk;
	int			 op[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int			 ip[2] = { -1, -1 }, has_stdin, fds[3];
	int			 nfds = 0, r;

	has_stdin = req->stdin_data != NULL;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		goto nomem;
	e->out.fd = e->err.fd = e->in.fd = -1;
	e->id = ++exec_ids;
	e->conn = c;
	e->base64 = req->base64;
	e->timeout = req->timeout;
	e->max_output = front->conf.default_output;
	if (req->max_output > 0)
		e->max_output = (size_t)req->max_output;
	if (e->max_output > front->conf.max_output)
		e->max_output = front->conf.max_output;
	if (has_stdin) {
		e->stdin_data = req->stdin_data;
		e->stdin_len = req->stdin_len;
		req->stdin_data = NULL;
	}
	LIST_INSERT_HEAD(&exec_calls, e, entry);
	if (pipe2(op, O_CLOEXEC) == -1 || pipe2(ep, O_CLOEXEC) == -1 ||
	    (has_stdin && pipe2(ip, O_CLOEXEC) == -1))
		goto syserr;
	if (exec_pipe_adopt(&e->out, e, FFD_EXEC_OUT, op[0]) == -1)
		goto syserr;
	op[0] = -1;
	if (exec_pipe_adopt(&e->err, e, FFD_EXEC_ERR, ep[0]) == -1)
		goto syserr;
	ep[0] = -1;
	if (has_stdin) {
		if (exec_pipe_adopt(&e->in, e, FFD_EXEC_IN, ip[1]) == -1)
			goto syserr;
		ip[1] = -1;
		lws_rx_flow_control(e->in.wsi, 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &e->t0);

	/* One frame, all descriptors: the template wakes once. */
	fds[nfds++] = op[1];
	fds[nfds++] = ep[1];
	if (has_stdin)
		fds[nfds++] = ip[0];
	op[1] = ep[1] = ip[0] = -1;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 9);
	mpack_kv_str(&pk, "type", "exec");
	mpack_kv_int(&pk, "fds", nfds);
	mpack_kv_int(&pk, "id", e->id);
	mpack_kv_int(&pk, "uid", pw->pw_uid);
	mpack_kv_int(&pk, "gid", pw->pw_gid);
	mpack_kv_str(&pk, "user", pw->pw_name);
	mpack_kv_str(&pk, "home", pw->pw_dir);
	mpack_kv_str(&pk, "shell", pw->pw_shell != NULL &&
	    pw->pw_shell[0] != '\0' ? pw->pw_shell : "/bin/sh");
	mpack_str(&pk, "req");
	msgpack_pack_object(&pk, *o);
	r = spawner_sendv(&sb, fds, nfds);
	msgpack_sbuffer_destroy(&sb);
	if (r == -1)
		goto unavailable;
	/*
	 * The template answers only a failure to start, so act as if the
	 * command runs: the timeout counts from here, and input goes into
	 * the pipe at once.
	 */
	e->spawned = 1;
	if (e->timeout > 0)
		lws_sul_schedule(front->ctx, 0, &e->sul_timeout,
		    exec_timeout_cb, (lws_usec_t)(e->timeout * LWS_US_PER_SEC));
	if (e->in.open)
		exec_writeable(&e->in);
	c->exec = e;
	c->state = CONN_WAIT;
	return;

syserr:
	conn_reply_error(c, 503, "unavailable", "cannot make pipes: %s",
	    strerror(errno));
	goto fail;
unavailable:
	conn_reply_error(c, 503, "unavailable", "the worker template does "
	    "not answer");
	goto fail;
nomem:
	conn_reply_error(c, 503, "unavailable", "out of memory");
fail:
	if (op[0] != -1) close(op[0]);
	if (op[1] != -1) close(op[1]);
	if (ep[0] != -1) close(ep[0]);
	if (ep[1] != -1) close(ep[1]);
	if (ip[0] != -1) close(ip[0]);
	if (ip[1] != -1) close(ip[1]);
	if (e != NULL) {
		e->conn = NULL;
		exec_free(e);
	}
}
