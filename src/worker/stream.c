/*
 * stream.c: one exec stream (GET /v1/exec/stream), in a process of its own.
 *
 * The template forks this process with the client's connection, whose
 * request head the front has only peeked at; libwebsockets completes the
 * upgrade here.  The first message starts the command; output is then paced
 * by the client: a pipe is read only when the frame read before it has been
 * written, so memory stays at one chunk per stream whatever the output size.
 * The exit message goes last, after the pipes reached EOF (or a short
 * deadline for grandchildren holding them).  A connection that drops before
 * the exit takes everything the command started with it (its group,
 * contain.c): HUP, then KILL; and nothing it started outlives the stream.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rawio.h"
#include "mpack.h"
#include "pwcache.h"
#include "runas.h"
#include "worker.h"
#include "wsmsg.h"

#define STREAM_CHUNK		(256 * 1024)
#define STREAM_START_SECS	30	/* for the start message */
#define STREAM_CLIENT_CLOSE_S	10	/* clientCloses: its close after exit */

enum stream_fd_kind {
	SFD_OUT,
	SFD_ERR,
	SFD_IN,
	SFD_SIGNAL,
};

struct stream_fd {
	enum stream_fd_kind	 kind;
	int			 fd;		/* lws's; it may close it on HUP */
	int			 rfd;		/* ours: read until EOF */
	struct lws		*wsi;
	int			 open;
	int			 paused;	/* waiting for the client */
	/* one chunk read but not yet sent */
	unsigned char		*chunk;
	size_t			 len;
	int			 gathering;	/* held for more output */
	uint64_t		 off;
	uint64_t		 seq;
};

static struct {
	struct lws_context	*ctx;
	struct lws_vhost	*vh;
	struct lws		*ws;		/* the client */
	struct txhold		 tx;
	int			 started;
	int			 tty;
	pid_t			 pid;
	int			 reaped;
	int			 status;
	int			 timed_out;
	int			 final;
	int			 sent_exit;
	int			 quit;
	struct escalate		 ending;	/* its signals */
	int			 drain_expired;
	int			 master_keep;	/* the PTY, until the reap */
	struct runas_policy	 policy;	/* whom it may run as */
	int			 set_nproc;	/* the peer's process limit */
	struct rlimit		 nproc;
	struct contain		 group;		/* all the command starts */
	uint64_t		 next_off;
	uint64_t		 next_seq;
	struct stream_fd	 out, err, in, sig;
	struct inputq		 inq;
	struct inputq_owner	 in_owner;	/* the client's share of it */
	struct wsrx		 rx;
	/* small replies (started, error), oldest first */
	unsigned char		*msgs[16];
	size_t			 msglen[16];
	int			 nmsgs;
	int			 close_after_msgs;	/* 1000, or 1009 */
	int			 closing;	/* 1: our close frame is queued,
					   2: the client's is awaited */
	int			 client_closes;	/* after exit, the client closes */
	int			 client_late;	/* and has not in time */
	lws_sorted_usec_list_t	 sul_start;
	lws_sorted_usec_list_t	 sul_timeout;
	lws_sorted_usec_list_t	 sul_drain;
	lws_sorted_usec_list_t	 sul_kill;
	lws_sorted_usec_list_t	 sul_client_close;
	struct gather		 gather;	/* small output held */
} st;

/* The connection dropped (HUP) or the timeout came (TERM), then KILL. */
static const struct escalate_step stream_ending[] = {
	{ SIGHUP, 2000 }, { SIGKILL, 50 }, { 0, 0 }
};

static unsigned char	stream_wbuf[LWS_PRE + STREAM_CHUNK + 256];

static int	stream_ws_cb(struct lws *, enum lws_callback_reasons, void *,
		    void *, size_t);
static int	stream_raw_cb(struct lws *, enum lws_callback_reasons, void *,
		    void *, size_t);

