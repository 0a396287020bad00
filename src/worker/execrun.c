/*
 * execrun.c: the commands of POST /v1/exec, run by the template.
 *
 * The template starts each command with vfork on pipes of its own, writes
 * the request's stdin, reads stdout and stderr, reaps the command and
 * enforces its timeout (TERM to all the command started, KILL after a
 * grace time).  Each command has a group of its own (contain.c); what is
 * left in it when the call ends is killed, and so is every command in
 * flight when the template leaves (its front is gone: nobody can get the
 * result) or dies (the command's parent-death signal, and the next
 * template's sweep of the groups).  Output goes to the front in "output" frames as it comes, at most
 * maxOutput bytes of each stream (the rest is read and dropped, so the
 * command never blocks on a full pipe); then one "exited" frame.  Small
 * output rides in the "exited" frame itself: an exec call costs the front
 * one frame out and one back, and no descriptor.
 *
 * While the channel to the front is backed up the pipes are not read, so
 * a fast command waits for the front instead of filling the template.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "log.h"
#include "mpack.h"
#include "spawnreq.h"
#include "worker.h"

#define EXECRUN_GROUPS_MAX	256
#define EXECRUN_CHUNK		(256 * 1024)	/* bytes per output frame */
#define EXECRUN_DRAIN_MS	250	/* grandchildren holding the pipes */

struct execrun_pipe {
	int		 fd;		/* -1 once closed */
	char		*buf;		/* not yet sent to the front */
	size_t		 len;
	size_t		 total;		/* kept so far (<= max) */
	int		 truncated;
};

struct execrun {
	LIST_ENTRY(execrun)	 entry;
	int64_t			 id;
	pid_t			 pid;
	int			 reaped;
	int			 status;
	int			 timed_out;
	size_t			 max;
	struct execrun_pipe	 out, err;
	struct inputq		 in;		/* the request's stdin */
	int			 big_in;
	int64_t			 deadline_ms;	/* 0: none */
	struct escalate		 ending;	/* timeout or HUP, then KILL */
	int64_t			 drain_ms;	/* give up on the pipes at */
	int64_t			 peer;		/* restricted peer's uid, or -1 */
	struct contain		 group;
};

/* TERM (the timeout) or HUP (the client left), KILL 2 s later. */
static const struct escalate_step execrun_ending[] = {
	{ SIGTERM, 2000 }, { SIGKILL, 0 }, { 0, 0 }
};

static LIST_HEAD(, execrun) execruns = LIST_HEAD_INITIALIZER(execruns);

static void
execrun_send(struct ctl *c, struct proto_out *m)
{
	if (proto_send(c, m, -1) == -1)
		log_warnx("template: cannot answer the front");
}

/* A command not started: "spawned" with the status the front answers. */
static void
execrun_answer(struct ctl *c, int64_t id, int status, const char *code,
    const char *why)
{
	struct proto_out	 m;
	msgpack_packer		*pk = proto_begin(&m, PROTO_SPAWNED);

	mpack_kv_int(pk, "id", id);
	mpack_kv_int(pk, "status", status);
	mpack_kv_str(pk, "code", code);
	mpack_kv_str(pk, "message", why);
	execrun_send(c, &m);
}

/* A command that did not start: the front answers 422. */
static void
execrun_failed(struct ctl *c, int64_t id, const char *why)
{
	execrun_answer(c, id, 422, "spawn_failed", why);
}

static void
execrun_pack_data(msgpack_packer *pk, const char *key,
    struct execrun_pipe *p)
{
	mpack_str(pk, key);
	msgpack_pack_bin(pk, p->len);
	msgpack_pack_bin_body(pk, p->buf, p->len);
	p->len = 0;
}

/* Send what a stream holds as an "output" frame. */
static void
execrun_flush(struct ctl *c, struct execrun *e, struct execrun_pipe *p)
{
	struct proto_out	 m;

	if (p->len == 0)
		return;
	mpack_kv_int(proto_begin(&m, PROTO_OUTPUT), "id", e->id);
	execrun_pack_data(&m.pk, p == &e->out ? "stdout" : "stderr", p);
	execrun_send(c, &m);
}

static void
execrun_close(int *fd)
{
	if (*fd != -1)
		close(*fd);
	*fd = -1;
}

static void
execrun_free(struct execrun *e)
{
	int	big = e->out.buf != NULL || e->err.buf != NULL ||
		    e->big_in;

	contain_close(&e->group);
	execrun_close(&e->out.fd);
	execrun_close(&e->err.fd);
	execrun_close(&e->in.fd);
	inputq_drop(&e->in);
	free(e->out.buf);
	free(e->err.buf);
	LIST_REMOVE(e, entry);
	free(e);
	/*
	 * Workers are forked from this process: heap that output buffers
	 * left behind would be in every one of them.  Give it back once
	 * nothing runs.
	 */
	if (big && LIST_EMPTY(&execruns))
		malloc_trim(0);
}

