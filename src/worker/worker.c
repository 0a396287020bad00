/*
 * worker.c: a session worker's start-up, event loop and session object.
 *
 * Start-up runs in order and reports to the front over the control socket
 * it was forked with: its own session, its socket RUNDIR/sessions/ID.sock
 * (owned by the session's user, mode 0600), the drop to that user, the ring,
 * the child.  Then one libwebsockets loop serves everything: the PTY or
 * pipes, the signalfd, the socket's listener, the front's control
 * connections and the attached clients.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rawio.h"
#include "mpack.h"
#include "nofile.h"
#include "ring.h"
#include "worker.h"
#include "wsmsg.h"

struct worker	*worker;
struct worker_limits	worker_limits = { 256, WORKER_WS_MSG_MAX, 30, 0 };

void
worker_limits_decode(const msgpack_object *o)
{
	int64_t	n;

	if ((o = mpack_get(o, "limits")) == NULL)
		return;
	if (mpack_get_int(o, "maxClients", 1, 1000000, &n) == 1)
		worker_limits.max_clients = (int)n;
	if (mpack_get_int(o, "messageMax", 1024, 1LL << 32, &n) == 1)
		worker_limits.msg_max = (size_t)n;
	if (mpack_get_int(o, "ping", 1, 65535 / 3, &n) == 1)
		worker_limits.ping = (int)n;
	if (mpack_get_int(o, "exitedTtl", 0, INT32_MAX, &n) == 1)
		worker_limits.exited_ttl = (int)n;
}

/* What a client must respect: "limits" in "attached" and "started". */
void
worker_limits_pack(msgpack_packer *pk, size_t input_queue)
{
	mpack_str(pk, "limits");
	msgpack_pack_map(pk, 2);
	mpack_kv_uint(pk, "maxMessageBytes", worker_limits.msg_max);
	mpack_kv_uint(pk, "inputQueueBytes", input_queue);
}

static int	worker_raw_cb(struct lws *, enum lws_callback_reasons, void *,
		    void *, size_t);