static const struct lws_protocols stream_protocols[] = {
	/* A frame goes to the socket in one write: see txhold.c. */
	{ "lodge", stream_ws_cb, 0, 65536, 0, NULL, STREAM_CHUNK + 256 },
	{ "lodge-raw", stream_raw_cb, 0, 0, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

static void
stream_wake(void)
{
	if (st.ws != NULL)
		lws_callback_on_writable(st.ws);
}

static void
stream_queue(msgpack_sbuffer *sb)
{
	if (st.nmsgs == 16)
		return;
	if ((st.msgs[st.nmsgs] = malloc(sb->size)) == NULL)
		return;
	memcpy(st.msgs[st.nmsgs], sb->data, sb->size);
	st.msglen[st.nmsgs++] = sb->size;
	stream_wake();
}

static void
stream_error(const char *code, const char *message)
{
	msgpack_sbuffer	sb;

	msgpack_sbuffer_init(&sb);
	wsmsg_pack_error(&sb, code, message);
	stream_queue(&sb);
	msgpack_sbuffer_destroy(&sb);
}

static void
stream_quit(void)
{
	st.quit = 1;
	lws_cancel_service(st.ctx);
}

static void
stream_kill_cb(lws_sorted_usec_list_t *sul)
{
	int64_t	now = escalate_now();
	int	sig;

	if (!contain_alive(&st.group, st.pid))
		return;
	if ((sig = escalate_due(&st.ending, now)) != 0)
		(void)contain_signal_all(&st.group, st.pid, st.reaped, sig);
	if (escalate_at(&st.ending) != 0)
		lws_sul_schedule(st.ctx, 0, &st.sul_kill, stream_kill_cb,
		    (escalate_at(&st.ending) - now) * LWS_US_PER_MS);
}

/* sig to everything the command started now, KILL after the grace time. */
static void
stream_terminate(int sig)
{
	if (st.pid <= 0)
		return;
	escalate_start(&st.ending, stream_ending, sig, escalate_now());
	stream_kill_cb(NULL);
}

/* Leaving: nothing the stream started outlives it (bounded wait). */
static void
stream_end_group(void)
{
	int	i;

	for (i = 0; i < 200 && contain_alive(&st.group, st.pid); i++) {
		(void)contain_signal_all(&st.group, st.pid, st.reaped, SIGKILL);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		usleep(10000);
	}
}

/* clientCloses, and the client did not close in time: we do. */
static void
stream_client_close_cb(lws_sorted_usec_list_t *sul)
{
	st.client_late = 1;
	stream_wake();
}

static void
stream_timeout_cb(lws_sorted_usec_list_t *sul)
{
	if (st.reaped)
		return;
	st.timed_out = 1;
	stream_terminate(SIGTERM);
}

static void
stream_start_cb(lws_sorted_usec_list_t *sul)
{
	if (!st.started)
		stream_quit();
}

static void
stream_fd_close(struct stream_fd *f)
{
	if (f->wsi != NULL) {
		lws_set_opaque_user_data(f->wsi, NULL);
		lws_set_timeout(f->wsi, 1, LWS_TO_KILL_ASYNC);
		f->wsi = NULL;
	}
	if (f->rfd != -1)
		close(f->rfd);
	f->rfd = -1;
	f->fd = -1;
	f->open = 0;
	if (f->gathering) {	/* what it held goes as it is */
		f->gathering = 0;
		stream_wake();
	}
}

static void
stream_check_final(void)
{
	if (st.final || !st.reaped || st.out.open || st.err.open)
		return;
	st.final = 1;
	lws_sul_cancel(&st.sul_drain);
	stream_wake();
}

static int	stream_read(struct stream_fd *);

/*
 * The child is gone but a pipe is still open.  From now on a pipe that has
 * nothing to read counts as closed: grandchildren may hold it forever.
 * Bytes already in it are still read, at the client's pace.
 */
static void
stream_drain_cb(lws_sorted_usec_list_t *sul)
{
	st.drain_expired = 1;
	if (st.out.open && st.out.len == 0)
		(void)stream_read(&st.out);
	if (st.err.open && st.err.len == 0)
		(void)stream_read(&st.err);
	stream_check_final();
}

/* The oldest unsent chunk of the two streams, to keep their order. */
static struct stream_fd *
stream_next_chunk(void)
{
	struct stream_fd	*a = &st.out, *b = &st.err;

	if (a->len > 0 && b->len > 0)
		return (a->seq < b->seq ? a : b);
	if (a->len > 0)
		return (a);
	if (b->len > 0)
		return (b);
	return (NULL);
}

/* The oldest chunk that may go now: none while it gathers more. */
static struct stream_fd *
stream_ready_chunk(void)
{
	struct stream_fd	*f = stream_next_chunk();

	return (f != NULL && f->gathering ? NULL : f);
}

/* A chunk as one output frame; its slot is free again. */
static int
stream_send_chunk(struct stream_fd *f)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;
	int		rc;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	mpack_kv_str(&pk, "type", f->kind == SFD_ERR ? "stderr" : "stdout");
	mpack_kv_uint(&pk, "offset", f->off);
	mpack_str(&pk, "data");
	msgpack_pack_bin(&pk, f->len);
	/* The header, then the chunk straight into the frame. */
	memcpy(stream_wbuf + LWS_PRE, sb.data, sb.size);
	memcpy(stream_wbuf + LWS_PRE + sb.size, f->chunk, f->len);
	rc = lws_write(st.ws, stream_wbuf + LWS_PRE, sb.size + f->len,
	    LWS_WRITE_BINARY);
	txhold_wrote(&st.tx);
	st.gather.sent_at = lws_now_usecs();
	st.gather.answering = 0;
	msgpack_sbuffer_destroy(&sb);
	f->len = 0;
	return (rc < 0 ? -1 : 0);
}

/*
 * A short read (all that was waiting, a keystroke's echo say) goes out at
 * once when nothing is queued before it and lws holds nothing: no poll for
 * a writeable callback first, and no read that can only fail with EAGAIN
 * after it.  1 if it went.
 */
static int
stream_send_now(struct stream_fd *f, size_t n)
{
	if (n >= WORKER_FULL_READ || st.ws == NULL || st.closing ||
	    st.nmsgs > 0 || st.close_after_msgs || st.sent_exit ||
	    st.tx.held || st.tx.dead || lws_partial_buffered(st.ws) ||
	    stream_next_chunk() != f)
		return (0);
	if (stream_send_chunk(f) == -1)
		lws_set_timeout(st.ws, PENDING_TIMEOUT_USER_OK,
		    LWS_TO_KILL_ASYNC);
	return (1);
}

/*
 * A PTY gives 4095 bytes a read at most: while reads come back full, more
 * is waiting, and it goes in the same frame, up to a session's largest, so
 * bulk output costs the client one message per WORKER_CHUNK, not per read.
 * An EOF or error met here is met again by the next read.
 */
static size_t
stream_gather(int fd, unsigned char *buf, size_t n, ssize_t got)
{
	while ((size_t)got >= WORKER_FULL_READ &&
	    n + WORKER_FULL_READ <= WORKER_CHUNK) {
		if ((got = read(fd, buf + n, WORKER_CHUNK - n)) <= 0)
			break;
		n += (size_t)got;
	}
	return (n);
}

/* Let f's pipe be read, or hold it until the client took f's chunk. */
static void
stream_flow(struct stream_fd *f, int on)
{
	if (f->wsi != NULL && f->paused == on) {
		lws_rx_flow_control(f->wsi, on);
		f->paused = !on;
	}
}

/* A chunk done gathering waits for the client; its pipe with it. */
static void
stream_release(struct stream_fd *f)
{
	if (!f->gathering)
		return;
	f->gathering = 0;
	stream_flow(f, 0);
	stream_wake();
}

static void
stream_gather_cb(lws_sorted_usec_list_t *sul)
{
	stream_release(&st.out);
	stream_release(&st.err);
}

/*
 * Small output (gather.c) is read on into the same chunk while it is
 * held, up to a frame's size, while the pipe can be read and the client
 * is there.  1 if f holds.
 */
static int
stream_hold(struct stream_fd *f)
{
	f->gathering = !st.drain_expired && st.ws != NULL && f->wsi != NULL &&
	    f->len + WORKER_FULL_READ <= WORKER_CHUNK &&
	    gather_hold(&st.gather, st.ctx, stream_gather_cb);
	return (f->gathering);
}

/*
 * Read one chunk from a pipe, if its slot is free, or more into a chunk
 * that gathers (the last one read: the offsets stay in order); 1 read, 0
 * not.
 */
static int
stream_read(struct stream_fd *f)
{
	struct stream_fd	*other = f == &st.out ? &st.err : &st.out;
	size_t			 start = f->len;
	ssize_t			 n;

	if (!f->open || (start > 0 && (!f->gathering ||
	    f->seq + 1 != st.next_seq)))
		return (0);
	n = read(f->rfd, f->chunk + start, start > 0 ? WORKER_CHUNK - start :
	    STREAM_CHUNK);
	if (n > 0) {
		f->len = stream_gather(f->rfd, f->chunk, start + (size_t)n, n);
		st.next_off += (uint64_t)(f->len - start);
		if (start == 0) {
			f->off = st.next_off - f->len;
			f->seq = st.next_seq++;
			stream_release(other);	/* it can no longer grow */
		}
		if (stream_hold(f)) {
			stream_flow(f, 1);
			return (1);
		}
		if (start == 0 && stream_send_now(f, f->len)) {
			stream_flow(f, 1);
			return (1);
		}
		/* Hold the pipe until the client took this chunk. */
		stream_flow(f, 0);
		stream_wake();
		return (1);
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
		if (st.drain_expired && errno == EAGAIN) {
			stream_fd_close(f);
			stream_check_final();
			return (0);
		}
		if (f->len == 0)
			stream_flow(f, 1);
		return (0);
	}
	/*
	 * EOF, or EIO from a PTY whose other side is all closed.  A child
	 * that closed its terminal may still be running (cat closes its
	 * descriptors before exit): closing the last master now would hang
	 * the terminal up and kill it with SIGHUP, so the master is kept
	 * until the child is reaped.
	 */
	if (st.tty && !st.reaped && f->kind == SFD_OUT) {
		st.master_keep = f->rfd;
		f->rfd = -1;
	}
	stream_fd_close(f);
	stream_check_final();
	return (0);
}

static void
stream_reap(void)
{
	pid_t	pid;
	int	status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != st.pid)
			continue;
		st.reaped = 1;
		st.status = status;
		if (st.master_keep != -1) {
			close(st.master_keep);
			st.master_keep = -1;
		}
		lws_sul_cancel(&st.sul_timeout);
		lws_sul_schedule(st.ctx, 0, &st.sul_drain, stream_drain_cb,
		    WORKER_DRAIN_MS * LWS_US_PER_MS);
		stream_check_final();
	}
}