/* The call is over: nothing the command started outlives it. */
static void
execrun_end_group(struct execrun *e)
{
	if (contain_signal(&e->group, 0) != 0)
		(void)contain_signal(&e->group, SIGKILL);
	/* Killed processes take a moment to leave: remove it later. */
	if (contain_remove(e->group.name) == -1)
		template_sweep_later();
}

/* Reaped and drained (or given up on): the last frame, then forget it. */
static void
execrun_finish(struct ctl *c, struct execrun *e)
{
	struct proto_out	 m;
	msgpack_packer		*pk = proto_begin(&m, PROTO_EXITED);

	execrun_end_group(e);
	mpack_kv_int(pk, "id", e->id);
	mpack_kv_int(pk, "status", e->status);
	mpack_kv_bool(pk, "timedOut", e->timed_out);
	mpack_kv_bool(pk, "truncated", e->out.truncated || e->err.truncated);
	execrun_pack_data(pk, "stdout", &e->out);
	execrun_pack_data(pk, "stderr", &e->err);
	execrun_send(c, &m);
	execrun_free(e);
}

/*
 * Read until EAGAIN or EOF; past the maximum, read and drop.  Reads go
 * through one static buffer, so a command with no output (or little)
 * costs no chunk of its own.
 */
static void
execrun_read(struct ctl *c, struct execrun *e, struct execrun_pipe *p)
{
	static char	rbuf[65536];
	size_t		room;
	ssize_t		n;
	int		i;

	for (i = 0; i < 16 && p->fd != -1; i++) {
		room = e->max > p->total ? e->max - p->total : 0;
		if (room > EXECRUN_CHUNK - p->len)
			room = EXECRUN_CHUNK - p->len;
		if (room > sizeof(rbuf) || room == 0)
			room = sizeof(rbuf);
		n = read(p->fd, rbuf, room);
		if (n > 0 && p->total < e->max) {
			if (p->buf == NULL &&
			    (p->buf = malloc(EXECRUN_CHUNK)) == NULL)
				return;
			memcpy(p->buf + p->len, rbuf, (size_t)n);
			p->len += (size_t)n;
			p->total += (size_t)n;
			if (p->len == EXECRUN_CHUNK)
				execrun_flush(c, e, p);
		} else if (n > 0)
			p->truncated = 1;
		if (n > 0)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		execrun_close(&p->fd);
	}
}

static void
execrun_write(struct execrun *e)
{
	/* Written, or the command closed its stdin: fine. */
	if (inputq_write(&e->in) == 0)
		execrun_close(&e->in.fd);
}

static void
execrun_signal(struct execrun *e, int sig)
{
	(void)contain_signal_all(&e->group, e->pid, e->reaped, sig);
}

/* sig now, KILL after the grace time. */
static void
execrun_terminate(struct execrun *e, int sig)
{
	int64_t	now = escalate_now();

	if (e->reaped)
		return;
	escalate_start(&e->ending, execrun_ending, sig, now);
	if ((sig = escalate_due(&e->ending, now)) != 0)
		execrun_signal(e, sig);
}