static const struct lws_protocols worker_protocols[] = {
	/* A frame goes to the socket in one write: see txhold.c. */
	{ "lodge", client_callback, sizeof(struct http_req), 65536, 0, NULL,
	    WORKER_CHUNK + 1024 },
	{ "lodge-raw", worker_raw_cb, 0, 0, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

static lws_retry_bo_t worker_retry;

void
worker_pack_session(msgpack_packer *pk)
{
	struct worker	*w = worker;
	char		 ts[64], frac[16];
	struct tm	 tm;
	size_t		 i;
	int		 n = 16;

	gmtime_r(&w->created, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(frac, sizeof(frac), ".%03dZ", w->created_ms);
	strlcat(ts, frac, sizeof(ts));

	msgpack_pack_map(pk, n);
	mpack_kv_str(pk, "id", w->id);
	mpack_kv_str(pk, "name", w->req.name[0] != '\0' ? w->req.name : NULL);
	if (w->req.args != NULL) {
		mpack_str(pk, "args");
		msgpack_pack_array(pk, w->req.nargs);
		for (i = 0; i < w->req.nargs; i++)
			mpack_str(pk, w->req.args[i]);
	} else
		mpack_kv_str(pk, "command", w->req.command);
	mpack_kv_int(pk, "pid", w->pid);
	mpack_kv_bool(pk, "pty", w->req.pty);
	mpack_kv_int(pk, "cols", w->cols);
	mpack_kv_int(pk, "rows", w->rows);
	mpack_kv_str(pk, "workDir", w->workdir);
	mpack_kv_str(pk, "user", w->username);
	mpack_kv_str(pk, "createdAt", ts);
	mpack_kv_str(pk, "state", w->final ? "exited" : "running");
	wsmsg_pack_status(pk, w->final, w->status);
	mpack_kv_int(pk, "clients", w->nclients);
	mpack_kv_uint(pk, "bufferSize", ring_capacity(w->ring));
	mpack_kv_uint(pk, "outputBytes", ring_end(w->ring));
}

/* Tell every connected front what the session looks like now. */
void
worker_broadcast_update(void)
{
	struct worker_fd	*c, *next;
	struct proto_out	 m;

	mpack_str(proto_begin(&m, PROTO_UPDATE), "session");
	worker_pack_session(&m.pk);
	proto_finish(&m);
	for (c = LIST_FIRST(&worker->controls); c != NULL; c = next) {
		next = LIST_NEXT(c, entry);
		control_send(c, &m.sb);
	}
	proto_free(&m);
	worker->reported_bytes = ring_end(worker->ring);
}

/* Output counters reach the front at most twice a second. */
static void
worker_update_cb(lws_sorted_usec_list_t *sul)
{
	if (ring_end(worker->ring) != worker->reported_bytes)
		worker_broadcast_update();
}

/*
 * New output: make sure the front hears of it within half a second.  An
 * idle session has no timer at all, so a thousand of them cost no wakeups.
 */
void
worker_output_changed(void)
{
	if (lws_dll2_is_detached(&worker->sul_update.list))
		lws_sul_schedule(worker->ctx, 0, &worker->sul_update,
		    worker_update_cb, 500 * LWS_US_PER_MS);
}

/* New output: see client_output(). */
void
worker_send_clients(void)
{
	struct client	*cl;

	LIST_FOREACH(cl, &worker->clients, entry)
		client_output(cl);
}

void
worker_wake_clients(void)
{
	struct client	*cl;

	LIST_FOREACH(cl, &worker->clients, entry)
		client_wake(cl);
}

static struct worker_fd *
worker_fd_adopt(enum worker_fd_kind kind, int fd)
{
	struct worker_fd	*wf;
	lws_sock_file_fd_type	 u;

	if ((wf = calloc(1, sizeof(*wf))) == NULL)
		return (NULL);
	wf->kind = kind;
	wf->fd = fd;
	ctl_init(&wf->ctl, -1);
	if (kind == WFD_CONTROL)
		wf->ctl.fd = fd;
	u.filefd = fd;
	wf->wsi = lws_adopt_descriptor_vhost(worker->vh,
	    LWS_ADOPT_RAW_FILE_DESC, u, "lodge-raw", NULL);
	if (wf->wsi == NULL) {
		free(wf);
		return (NULL);
	}
	lws_set_opaque_user_data(wf->wsi, wf);
	if (kind == WFD_CONTROL)
		LIST_INSERT_HEAD(&worker->controls, wf, entry);
	return (wf);
}

/*
 * Neutralise an fd whose wsi is about to close, when the descriptor itself
 * has been handed on: lws then closes /dev/null, not the connection.
 */
static void
worker_fd_detach(int fd)
{
	int	null;

	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1)
		return;
	dup2(null, fd);
	close(null);
}

static void
worker_accept(void)
{
	int	fd;

	while ((fd = accept4(worker->listen_fd, NULL, NULL,
	    SOCK_CLOEXEC | SOCK_NONBLOCK)) != -1) {
		if (worker_fd_adopt(WFD_SNIFF, fd) == NULL)
			close(fd);
	}
}

/* The first byte tells a front's control connection from an HTTP client. */
static int
worker_sniff(struct worker_fd *wf)
{
	lws_sock_file_fd_type	 u;
	char			 b;
	ssize_t			 n;
	int			 fd;

	n = recv(wf->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == -1)
		return (errno == EAGAIN || errno == EINTR ? 0 : -1);
	if (n == 0)
		return (-1);
	if (b == CTL_MAGIC) {
		(void)recv(wf->fd, &b, 1, MSG_DONTWAIT);
		wf->kind = WFD_CONTROL;
		wf->ctl.fd = wf->fd;
		LIST_INSERT_HEAD(&worker->controls, wf, entry);
		return (0);
	}
	if ((fd = fcntl(wf->fd, F_DUPFD_CLOEXEC, 3)) == -1)
		return (-1);
	u.sockfd = fd;
	if (lws_adopt_descriptor_vhost(worker->vh, LWS_ADOPT_SOCKET |
	    LWS_ADOPT_HTTP, u, NULL, NULL) == NULL)
		close(fd);
	worker_fd_detach(wf->fd);
	return (-1);
}

static void
worker_signals(void)
{
	struct signalfd_siginfo	si;

	while (read(worker->sig->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			session_reap();
		else if (si.ssi_signo == SIGIO)
			worker_accept();
		else if (si.ssi_signo == SIGTERM && !worker->deleting)
			session_delete(NULL, 0);
	}
}

static int
worker_raw_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct worker_fd	*wf = lws_get_opaque_user_data(wsi);

	if (wf == NULL)
		return (0);
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		switch (wf->kind) {
		case WFD_SNIFF:
			if (worker_sniff(wf) == -1)
				return (-1);
			if (wf->kind == WFD_CONTROL)
				control_read(wf);
			break;
		case WFD_CONTROL:
			control_read(wf);
			break;
		case WFD_OUT:
		case WFD_ERR:
			session_output(wf, 0);
			break;
		case WFD_SIGNAL:
			worker_signals();
			break;
		case WFD_IN:
			break;
		}
		return (0);
	case LWS_CALLBACK_RAW_WRITEABLE_FILE:
		if (wf->kind == WFD_CONTROL) {
			if (ctl_flush(&wf->ctl) == -1)
				return (-1);
			if (ctl_pending(&wf->ctl))
				rawio_writable(wsi);
		} else if (wf->kind == WFD_IN || wf->kind == WFD_OUT)
			session_input_flush();
		return (0);
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		rawio_forget(wsi);
		lws_set_opaque_user_data(wsi, NULL);
		if (wf->kind == WFD_CONTROL) {
			control_closed(wf);
			LIST_REMOVE(wf, entry);
			wf->ctl.fd = -1;	/* lws closes it */
			ctl_close(&wf->ctl);
		}
		if (wf == worker->out || wf == worker->err)
			session_output_closing(wf);
		if (wf == worker->out) {
			worker->out = NULL;
			worker->out_open = 0;
			if (worker->req.pty)
				session_input_closed();
			session_check_final();
		} else if (wf == worker->err) {
			worker->err = NULL;
			worker->err_open = 0;
			session_check_final();
		} else if (wf == worker->in) {
			worker->in = NULL;
			session_input_closed();
		}
		free(wf);
		return (0);
	default:
		return (0);
	}
}

static int
worker_listen(char *why, size_t whylen)
{
	struct sockaddr_un	 sun;
	int			 fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, worker->sockpath, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path)) {
		snprintf(why, whylen, "socket path too long");
		return (-1);
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		goto err;
	(void)unlink(worker->sockpath);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chown(worker->sockpath, worker->uid, worker->gid) == -1 ||
	    chmod(worker->sockpath, 0600) == -1 || listen(fd, 128) == -1) {
		close(fd);
		goto err;
	}
	return (fd);
