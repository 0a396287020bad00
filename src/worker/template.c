/*
 * template.c: the process that forks session workers and runs exec calls.
 *
 * The front starts it once, by exec, before it serves anyone, so it holds no
 * connection, no token and no libwebsockets state.  Every worker it forks
 * starts from this clean, already-linked image: no exec per session, and
 * the pages of the shared libraries stay shared.
 *
 * It also runs the commands of POST /v1/exec itself (execrun.c), with vfork
 * and no worker process per call.  It exits when the front's channel closes,
 * ending the commands in flight; workers live on (each is its own session
 * and is reparented).
 *
 * It keeps the groups of processes (contain.c) tidy: that of a worker it
 * reaped is ended and removed at once, those of any other process that is
 * gone by a sweep of all groups a few seconds later.  And it
 * counts what each restricted peer runs (exec calls and streams) against
 * the front's per-user cap.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "log.h"
#include "mpack.h"
#include "nofile.h"
#include "worker.h"

#define TEMPLATE_SWEEP_MS	500	/* again, for groups still dying */
#define TEMPLATE_FULL_SWEEP_MS	5000	/* all groups, once workers went */
#define TEMPLATE_REAP_MS	100	/* waitpid(-1), after a SIGCHLD */
#define TEMPLATE_WALK_GAP_MS	1000	/* and not sooner after the last */

static struct ctl	*template_ctl;
static int		 template_sfd = -1;
static int64_t		 template_sweep_at;	/* ms: a group still dying */
static int		 template_sweeping;	/* a sweep under way */
static int64_t		 template_walk_at;	/* ms: waitpid(-1) due */
static int64_t		 template_walked;	/* ms: the last waitpid(-1) */

/* The exec streams forked for restricted peers, for the per-user cap. */
static struct template_stream {
	pid_t	pid;
	uid_t	peer;
} *template_streams;
static size_t		 template_nstreams, template_streams_cap;

/*
 * The request's restricted peer ("peerUid", else -1), and whether it runs
 * as many exec calls and streams as it may ("peerMax", then in *max).
 */
int
template_peer_full(const msgpack_object *o, int64_t *peer, int64_t *max)
{
	size_t	i;
	int	n;

	if (mpack_get_int(o, "peerUid", -1, UINT32_MAX, peer) != 1)
		*peer = -1;
	if (mpack_get_int(o, "peerMax", 0, INT32_MAX, max) != 1)
		*max = 0;
	if (*peer == -1 || *max == 0)
		return (0);
	n = execrun_peer_count((uid_t)*peer);
	for (i = 0; i < template_nstreams; i++)
		if (template_streams[i].peer == (uid_t)*peer)
			n++;
	return (n >= *max);
}

static void
template_stream_add(pid_t pid, uid_t peer)
{
	struct template_stream	*nv;
	size_t			 cap;

	if (template_nstreams == template_streams_cap) {
		cap = template_streams_cap == 0 ? 16 : template_streams_cap * 2;
		if ((nv = reallocarray(template_streams, cap,
		    sizeof(*nv))) == NULL)
			return;		/* uncounted: not refused either */
		template_streams = nv;
		template_streams_cap = cap;
	}
	template_streams[template_nstreams].pid = pid;
	template_streams[template_nstreams++].peer = peer;
}

static void
template_stream_reaped(pid_t pid)
{
	size_t	i;

	for (i = 0; i < template_nstreams; i++) {
		if (template_streams[i].pid == pid) {
			template_streams[i] =
			    template_streams[--template_nstreams];
			return;
		}
	}
}

/*
 * The peer's RLIMIT_NPROC the front read ("peerNproc": [soft, hard], -1
 * for unlimited): 1 and rl set, or 0 when the request has none.
 */