/* Write queued input to the terminal or the stdin pipe while it takes it. */
static void
stream_input_flush(void)
{
	struct lws	*w = st.tty ? st.out.wsi : st.in.wsi;

	st.inq.fd = st.tty ? st.out.rfd : st.in.fd;
	if (inputq_write(&st.inq) > 0) {
		if (w != NULL)
			rawio_writable(w);
		else
			inputq_drop(&st.inq);	/* nobody reads any more */
	} else if (st.inq.eof && !st.tty && st.in.open)
		stream_fd_close(&st.in);
}

/* Take a stdin message whole: nothing is dropped (inputq.c). */
static void
stream_input(const void *data, size_t len)
{
	if (len == 0)
		return;
	if (inputq_push(&st.inq, &st.in_owner, data, len) == -1) {
		/* Not delivered whole: the connection fails. */
		stream_error("internal", "out of memory");
		st.close_after_msgs = LWS_CLOSE_STATUS_UNEXPECTED_CONDITION;
		return;
	}
	/* Its answer goes at once, with what was held before it. */
	st.gather.answering = 1;
	stream_release(&st.out);
	stream_release(&st.err);
	stream_input_flush();
}

static struct stream_fd *
stream_adopt(struct stream_fd *f, enum stream_fd_kind kind, int fd)
{
	lws_sock_file_fd_type	u;

	f->kind = kind;
	f->fd = fd;
	f->rfd = -1;
	f->open = 1;
	u.filefd = fd;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	/*
	 * lws closes a raw-file wsi on POLLHUP without POLLIN, which is what a
	 * paused pipe reports once the child is gone: reading through a
	 * descriptor of our own keeps the bytes still in it.
	 */
	if ((kind == SFD_OUT || kind == SFD_ERR) &&
	    (f->rfd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) == -1)
		return (NULL);
	f->wsi = lws_adopt_descriptor_vhost(st.vh, LWS_ADOPT_RAW_FILE_DESC, u,
	    "lodge-raw", NULL);
	if (f->wsi == NULL)
		return (NULL);
	lws_set_opaque_user_data(f->wsi, f);
	return (f);
}