err:
	snprintf(why, whylen, "cannot listen on %s: %s", worker->sockpath,
	    strerror(errno));
	return (-1);
}

/* Take a user's groups (none: name NULL), gid and uid, in that order. */
int
worker_become(const char *name, uid_t uid, gid_t gid)
{
	if ((name != NULL ? initgroups(name, gid) : setgroups(0, NULL)) == -1 ||
	    setgid(gid) == -1 || setuid(uid) == -1)
		return (-1);
	return (0);
}

static int
worker_drop(char *why, size_t whylen)
{
	if (worker->uid == geteuid())
		return (0);
	if (worker_become(worker->username, worker->uid, worker->gid) == -1) {
		snprintf(why, whylen, "cannot become user '%s': %s",
		    worker->username, strerror(errno));
		return (-1);
	}
	return (0);
}

/*
 * SIGCHLD as a descriptor, and for a session SIGTERM and SIGIO (its
 * listening socket's connections); HUP, INT, PIPE ignored.
 */
int
worker_signalfd(int session)
{
	sigset_t	set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (session) {
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGIO);
	}
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		return (-1);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	return (signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

/* Answer the front's spawn request, then give up if it failed. */
static void
worker_report(struct ctl *c, int status, const char *code, const char *msg)
{
	struct proto_out	 m;
	msgpack_packer		*pk = proto_begin(&m, PROTO_CREATED);

	mpack_kv_int(pk, "id", worker->spawn_id);
	mpack_kv_int(pk, "status", status);
	if (status == 201) {
		mpack_str(pk, "session");
		worker_pack_session(pk);
	} else {
		mpack_kv_str(pk, "code", code);
		mpack_kv_str(pk, "message", msg);
	}
	proto_finish(&m);
	(void)ctl_send_wait(c, &m.sb, -1);
	proto_free(&m);
	if (status != 201) {
		if (worker->sockpath[0] != '\0')
			(void)unlink(worker->sockpath);
		exit(1);
	}
}

static void __attribute__((noreturn))
worker_fail(struct ctl *c, int status, const char *code, const char *msg)
{
	log_warnx("session %s: %s", worker->id, msg);
	worker_report(c, status, code, msg);
	exit(1);
}

static void
worker_probe_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
}