int
template_nproc(const msgpack_object *o, struct rlimit *rl)
{
	const msgpack_object	*v = mpack_get(o, "peerNproc");
	int64_t			 n[2];
	int			 i;

	if (v == NULL || v->type != MSGPACK_OBJECT_ARRAY ||
	    v->via.array.size != 2)
		return (0);
	for (i = 0; i < 2; i++) {
		const msgpack_object *x = &v->via.array.ptr[i];

		if (x->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			n[i] = x->via.u64 > INT64_MAX ? -1 :
			    (int64_t)x->via.u64;
		else if (x->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
			n[i] = -1;
		else
			return (0);
	}
	rl->rlim_cur = n[0] < 0 ? RLIM_INFINITY : (rlim_t)n[0];
	rl->rlim_max = n[1] < 0 ? RLIM_INFINITY : (rlim_t)n[1];
	if (rl->rlim_cur > rl->rlim_max)
		rl->rlim_cur = rl->rlim_max;
	return (1);
}

/*
 * A stream over the per-user cap: answer the upgrade with 503 here, no
 * process forked.  The head the front peeked is read first, so the close
 * does not reset the connection under the answer.
 */
static void
template_refuse_stream(int fd, int64_t max)
{
	char	buf[8192], body[256], head[512];
	int	blen, hlen;

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	blen = snprintf(body, sizeof(body), "{\"error\":{\"code\":"
	    "\"unavailable\",\"message\":\"too many exec calls and streams "
	    "of this user at once (at most %lld)\"}}", (long long)max);
	hlen = snprintf(head, sizeof(head), "HTTP/1.1 503 Service "
	    "Unavailable\r\nContent-Type: application/json\r\n"
	    "Content-Length: %d\r\nConnection: close\r\n\r\n", blen);
	(void)!send(fd, head, (size_t)hlen, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)!send(fd, body, (size_t)blen, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)shutdown(fd, SHUT_WR);
	close(fd);
}

/* In a process just forked from the template: keep nothing of its. */
void
template_child_setup(void)
{
	close(template_ctl->fd);
	template_ctl->fd = -1;
	close(template_sfd);
	free(template_streams);
	template_streams = NULL;
	template_nstreams = template_streams_cap = 0;
	execrun_forget();
	pool_forget();
	contain_sweep_forget();
	signal(SIGCHLD, SIG_DFL);
}

static void	template_sweep(void);
static void	template_reaped(struct ctl *, pid_t, int);
static void	template_remove_groups(pid_t);
static void	template_sweep_in(int64_t);

/* A child of the template is gone: an exec command, a worker, an orphan. */
static void
template_reaped(struct ctl *c, pid_t pid, int status)
{
	if (execrun_reaped(c, pid, status))
		return;
	/* Session workers are reaped here too; they are not reported. */
	pool_reaped(pid);
	template_stream_reaped(pid);
	template_remove_groups(pid);
	/* Groups of processes that were not ours: now and then, not each time. */
	template_sweep_in(TEMPLATE_FULL_SWEEP_MS);
}

/* Reap pid if it has exited. */
static void
template_reap_pid(struct ctl *c, pid_t pid)
{
	int	status;

	if (waitpid(pid, &status, WNOHANG) == pid)
		template_reaped(c, pid, status);
}

/*
 * A SIGCHLD, of the child pid: that child is reaped by its pid, and so is
 * each exec command in flight, which costs one look each, where
 * waitpid(-1) goes over every child (10,000 session workers at scale).
 * SIGCHLDs of children that exit together merge into one, so a walk of
 * all the children follows TEMPLATE_REAP_MS later, for all the signals
 * of that time: a worker missed waits for it, an exec command never does.
 * A walk holds the kernel's task list lock, which every fork and exit on
 * the machine takes too, for a few ms at 10,000 children: under a stream
 * of exec calls, one a TEMPLATE_WALK_GAP_MS at most.
 */
static void
template_sigchld(struct ctl *c, pid_t pid)
{
	int64_t	at;

	if (pid > 0)
		template_reap_pid(c, pid);
	execrun_reap_each(c, template_reap_pid);
	if (template_walk_at == 0) {
		at = escalate_now() + TEMPLATE_REAP_MS;
		if (template_walked != 0 &&
		    at < template_walked + TEMPLATE_WALK_GAP_MS)
			at = template_walked + TEMPLATE_WALK_GAP_MS;
		template_walk_at = at;
	}
}

static void
template_walk(struct ctl *c)
{
	pid_t	pid;
	int	status;

	template_walk_at = 0;
	template_walked = escalate_now();
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		template_reaped(c, pid, status);
}

/*
 * A worker gone, crashed or not: end and remove the group it made (named
 * after its pid, see contain.c), and only that one, so that a delete
 * among 10,000 sessions costs one rmdir, not a look at every group.
 */
static void
template_remove_groups(pid_t pid)
{
	char	name[32];
	int	left;

	snprintf(name, sizeof(name), "s%d", (int)pid);
	left = contain_remove(name);
	snprintf(name, sizeof(name), "t%d", (int)pid);
	if ((left | contain_remove(name)) != 0)
		template_sweep_later();
}

/* A sweep of all groups in ms, unless one is due sooner. */
static void
template_sweep_in(int64_t ms)
{
	int64_t	at = escalate_now() + ms;

	if (template_sweep_at == 0 || template_sweep_at > at)
		template_sweep_at = at;
}

/*
 * End and remove the groups of what is gone, a step a turn of the loop,
 * requests answered in between; again later if some are still dying.
 */
static void
template_sweep(void)
{
	int	r;

	if (!template_sweeping) {
		if (template_sweep_at == 0 ||
		    escalate_now() < template_sweep_at)
			return;
		template_sweep_at = 0;
		template_sweeping = 1;
	}
	if ((r = contain_sweep_step(execrun_owns_group)) == 1)
		return;
	template_sweeping = 0;
	if (r < 0)
		template_sweep_later();
}

/* A group could not be removed yet (its processes were just killed). */
void
template_sweep_later(void)
{
	template_sweep_in(TEMPLATE_SWEEP_MS);
}

static void
template_fork(struct ctl *c, const msgpack_object *o, int fd, int stream)
{
	pid_t	pid;
	int64_t	peer = -1, max;

	if (fd == -1) {
		log_warnx("template: request without a descriptor");
		return;
	}
	if (stream && template_peer_full(o, &peer, &max)) {
		template_refuse_stream(fd, max);
		return;
	}
	if ((pid = pool_take(c, fd)) == -1) {
		switch (pid = fork()) {
		case -1:
			log_warn("template: fork");
			close(fd);	/* the front or client sees EOF */
			return;
		case 0:
			template_child_setup();
			if (stream)
				stream_main(fd, o);
			worker_main(fd, o);
		}
		close(fd);
	}
	if (stream && peer != -1)
		template_stream_add(pid, (uid_t)peer);
}

static void
template_spawn(void *arg, const msgpack_object *o, int *fds)
{
	template_fork(arg, o, fds[0], 0);
}

static void
template_stream(void *arg, const msgpack_object *o, int *fds)
{
	template_fork(arg, o, fds[0], 1);
}

static void
template_exec(void *arg, const msgpack_object *o, int *fds)
{
	execrun_start(arg, o);
}

static void
template_kill(void *arg, const msgpack_object *o, int *fds)
{
	execrun_kill(o);
}

/* What the template takes from the front: the allow-list. */
static const struct proto_handler template_dispatch_front[] = {
	{ PROTO_SPAWN, template_spawn },
	{ PROTO_STREAM, template_stream },
	{ PROTO_EXEC, template_exec },
	{ PROTO_KILL, template_kill },
};

void
template_main(int ctlfd, int use_cgroup)
{
	struct ctl		 c;
	struct pollfd		*pfd = NULL, *np;
	void			**tag = NULL, **nt;
	struct signalfd_siginfo	 si;
	msgpack_unpacked	 up;
	sigset_t		 set;
	size_t			 cap = 0, want;
	int			 r, fds[CTL_FRAME_FDS], nfds, n, timeout;
	int64_t			 left;

	nofile_save();
	setproctitle("template");
	log_setident("lodged-template");
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((template_sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) ==
	    -1)
		fatal("template: signalfd");

	ctl_init(&c, ctlfd);
	template_ctl = &c;
	/* Before any worker is forked: they inherit the choice. */
	contain_init(use_cgroup);
	/* Orphans of the commands come here, where their group finds them. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		log_warn("PR_SET_CHILD_SUBREAPER");
	contain_sweep(NULL);
	pool_fill();
	msgpack_unpacked_init(&up);
	for (;;) {
		want = 2 + (size_t)execrun_nfds();
		if (want > cap) {
			if ((np = reallocarray(pfd, want, sizeof(*pfd))) == NULL ||
			    (pfd = np, (nt = reallocarray(tag, want,
			    sizeof(*tag))) == NULL))
				fatal("template: poll set");
			tag = nt;
			cap = want;
		}
		pfd[0].fd = c.fd;
		pfd[0].events = POLLIN | (ctl_pending(&c) ? POLLOUT : 0);
		pfd[1].fd = template_sfd;
		pfd[1].events = POLLIN;
		n = execrun_pollfds(pfd + 2, tag + 2, (int)cap - 2,
		    c.qbytes > EXECRUN_BACKLOG);
		timeout = execrun_timeout();
		if (template_sweep_at != 0 && (timeout == -1 ||
		    timeout > TEMPLATE_SWEEP_MS))
			timeout = TEMPLATE_SWEEP_MS;
		if (template_walk_at != 0) {
			left = template_walk_at - escalate_now();
			left = left < 0 ? 0 : left;
			if (timeout == -1 || timeout > left)
				timeout = (int)left;
		}
		if (template_sweeping)
			timeout = 0;
		if (poll(pfd, (nfds_t)(2 + n), timeout) == -1) {
			if (errno == EINTR)
				continue;
			fatal("template: poll");
		}
		if (pfd[1].revents & POLLIN)
			while (read(template_sfd, &si, sizeof(si)) ==
			    sizeof(si))
				template_sigchld(&c, (pid_t)si.ssi_pid);
		if (template_walk_at != 0 && escalate_now() >= template_walk_at)
			template_walk(&c);
		execrun_events(&c, pfd + 2, tag + 2, n);
		execrun_timers(&c);
		template_sweep();
		if (pfd[0].revents & POLLOUT && ctl_flush(&c) == -1)
			break;
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if ((r = ctl_read(&c)) == 0 || r == -1)
				break;
			while ((r = ctl_nextv(&c, &up, fds, &nfds)) == 1)
				(void)proto_dispatch(PROTO_FRONT_TEMPLATE,
				    template_dispatch_front,
				    PROTO_NHANDLERS(template_dispatch_front),
				    "the front", &c, &up.data, fds, nfds);
			if (r == -1) {
				log_warnx("template: bad frame from the front");
				break;
			}
		}
		if (ctl_flush(&c) == -1)
			break;
		/* Replace the waiting workers requests took: not before. */
		pool_fill();
	}
	msgpack_unpacked_destroy(&up);
	ctl_close(&c);
	execrun_end_all();
	exit(0);
}