/* The peer's process limit goes first: the uid change is what it counts. */
static int
stream_become(uid_t uid, gid_t gid, const char *name)
{
	if (st.set_nproc && child_limit_nproc(&st.nproc) == -1)
		return (-1);
	return (worker_become(name, uid, gid));
}

/*
 * A non-root peer on the Unix socket may only run things as itself:
 * become it before a byte it sent is read.  Without a passwd entry its
 * stream cannot start; it is read as that uid and the overflow group.
 */
static void
stream_become_peer(void)
{
	struct passwd	pw;
	char		buf[4096];

	if (!st.policy.restricted || st.policy.lodged != 0)
		return;
	if (pwcache_get(NULL, st.policy.peer, &pw, buf, sizeof(buf)) == -1) {
		pw.pw_name = NULL;
		pw.pw_gid = 65534;
	}
	if (stream_become(st.policy.peer, pw.pw_gid, pw.pw_name) == -1)
		fatal("cannot become the peer's uid %u",
		    (unsigned)st.policy.peer);
}

/* The user the command runs as (runas.c); the stream becomes it. */
static int
stream_user(const char *name, struct passwd *pw, char *buf, size_t buflen,
    char *why, size_t whylen, const char **code)
{
	enum runas_verdict	v;

	if (pwcache_get(name[0] == '\0' ? NULL : name,
	    runas_default(&st.policy), pw, buf, buflen) == -1) {
		snprintf(why, whylen, "unknown user '%s'", name);
		*code = "spawn_failed";
		return (-1);
	}
	if ((v = runas_check(&st.policy, pw->pw_uid)) != RUNAS_OK) {
		snprintf(why, whylen, "%s", runas_why(v));
		*code = "forbidden";
		return (-1);
	}
	if (pw->pw_uid != geteuid() &&
	    stream_become(pw->pw_uid, pw->pw_gid, pw->pw_name) == -1) {
		snprintf(why, whylen, "cannot become user '%s': %s", name,
		    strerror(errno));
		*code = "spawn_failed";
		return (-1);
	}
	return (0);
}