void
execrun_start(struct ctl *c, const msgpack_object *o)
{
	struct spawnreq		 req;
	struct child_spec	 spec;
	struct child		 ch;
	struct execrun		*e = NULL;
	gid_t			 groups[EXECRUN_GROUPS_MAX];
	char			 why[1024], user[SPAWNREQ_USER_MAX + 1];
	char			 home[512], shell[256];
	int64_t			 id = 0, uid, gid, max, peer, peer_max;
	int			 op[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int			 ip[2] = { -1, -1 };

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	memset(&req, 0, sizeof(req));
	memset(&spec, 0, sizeof(spec));
	if (mpack_get_int(o, "uid", 0, UINT32_MAX, &uid) != 1 ||
	    mpack_get_int(o, "gid", 0, UINT32_MAX, &gid) != 1 ||
	    mpack_get_int(o, "maxOutput", 0, INT64_MAX, &max) != 1 ||
	    mpack_strcpy(mpack_get(o, "user"), user, sizeof(user)) == -1 ||
	    mpack_strcpy(mpack_get(o, "home"), home, sizeof(home)) == -1 ||
	    mpack_strcpy(mpack_get(o, "shell"), shell, sizeof(shell)) == -1 ||
	    spawnreq_decode(mpack_get(o, "req"), SPAWN_EXEC, 0, &req, why,
	    sizeof(why)) == -1) {
		execrun_failed(c, id, "malformed exec request");
		goto out;
	}
	if (template_peer_full(o, &peer, &peer_max)) {
		snprintf(why, sizeof(why), "too many exec calls and streams "
		    "of this user at once (at most %lld)",
		    (long long)peer_max);
		execrun_answer(c, id, 503, "unavailable", why);
		goto out;
	}
	if (child_spec_init(&spec, &req, user, home, shell, 0) == -1 ||
	    (e = calloc(1, sizeof(*e))) == NULL) {
		execrun_failed(c, id, "out of memory");
		goto out;
	}
	inputq_init(&e->in);
	e->big_in = req.stdin_len > EXECRUN_CHUNK;
	snprintf(why, sizeof(why), "x%d.%lld", (int)getpid(), (long long)id);
	contain_create(&e->group, why, -1);
	if (req.stdin_data != NULL && inputq_push(&e->in, NULL,
	    req.stdin_data, req.stdin_len) == -1) {
		execrun_failed(c, id, "out of memory");
		goto out;
	}
	if (pipe2(op, O_CLOEXEC) == -1 || pipe2(ep, O_CLOEXEC) == -1 ||
	    (req.stdin_data != NULL && pipe2(ip, O_CLOEXEC) == -1)) {
		snprintf(why, sizeof(why), "cannot make pipes: %s",
		    strerror(errno));
		execrun_failed(c, id, why);
		goto out;
	}
	spec.given = 1;
	spec.fds[0] = ip[0];
	spec.fds[1] = op[1];
	spec.fds[2] = ep[1];
	spec.cgroup_fd = e->group.procs;
	spec.set_nproc = template_nproc(o, &spec.nproc);
	if ((uid_t)uid != geteuid() || (gid_t)gid != getegid()) {
		spec.ngroups = EXECRUN_GROUPS_MAX;
		if (getgrouplist(user, (gid_t)gid, groups, &spec.ngroups) == -1)
			spec.ngroups = 0;
		spec.setuser = 1;
		spec.uid = (uid_t)uid;
		spec.gid = (gid_t)gid;
		spec.groups = groups;
	}
	if (child_start(&spec, &ch, why, sizeof(why)) == -1) {
		execrun_failed(c, id, why);
		goto out;
	}
	e->id = id;
	e->pid = ch.pid;
	e->peer = peer;
	/* Without a cgroup: its tree, and its session (orphans go to init). */
	e->group.top = e->group.sid = ch.pid;
	e->max = (size_t)max;
	e->out.fd = op[0];
	e->err.fd = ep[0];
	e->in.fd = ip[1];
	op[0] = ep[0] = ip[1] = -1;
	fcntl(e->out.fd, F_SETFL, O_NONBLOCK);
	fcntl(e->err.fd, F_SETFL, O_NONBLOCK);
	if (e->in.fd != -1) {
		fcntl(e->in.fd, F_SETFL, O_NONBLOCK);
		execrun_write(e);
	}
	if (req.timeout > 0)
		e->deadline_ms = escalate_now() + (int64_t)(req.timeout * 1000);
	LIST_INSERT_HEAD(&execruns, e, entry);
	e = NULL;
out:
	if (e != NULL) {
		inputq_drop(&e->in);
		contain_close(&e->group);
		(void)contain_remove(e->group.name);
	}
	free(e);
	child_spec_free(&spec);
	spawnreq_free(&req);
	child_close_pair(op);
	child_close_pair(ep);
	child_close_pair(ip);
}

/*
 * In a worker just forked from the template: close the descriptors of
 * commands that are not its own (a stdin pipe held open here would keep
 * a command from ever seeing its end of input).
 */
void
execrun_forget(void)
{
	struct execrun	*e;

	while ((e = LIST_FIRST(&execruns)) != NULL)
		execrun_free(e);
}

/* How many commands of peer uid run now. */
int
execrun_peer_count(uid_t uid)
{
	struct execrun	*e;
	int		 n = 0;

	LIST_FOREACH(e, &execruns, entry)
		if (e->peer == (int64_t)uid)
			n++;
	return (n);
}

/* Is the group NAME a command's in flight?  (For contain_sweep.) */
int
execrun_owns_group(const char *name)
{
	struct execrun	*e;

	LIST_FOREACH(e, &execruns, entry)
		if (strcmp(e->group.name, name) == 0)
			return (1);
	return (0);
}

/*
 * The template leaves (the front is gone, so nobody can get a result):
 * every command in flight ends now, with all it started.
 */
void
execrun_end_all(void)
{
	struct execrun	*e;

	while ((e = LIST_FIRST(&execruns)) != NULL) {
		execrun_signal(e, SIGKILL);
		execrun_end_group(e);
		execrun_free(e);
	}
}

/* The front's "kill": its client went away (HUP), then KILL. */
void
execrun_kill(const msgpack_object *o)
{
	struct execrun	*e;
	int64_t		 id = 0, sig = SIGKILL;

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	(void)mpack_get_int(o, "signal", 1, 64, &sig);
	LIST_FOREACH(e, &execruns, entry) {
		if (e->id == id) {
			if (sig == SIGKILL)
				execrun_signal(e, SIGKILL);
			else
				execrun_terminate(e, (int)sig);
			return;
		}
	}
}

/* reap(c, pid) for each command in flight not reaped yet. */
void
execrun_reap_each(struct ctl *c, void (*reap)(struct ctl *, pid_t))
{
	struct execrun	*e, *next;

	LIST_FOREACH_SAFE(e, &execruns, entry, next)
		if (!e->reaped && e->pid > 0)
			reap(c, e->pid);
}

/* A child of the template exited: 1 if it was an exec command. */
int
execrun_reaped(struct ctl *c, pid_t pid, int status)
{
	struct execrun	*e;

	LIST_FOREACH(e, &execruns, entry)
		if (e->pid == pid)
			break;
	if (e == NULL)
		return (0);
	e->reaped = 1;
	e->status = status;
	/* Take what the pipes hold; a grandchild may keep them open. */
	execrun_read(c, e, &e->out);
	execrun_read(c, e, &e->err);
	e->drain_ms = escalate_now() + EXECRUN_DRAIN_MS;
	if (e->out.fd == -1 && e->err.fd == -1)
		execrun_finish(c, e);
	return (1);
}

/* How many descriptors execrun_pollfds may fill at most. */
int
execrun_nfds(void)
{
	struct execrun	*e;
	int		 n = 0;

	LIST_FOREACH(e, &execruns, entry)
		n += 3;
	return (n);
}

/*
 * Fill pfd[] with the descriptors to watch (at most max), each tagged in
 * the parallel tag[] array; none to read while the front lags.
 */
int
execrun_pollfds(struct pollfd *pfd, void **tag, int max, int backlogged)
{
	struct execrun	*e;
	int		 n = 0;

	LIST_FOREACH(e, &execruns, entry) {
		if (n + 3 > max)
			break;
		if (!backlogged && e->out.fd != -1) {
			pfd[n].fd = e->out.fd;
			pfd[n].events = POLLIN;
			tag[n++] = &e->out;
		}
		if (!backlogged && e->err.fd != -1) {
			pfd[n].fd = e->err.fd;
			pfd[n].events = POLLIN;
			tag[n++] = &e->err;
		}
		if (e->in.fd != -1) {
			pfd[n].fd = e->in.fd;
			pfd[n].events = POLLOUT;
			tag[n++] = e;
		}
	}
	return (n);
}

/* Act on what poll() said of the descriptors execrun_pollfds gave. */
void
execrun_events(struct ctl *c, struct pollfd *pfd, void **tag, int n)
{
	struct execrun	*e, *next;
	int		 i;

	for (i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		/* Looked up, not followed: a reap this turn may have freed it. */
		LIST_FOREACH(e, &execruns, entry) {
			if (tag[i] == &e->out || tag[i] == &e->err) {
				execrun_read(c, e, tag[i]);
				break;
			}
			if (tag[i] == e) {
				execrun_write(e);
				break;
			}
		}
	}
	/* Send what came in this round, then finish what is done. */
	LIST_FOREACH_SAFE(e, &execruns, entry, next) {
		if (e->reaped && e->out.fd == -1 && e->err.fd == -1) {
			execrun_finish(c, e);
			continue;
		}
		execrun_flush(c, e, &e->out);
		execrun_flush(c, e, &e->err);
	}
}

/* Milliseconds to the next deadline, or -1. */
int
execrun_timeout(void)
{
	struct execrun	*e;
	int64_t		 now = escalate_now(), next = -1, t;

	LIST_FOREACH(e, &execruns, entry) {
		t = e->reaped ? e->drain_ms : e->ending.steps != NULL ?
		    escalate_at(&e->ending) : e->deadline_ms;
		if (t == 0)
			continue;
		if (next == -1 || t < next)
			next = t;
	}

	if (next == -1)
		return (-1);
	return (next <= now ? 0 : (int)(next - now));
}

/* Timeouts, kill escalation, and drains that took too long. */
void
execrun_timers(struct ctl *c)
{
	struct execrun	*e, *next;
	int64_t		 now = escalate_now();

	LIST_FOREACH_SAFE(e, &execruns, entry, next) {
		if (e->reaped) {
			if (now >= e->drain_ms) {
				execrun_read(c, e, &e->out);
				execrun_read(c, e, &e->err);
				execrun_finish(c, e);
			}
			continue;
		}
		if (e->ending.steps != NULL)
			execrun_terminate(e, 0);
		else if (e->deadline_ms != 0 && now >= e->deadline_ms) {
			e->timed_out = 1;
			e->deadline_ms = 0;
			execrun_terminate(e, SIGTERM);
		}
	}
}