/*
 * libwebsockets 4.1 wakes every context each 30 s for its platform
 * checks (a parent that died, vhosts waiting for a network interface),
 * which a worker has no use for: 10,000 idle sessions were 333 wakeups a
 * second of processes with nothing to do.  Right after the context is
 * made, the timers due later than now on its list are those alone (one
 * due now runs at the first service): take them off the list, which a
 * timer of ours scheduled on it leads to.
 */
static void
worker_timers_quiet(struct lws_context *ctx)
{
	lws_sorted_usec_list_t	 probe, *sul;
	struct lws_dll2		*d, *next;
	lws_usec_t		 later;

	memset(&probe, 0, sizeof(probe));
	lws_sul_schedule(ctx, 0, &probe, worker_probe_cb,
	    3600 * LWS_US_PER_SEC);
	later = lws_now_usecs() + LWS_US_PER_SEC;
	for (d = lws_dll2_get_head(probe.list.owner); d != NULL; d = next) {
		next = d->next;
		sul = lws_container_of(d, lws_sorted_usec_list_t, list);
		if (sul != &probe && sul->us > later)
			lws_sul_cancel(sul);
	}
	lws_sul_cancel(&probe);
}

/* The event loop of a worker or an exec stream, its vhost "default". */
struct lws_context *
worker_context(const struct lws_protocols *protocols, rlim_t nofile)
{
	struct lws_context_creation_info	info;
	struct lws_context			*ctx;

	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	info.protocols = protocols;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	nofile_set(nofile);
	info.max_http_header_data = 8192;
	info.timeout_secs = 30;
	/* A peer silent for 2.5 pings is gone. */
	worker_retry.secs_since_valid_ping = (uint16_t)worker_limits.ping;
	worker_retry.secs_since_valid_hangup =
	    (uint16_t)(worker_limits.ping * 5 / 2);
	info.retry_and_idle_policy = &worker_retry;
	info.vhost_name = "default";
	log_lws_init();
	if ((ctx = lws_create_context(&info)) != NULL)
		worker_timers_quiet(ctx);
	return (ctx);
}

static void
worker_quit_cb(lws_sorted_usec_list_t *sul)
{
	worker->quitting = 2;
	lws_cancel_service(worker->ctx);
}

/* The session is gone: let clients read their exit, then leave. */
void
worker_quit(void)
{
	if (worker->quitting)
		return;
	worker->quitting = 1;
	(void)unlink(worker->sockpath);
	lws_sul_schedule(worker->ctx, 0, &worker->sul_quit, worker_quit_cb,
	    1 * LWS_US_PER_SEC);
	lws_cancel_service(worker->ctx);
}