static void
stream_start(const msgpack_object *o)
{
	struct spawnreq		 req;
	struct child_spec	 spec;
	struct child		 ch;
	struct passwd		 pw;
	msgpack_sbuffer		 sb;
	msgpack_packer		 pk;
	char			 why[1024], pwbuf[4096];
	const char		*code = "bad_request", *shell;

	memset(&spec, 0, sizeof(spec));
	if (spawnreq_decode(o, SPAWN_STREAM, 0, &req, why, sizeof(why)) ==
	    -1) {
		stream_error("bad_request", why);
		return;
	}
	if (stream_user(req.user, &pw, pwbuf, sizeof(pwbuf), why, sizeof(why),
	    &code) == -1)
		goto fail;
	shell = pw.pw_shell != NULL && pw.pw_shell[0] != '\0' ? pw.pw_shell :
	    "/bin/sh";
	/* Not a login shell: a start needs command or args. */
	if (child_spec_init(&spec, &req, pw.pw_name, pw.pw_dir, shell,
	    req.pty) == -1) {
		snprintf(why, sizeof(why), "out of memory");
		code = "internal";
		goto fail;
	}
	spec.cgroup_fd = st.group.procs;
	spec.set_nproc = st.set_nproc;
	spec.nproc = st.nproc;
	if (child_start(&spec, &ch, why, sizeof(why)) == -1) {
		code = "spawn_failed";
		goto fail;
	}
	/* Joined: a descriptor that could move others in is not kept. */
	contain_close_procs(&st.group);
	st.started = 1;
	st.tty = req.pty;
	st.client_closes = req.client_closes;
	st.pid = ch.pid;
	if (ch.master != -1) {
		stream_adopt(&st.out, SFD_OUT, ch.master);
	} else {
		stream_adopt(&st.out, SFD_OUT, ch.out);
		stream_adopt(&st.err, SFD_ERR, ch.err);
		stream_adopt(&st.in, SFD_IN, ch.in);
		if (st.in.wsi != NULL)
			lws_rx_flow_control(st.in.wsi, 0);
	}
	if (st.out.wsi == NULL || (!st.tty && (st.err.wsi == NULL ||
	    st.in.wsi == NULL))) {
		stream_terminate(SIGKILL);
		snprintf(why, sizeof(why), "cannot watch the pipes");
		code = "internal";
		goto fail;
	}
	if ((st.out.chunk = malloc(STREAM_CHUNK)) == NULL ||
	    (!st.tty && (st.err.chunk = malloc(STREAM_CHUNK)) == NULL)) {
		stream_terminate(SIGKILL);
		snprintf(why, sizeof(why), "out of memory");
		code = "internal";
		goto fail;
	}
	if (req.timeout > 0)
		lws_sul_schedule(st.ctx, 0, &st.sul_timeout, stream_timeout_cb,
		    (lws_usec_t)(req.timeout * LWS_US_PER_SEC));
	lws_sul_cancel(&st.sul_start);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	mpack_kv_str(&pk, "type", "started");
	mpack_kv_int(&pk, "pid", st.pid);
	worker_limits_pack(&pk, INPUTQ_CLIENT);
	stream_queue(&sb);
	msgpack_sbuffer_destroy(&sb);
	setproctitle("exec stream %d", (int)st.pid);
	goto out;
fail:
	stream_error(code, why);
	if (strcmp(code, "bad_request") != 0)
		st.close_after_msgs = 1;
out:
	child_spec_free(&spec);
	spawnreq_free(&req);
}