static void
worker_setup(int ctlfd, const msgpack_object *o, struct ctl *c)
{
	struct child_spec	 spec;
	struct child		 ch;
	struct timeval		 tv;
	const msgpack_object	*req;
	char			 why[1024];
	int64_t			 n, bufmax;
	int			 fd, sfd;

	ctl_init(c, ctlfd);
	(void)mpack_get_int(o, "reqid", 1, INT64_MAX, &worker->spawn_id);
	if (mpack_strcpy(mpack_get(o, "id"), worker->id,
	    sizeof(worker->id)) == -1 ||
	    mpack_strcpy(mpack_get(o, "rundir"), worker->rundir,
	    sizeof(worker->rundir)) == -1 ||
	    mpack_strcpy(mpack_get(o, "user"), worker->username,
	    sizeof(worker->username)) == -1 ||
	    mpack_strcpy(mpack_get(o, "home"), worker->home,
	    sizeof(worker->home)) == -1 ||
	    mpack_strcpy(mpack_get(o, "shell"), worker->shell,
	    sizeof(worker->shell)) == -1 ||
	    mpack_get_int(o, "uid", 0, UINT32_MAX, &n) != 1)
		worker_fail(c, 500, "internal", "malformed spawn request");
	worker->uid = (uid_t)n;
	if (mpack_get_int(o, "gid", 0, UINT32_MAX, &n) != 1 ||
	    mpack_get_int(o, "bufferMax", 0, INT64_MAX, &bufmax) != 1 ||
	    (req = mpack_get(o, "req")) == NULL)
		worker_fail(c, 500, "internal", "malformed spawn request");
	worker->gid = (gid_t)n;
	worker_limits_decode(o);
	if (spawnreq_decode(req, SPAWN_SESSION, (size_t)bufmax, &worker->req,
	    why, sizeof(why)) == -1)
		worker_fail(c, 400, "bad_request", why);
	snprintf(worker->sockpath, sizeof(worker->sockpath),
	    "%s/sessions/%s.sock", worker->rundir, worker->id);
	setproctitle("session %s%s%s", worker->id,
	    worker->req.name[0] != '\0' ? " " : "", worker->req.name);
	log_setident("lodged-session");

	gettimeofday(&tv, NULL);
	worker->created = tv.tv_sec;
	worker->created_ms = (int)(tv.tv_usec / 1000);
	worker->cols = worker->req.cols;
	worker->rows = worker->req.rows;
	strlcpy(worker->workdir, worker->req.workdir != NULL ?
	    worker->req.workdir : worker->home, sizeof(worker->workdir));

	if ((fd = worker_listen(why, sizeof(why))) == -1)
		worker_fail(c, 500, "internal", why);
	/* Made while root: the child joins it after the drop. */
	snprintf(why, sizeof(why), "s%d", (int)getpid());
	contain_create(&worker->group, why, getpid());
	if (worker_drop(why, sizeof(why)) == -1)
		worker_fail(c, 500, "internal", why);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		log_warn("PR_SET_CHILD_SUBREAPER");
	if ((worker->ring = ring_create(worker->req.buffer_size)) == NULL)
		worker_fail(c, 503, "unavailable", "out of memory");

	if (child_spec_init(&spec, &worker->req, worker->username,
	    worker->home, worker->shell, worker->req.pty) == -1)
		worker_fail(c, 503, "unavailable", "out of memory");
	spec.login = worker->req.command == NULL && worker->req.args == NULL;
	spec.cgroup_fd = worker->group.procs;
	/* SIGCHLD is blocked from here on; the child resets its mask. */
	if ((sfd = worker_signalfd(1)) == -1)
		worker_fail(c, 500, "internal", "cannot set up signals");
	if (child_start(&spec, &ch, why, sizeof(why)) == -1) {
		if (errno == ENOSPC && spec.pty)	/* kernel.pty.max */
			worker_fail(c, 503, "unavailable", why);
		worker_fail(c, 422, "spawn_failed", why);
	}
	child_spec_free(&spec);
	worker->pid = ch.pid;
	/* Joined: a descriptor that could move others in is not kept. */
	contain_close_procs(&worker->group);

	/* A direct lookup table: clients, ctls, the PTY or pipes, a few more. */
	if ((worker->ctx = worker_context(worker_protocols,
	    (rlim_t)worker_limits.max_clients + 64)) == NULL ||
	    (worker->vh = lws_get_vhost_by_name(worker->ctx, "default")) == NULL)
		worker_fail(c, 500, "internal", "cannot create event loop");
	if ((worker->sig = worker_fd_adopt(WFD_SIGNAL, sfd)) == NULL)
		worker_fail(c, 500, "internal", "cannot adopt fds");
	/*
	 * A connection to the socket is a SIGIO on the signalfd, not one
	 * more descriptor in every poll: each poll of a keystroke's round
	 * trip goes over every descriptor in the loop.  What came before
	 * is accepted now.
	 */
	worker->listen_fd = fd;
	if (fcntl(fd, F_SETOWN, getpid()) == -1 ||
	    fcntl(fd, F_SETFL, O_NONBLOCK | O_ASYNC) == -1)
		worker_fail(c, 500, "internal", "cannot watch the socket");
	worker_accept();
	if (ch.master != -1) {
		/*
		 * lws closes the master's wsi when the child closes its
		 * terminal; a child that goes on running must not be hung up
		 * (SIGHUP) by that, so a copy is held until it is reaped.
		 */
		worker->master_keep = fcntl(ch.master, F_DUPFD_CLOEXEC, 3);
		fcntl(ch.master, F_SETFL, O_NONBLOCK);
		worker->inq.fd = ch.master;
		worker->out = worker_fd_adopt(WFD_OUT, ch.master);
		worker->out_open = 1;
	} else {
		fcntl(ch.in, F_SETFL, O_NONBLOCK);
		fcntl(ch.out, F_SETFL, O_NONBLOCK);
		fcntl(ch.err, F_SETFL, O_NONBLOCK);
		worker->inq.fd = ch.in;
		worker->in = worker_fd_adopt(WFD_IN, ch.in);
		worker->out = worker_fd_adopt(WFD_OUT, ch.out);
		worker->err = worker_fd_adopt(WFD_ERR, ch.err);
		worker->out_open = worker->err_open = 1;
		/* stdin is only watched while input is queued. */
		if (worker->in != NULL)
			lws_rx_flow_control(worker->in->wsi, 0);
	}
	if (worker->out == NULL || (!worker->req.pty &&
	    (worker->in == NULL || worker->err == NULL)))
		worker_fail(c, 500, "internal", "cannot adopt fds");
}