static void
stream_message(void *arg, const unsigned char *buf, size_t len)
{
	struct wsmsg	m;
	char		why[256];

	if (wsmsg_decode(buf, len, &m, why, sizeof(why)) == -1) {
		stream_error("bad_request", why);
		return;
	}
	if (m.type == WSMSG_START) {
		if (st.started)
			stream_error("bad_request", "already started");
		else
			stream_start(&m.up.data);
		goto out;
	}
	if (!st.started) {
		stream_error("bad_request", "the first message must be 'start'");
		goto out;
	}
	switch (m.type) {
	case WSMSG_STDIN:
		if (st.reaped || st.inq.eof)
			stream_error("conflict", "stdin is closed");
		else
			stream_input(m.data, m.len);
		break;
	case WSMSG_EOF:
		if (st.tty) {
			stream_error("bad_request", "eof is for pipe mode only; "
			    "send ^D (0x04) to a terminal");
			break;
		}
		st.inq.eof = 1;
		stream_input_flush();
		break;
	case WSMSG_RESIZE:
		if (!st.tty) {
			stream_error("bad_request", "resize is for tty mode");
			break;
		}
		if (st.out.rfd == -1 ||
		    child_set_size(st.out.rfd, m.cols, m.rows) == -1)
			stream_error("conflict", "the terminal is gone");
		break;
	case WSMSG_SIGNAL:
		if (st.reaped || kill(-child_signal_group(st.tty ?
		    st.out.rfd : -1, st.pid), m.signo) == -1)
			stream_error("conflict", "the process has exited");
		break;
	default:
		break;
	}
out:
	wsmsg_free(&m);
}

static int
stream_write(const void *msg, size_t len)
{
	int	rc;

	memcpy(stream_wbuf + LWS_PRE, msg, len);
	rc = lws_write(st.ws, stream_wbuf + LWS_PRE, len, LWS_WRITE_BINARY);
	txhold_wrote(&st.tx);
	return (rc < 0 ? -1 : 0);
}

static int
stream_writeable(void)
{
	struct stream_fd	*f;
	msgpack_sbuffer		 sb;
	msgpack_packer		 pk;
	int			 rc, i, code;

	/*
	 * The close is under way: lws sent (or is sending) our close frame
	 * and still calls us while it waits for the client's.  Returning -1
	 * again would kill the socket at once, and a client whose message
	 * (eof, say) is still in flight then fails its write and drops the
	 * connection without reading the exit message already sent: 1006.
	 */
	if (st.closing == 2 && st.client_late) {
		st.closing = 1;
		lws_close_reason(st.ws, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
		return (-1);
	}
	if (st.closing)
		return (0);
	txhold_writeable(&st.tx);
	if (st.nmsgs > 0) {
		rc = stream_write(st.msgs[0], st.msglen[0]);
		free(st.msgs[0]);
		st.nmsgs--;
		for (i = 0; i < st.nmsgs; i++) {
			st.msgs[i] = st.msgs[i + 1];
			st.msglen[i] = st.msglen[i + 1];
		}
		stream_wake();
		return (rc);
	}
	if (st.sent_exit && !st.close_after_msgs && st.client_closes) {
		/*
		 * The client closes once it has read the exit message, which
		 * a client that reads slowly (a browser's WebSocketStream)
		 * may not have done when a close of ours reaches it.  If it
		 * does not within STREAM_CLIENT_CLOSE_S, we close.
		 */
		st.closing = 2;
		lws_sul_schedule(st.ctx, 0, &st.sul_client_close,
		    stream_client_close_cb,
		    (lws_usec_t)STREAM_CLIENT_CLOSE_S * LWS_US_PER_SEC);
		return (0);
	}
	if (st.close_after_msgs || st.sent_exit) {
		st.closing = 1;
		code = st.close_after_msgs > 1 ? st.close_after_msgs :
		    LWS_CLOSE_STATUS_NORMAL;
		if (code == LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE)
			lws_close_reason(st.ws, code,
			    (unsigned char *)"message too big", 15);
		else
			lws_close_reason(st.ws, code, NULL, 0);
		return (-1);
	}
	if ((f = stream_ready_chunk()) != NULL) {
		rc = stream_send_chunk(f);
		(void)stream_read(f);
		if (stream_ready_chunk() != NULL || st.final)
			stream_wake();
		return (rc < 0 ? -1 : 0);
	}
	if (st.final && !st.sent_exit && stream_next_chunk() == NULL) {
		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		msgpack_pack_map(&pk, 4);
		mpack_kv_str(&pk, "type", "exit");
		wsmsg_pack_status(&pk, 1, st.status);
		mpack_kv_bool(&pk, "timedOut", st.timed_out);
		rc = stream_write(sb.data, sb.size);
		msgpack_sbuffer_destroy(&sb);
		st.sent_exit = 1;
		stream_wake();
		return (rc);
	}
	return (0);
}

static void
stream_rx_error(void *arg, const char *code, const char *message)
{
	stream_error(code, message);
}

static const struct wsrx_ops stream_rx_ops = {
	stream_message, stream_rx_error
};

static int
stream_receive(struct lws *wsi, const void *in, size_t len)
{
	int	rc;

	if (st.close_after_msgs)
		return (0);
	rc = wsrx_take(&st.rx, wsi, in, len, worker_limits.msg_max,
	    &stream_rx_ops, NULL);
	if (rc == WSRX_TOO_BIG)
		st.close_after_msgs = LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE;
	return (rc == WSRX_NOMEM ? -1 : 0);
}

static int
stream_ws_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	char	uri[256];

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		lws_return_http_status(wsi, 404, NULL);
		return (-1);
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 ||
		    strcmp(uri, "/v1/exec/stream") != 0 || st.ws != NULL)
			return (1);
		return (0);
	case LWS_CALLBACK_ESTABLISHED:
		st.ws = st.in_owner.wsi = wsi;
		txhold_init(&st.tx, wsi);
		return (0);
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return (stream_writeable());
	case LWS_CALLBACK_RECEIVE:
		return (stream_receive(wsi, in, len));
	case LWS_CALLBACK_CLOSED:
		txhold_forget(&st.tx);
		st.ws = st.in_owner.wsi = NULL;
		if (st.started && (!st.reaped || contain_alive(&st.group, st.pid)))
			stream_terminate(SIGHUP);
		else
			stream_quit();
		return (0);
	case LWS_CALLBACK_WSI_DESTROY:
		if (wsi == st.ws) {
			txhold_forget(&st.tx);
			st.ws = st.in_owner.wsi = NULL;
		}
		if (!st.started)
			stream_quit();
		return (0);
	default:
		return (0);
	}
}