/*
 * libwebsockets 4.1 polls with the time to its next timer in whole
 * milliseconds, rounded down: in the last millisecond before a timer is
 * due it polls with no timeout, again and again (a hundred or more polls
 * each time).  While output flows, the update's timer comes due twice a
 * second and the gather's after every burst, so both run here, up to that
 * millisecond early, as soon as a poll returns inside it; neither minds.
 */
static void
worker_timer_early(lws_sorted_usec_list_t *sul)
{
	if (lws_dll2_is_detached(&sul->list) ||
	    sul->us - lws_now_usecs() >= LWS_US_PER_MS)
		return;
	lws_sul_cancel(sul);
	sul->cb(sul);
}

void
worker_main(int ctlfd, const msgpack_object *spawn)
{
	struct ctl		 c;
	struct worker_fd	*wf;

	if ((worker = calloc(1, sizeof(*worker))) == NULL)
		_exit(1);
	LIST_INIT(&worker->clients);
	LIST_INIT(&worker->controls);
	inputq_init(&worker->inq);
	worker->master_keep = -1;
	if (setsid() == -1)
		log_warn("setsid");
	worker_setup(ctlfd, spawn, &c);

	/* The spawn socket becomes the first control connection. */
	worker_report(&c, 201, NULL, NULL);
	/*
	 * An idle session is most of what lodged costs: give back the heap
	 * that setup used and freed (the request, argv, environ, buffers).
	 */
	malloc_trim(0);
	if ((wf = worker_fd_adopt(WFD_CONTROL, c.fd)) == NULL)
		fatalx("cannot adopt the control connection");
	c.fd = -1;
	ctl_close(&c);
	while (worker->quitting < 2) {
		if (lws_service(worker->ctx, 0) < 0)
			break;
		worker_timer_early(&worker->sul_update);
		worker_timer_early(&worker->gather.sul);
		txhold_service();
		if (worker->quitting == 1 && worker->nclients == 0)
			break;
	}
	(void)unlink(worker->sockpath);
	lws_context_destroy(worker->ctx);
	exit(0);
}