static int
stream_raw_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct stream_fd	*f = lws_get_opaque_user_data(wsi);
	struct signalfd_siginfo	 si;

	if (f == NULL)
		return (0);
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (f->kind == SFD_SIGNAL) {
			while (read(f->fd, &si, sizeof(si)) > 0)
				;
			stream_reap();
			if (st.reaped && st.ws == NULL && !st.final)
				stream_quit();
		} else if (f->kind == SFD_OUT || f->kind == SFD_ERR) {
			if (st.ws == NULL) {
				/* Nobody reads: drain so the group can die. */
				char sink[4096];

				if (read(f->fd, sink, sizeof(sink)) <= 0)
					return (-1);
			} else
				(void)stream_read(f);
		}
		return (0);
	case LWS_CALLBACK_RAW_WRITEABLE_FILE:
		stream_input_flush();
		return (0);
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		rawio_forget(wsi);
		lws_set_opaque_user_data(wsi, NULL);
		f->wsi = NULL;
		f->fd = -1;
		if (f->open && f->rfd != -1) {
			/* Hung up: read the rest at the client's pace. */
			(void)stream_read(f);
			return (0);
		}
		if (f->open) {
			f->open = 0;
			stream_check_final();
		}
		return (0);
	default:
		return (0);
	}
}

void
stream_main(int fd, const msgpack_object *o)
{
	char		name[32];
	int64_t		peer;
	int		sfd;

	if (setsid() == -1)
		log_warn("setsid");
	setproctitle("exec stream");
	log_setident("lodged-stream");
	memset(&st, 0, sizeof(st));
	inputq_init(&st.inq);
	st.out.fd = st.err.fd = st.in.fd = -1;
	st.out.rfd = st.err.rfd = st.in.rfd = st.sig.rfd = -1;
	st.master_keep = -1;
	st.policy.lodged = geteuid();
	if (mpack_get_int(o, "peerUid", -1, UINT32_MAX, &peer) == 1 &&
	    peer != -1) {
		st.policy.restricted = 1;
		st.policy.peer = (uid_t)peer;
	}
	st.set_nproc = template_nproc(o, &st.nproc);
	/* Made while root: the child joins it after the uid change. */
	snprintf(name, sizeof(name), "t%d", (int)getpid());
	contain_create(&st.group, name, getpid());
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		log_warn("PR_SET_CHILD_SUBREAPER");
	if ((sfd = worker_signalfd(0)) == -1)
		fatal("signalfd");
	worker_limits_decode(o);
	if ((st.ctx = worker_context(stream_protocols, 64)) == NULL)
		fatalx("cannot create the event loop");
	st.vh = lws_get_vhost_by_name(st.ctx, "default");
	if (stream_adopt(&st.sig, SFD_SIGNAL, sfd) == NULL)
		fatalx("cannot adopt the signalfd");
	stream_become_peer();
	if (control_adopt_http(st.vh, fd, o) == NULL)
		fatalx("cannot adopt the connection");
	lws_sul_schedule(st.ctx, 0, &st.sul_start, stream_start_cb,
	    STREAM_START_SECS * LWS_US_PER_SEC);

	while (!st.quit) {
		if (lws_service(st.ctx, 0) < 0)
			break;
		txhold_service();
		/* Gone client: leave once all the command started is gone. */
		if (st.ws == NULL && st.started && st.reaped &&
		    !contain_alive(&st.group, st.pid))
			break;
	}
	stream_end_group();
	lws_context_destroy(st.ctx);
	exit(0);
}
