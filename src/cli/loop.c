/*
 * loop.c: the one event loop of a streaming command.
 *
 * A libwebsockets context serves the WebSocket (ws.c) and our own
 * descriptors, adopted as raw files: standard input, a self-pipe for
 * signals, and standard output and error for the moments they are full.
 * Output is written at once while it can be; what cannot is kept in a
 * buffer, and above a high-water mark the stream stops reading the socket
 * (loop_output_full) until the buffer drains (ws_pause(0)).  So a slow
 * reader of our output slows the stream instead of growing our memory.
 * The descriptors are dups, so lws may close them freely.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rawio.h"

#define LOOP_OUT_HIGH	(256 * 1024)	/* stop reading the stream */
#define LOOP_OUT_LOW	(32 * 1024)	/* read again */
#define LOOP_READ_SIZE	(16 * 1024)

enum loop_kind {
	LOOP_INPUT,
	LOOP_OUTPUT,
	LOOP_SIGNALS,
};

struct loop_fd {
	enum loop_kind	 kind;
	int		 fd;		/* our dup, owned by lws once adopted */
	struct lws	*wsi;
};

struct loop_out {
	struct loop_fd	 lfd;
	int		 target;	/* 1 or 2 */
	int		 broken;
	char		*buf;
	size_t		 len;
	size_t		 off;
	size_t		 cap;
};

static int	loop_raw_cb(struct lws *, enum lws_callback_reasons, void *,
		    void *, size_t);
static void	loop_input_ended(void);
static int	loop_read_input(void);

static const struct lws_protocols loop_protocols[] = {
	{ "lodge-ws", ws_callback, 0, 65536, 0, NULL, 0 },
	{ "lodge-raw", loop_raw_cb, 0, 0, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

static struct lws_context	*loop_ctx;
static struct lws_vhost		*loop_vh;
static const struct loop_ops	*loop_ops;
static struct loop_fd		 loop_in = { LOOP_INPUT, -1, NULL };
static struct loop_fd		 loop_sig = { LOOP_SIGNALS, -1, NULL };
static int			 loop_sig_w = -1;
static struct loop_out		 loop_outs[2] = {
	{ { LOOP_OUTPUT, -1, NULL }, 1, 0, NULL, 0, 0, 0 },
	{ { LOOP_OUTPUT, -1, NULL }, 2, 0, NULL, 0, 0, 0 },
};
static int			 loop_in_fd = -1;	/* ours, for reading */
static int			 loop_in_paused;
static int			 loop_in_hup;	/* lws saw the hang-up */
static int			 loop_in_ended;
static int			 loop_was_full;
static int			 loop_done;
static int			 loop_status;
static int			 loop_last = -1;

int
loop_init(const struct loop_ops *ops)
{
	struct lws_context_creation_info	info;

	loop_ops = ops;
	lws_set_log_level(getenv("LODGE_DEBUG") != NULL ? LLL_ERR | LLL_WARN |
	    LLL_NOTICE | LLL_INFO | LLL_CLIENT : 0, NULL);
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = loop_protocols;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	info.fd_limit_per_thread = 64;
	info.vhost_name = "default";
	if ((loop_ctx = lws_create_context(&info)) == NULL) {
		report_errorx("cannot create the event loop");
		return (-1);
	}
	loop_vh = lws_get_vhost_by_name(loop_ctx, "default");
	/* lws ignores SIGPIPE; writes to a closed pipe give EPIPE. */
	signal(SIGPIPE, SIG_IGN);
	return (0);
}

void
loop_free(void)
{
	size_t	i;

	if (loop_ctx != NULL)
		lws_context_destroy(loop_ctx);
	loop_ctx = NULL;
	for (i = 0; i < 2; i++) {
		free(loop_outs[i].buf);
		loop_outs[i].buf = NULL;
	}
	if (loop_sig_w != -1)
		close(loop_sig_w);
	loop_sig_w = -1;
	if (loop_in_fd != -1)
		close(loop_in_fd);
	loop_in_fd = -1;
}

/* Connect a client (ws.c's stream) through our context. */
struct lws *
loop_connect(struct lws_client_connect_info *i)
{
	i->context = loop_ctx;
	i->vhost = loop_vh;
	return (lws_client_connect_via_info(i));
}

static int
loop_adopt(struct loop_fd *lfd, int fd)
{
	lws_sock_file_fd_type	u;

	lfd->fd = fd;
	u.filefd = fd;
	lfd->wsi = lws_adopt_descriptor_vhost(loop_vh, LWS_ADOPT_RAW_FILE_DESC,
	    u, "lodge-raw", NULL);
	if (lfd->wsi == NULL) {
		lfd->fd = -1;
		return (-1);
	}
	lws_set_opaque_user_data(lfd->wsi, lfd);
	return (0);
}

/*
 * Start reading standard input; bytes go to loop_ops.input.  lws polls one
 * dup and closes it on a hang-up, even while we pause and bytes are still
 * in the pipe; so we read through a second dup of our own, and drain it
 * after the hang-up as fast as the stream takes the bytes.
 */
int
loop_watch_input(void)
{
	int	fd;

	if (loop_in.wsi != NULL || loop_in_fd != -1 || loop_in_ended)
		return (0);
	if ((loop_in_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)) == -1) {
		/* No stdin at all: that is an empty one. */
		loop_input_ended();
		return (0);
	}
	/* Before lws adopts it: lws makes it non-blocking itself. */
	tty_nonblock(STDIN_FILENO);
	if ((fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    loop_adopt(&loop_in, fd) == -1) {
		if (fd != -1)
			close(fd);
		report_errorx("cannot watch standard input");
		return (-1);
	}
	return (0);
}

/* Read what is left after a hang-up, while the stream takes it. */
static void
loop_drain_input(void)
{
	while (loop_in_hup && !loop_in_paused && !loop_in_ended &&
	    !loop_done) {
		if (loop_read_input() == -1)
			break;
	}
}

void
loop_pause_input(int paused)
{
	loop_in_paused = paused;
	if (loop_in.wsi != NULL)
		lws_rx_flow_control(loop_in.wsi, !paused);
	else if (!paused)
		loop_drain_input();
}

static void
loop_signal_cb(int sig)
{
	unsigned char	b = (unsigned char)sig;
	int		saved = errno;

	if (loop_sig_w != -1)
		(void)write(loop_sig_w, &b, 1);
	errno = saved;
}

/* Deliver signo to loop_ops.signal from the loop. */
int
loop_catch(int signo)
{
	struct sigaction	sa;
	int			p[2];

	if (loop_sig.wsi == NULL) {
		if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1) {
			report_error("pipe");
			return (-1);
		}
		if (loop_adopt(&loop_sig, p[0]) == -1) {
			close(p[0]);
			close(p[1]);
			report_errorx("cannot watch signals");
			return (-1);
		}
		loop_sig_w = p[1];
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = loop_signal_cb;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return (sigaction(signo, &sa, NULL));
}

/* The output for fd 1 or 2: adopted by lws, or else broken. */
static struct loop_out *
loop_out_get(int target)
{
	struct loop_out	*o = &loop_outs[target == STDERR_FILENO];
	int		 fd;

	if (o->lfd.wsi != NULL || o->broken)
		return (o);
	if ((fd = fcntl(target, F_DUPFD_CLOEXEC, 3)) == -1) {
		o->broken = 1;
		return (o);
	}
	/* Before lws adopts it: lws makes it non-blocking itself. */
	tty_nonblock(target);
	if (loop_adopt(&o->lfd, fd) == -1) {
		close(fd);
		o->broken = 1;
		return (o);
	}
	/* Only POLLOUT matters here: a terminal is readable too. */
	lws_rx_flow_control(o->lfd.wsi, 0);
	return (o);
}

static size_t
loop_buffered(void)
{
	return (loop_outs[0].len - loop_outs[0].off +
	    loop_outs[1].len - loop_outs[1].off);
}

static void
loop_out_broken(struct loop_out *o, int err)
{
	if (o->broken)
		return;
	o->broken = 1;
	o->len = o->off = 0;
	if (err != EPIPE) {
		errno = err;
		report_error("write to standard %s", o->target == 1 ?
		    "output" : "error");
	}
	loop_quit(CLI_EXIT_FAIL);
}

/* Write what we can without blocking; 0, or -1 when the output is gone. */
static int
loop_out_write(struct loop_out *o)
{
	ssize_t	n;

	while (o->off < o->len) {
		n = write(o->target, o->buf + o->off, o->len - o->off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			loop_out_broken(o, errno);
			return (-1);
		}
		o->off += (size_t)n;
	}
	if (o->off == o->len)
		o->off = o->len = 0;
	else if (o->lfd.wsi != NULL)
		rawio_writable(o->lfd.wsi);	/* lws 4.1: not from here */
	return (0);
}

/* Queue output for fd 1 or 2; -1 if that output is gone. */
int
loop_output(int target, const void *data, size_t len)
{
	struct loop_out	*o;
	size_t		 want;
	char		*nb;

	if (len == 0)
		return (0);
	if (target == STDOUT_FILENO)
		loop_last = ((const unsigned char *)data)[len - 1];
	o = loop_out_get(target);
	if (o->broken)
		return (-1);
	want = o->len + len;
	if (want > o->cap) {
		if (o->off > 0) {
			memmove(o->buf, o->buf + o->off, o->len - o->off);
			o->len -= o->off;
			o->off = 0;
			want = o->len + len;
		}
		if (want > o->cap) {
			if ((nb = realloc(o->buf, want)) == NULL) {
				report_error("realloc");
				loop_quit(CLI_EXIT_FAIL);
				return (-1);
			}
			o->buf = nb;
			o->cap = want;
		}
	}
	memcpy(o->buf + o->len, data, len);
	o->len += len;
	if (loop_out_write(o) == -1)
		return (-1);
	if (loop_output_full())
		loop_was_full = 1;
	return (0);
}

/* Above the high-water mark: stop reading what makes more output. */
int
loop_output_full(void)
{
	return (loop_buffered() >= LOOP_OUT_HIGH);
}

/* Before we exit: write the rest, blocking. */
void
loop_output_flush(void)
{
	struct loop_out	*o;
	ssize_t		 n;
	size_t		 i;

	for (i = 0; i < 2; i++) {
		o = &loop_outs[i];
		while (!o->broken && o->off < o->len) {
			n = write(o->target, o->buf + o->off, o->len - o->off);
			if (n == -1 && (errno == EINTR || errno == EAGAIN)) {
				struct timespec ts = { 0, 10 * 1000 * 1000 };

				nanosleep(&ts, NULL);
				continue;
			}
			if (n == -1) {
				o->broken = 1;
				break;
			}
			o->off += (size_t)n;
		}
		o->off = o->len = 0;
	}
}

/* The last byte written to stdout, or -1: is the cursor at a line start? */
int
loop_last_byte(void)
{
	return (loop_last);
}

int
loop_run(void)
{
	while (!loop_done) {
		if (lws_service(loop_ctx, 0) < 0)
			break;
	}
	return (loop_status);
}

void
loop_quit(int status)
{
	if (loop_done)
		return;
	loop_done = 1;
	loop_status = status;
	if (loop_ctx != NULL)
		lws_cancel_service(loop_ctx);
}

/* Once: stdin is over. */
static void
loop_input_ended(void)
{
	if (loop_in_ended)
		return;
	loop_in_ended = 1;
	if (loop_in_fd != -1) {
		close(loop_in_fd);
		loop_in_fd = -1;
	}
	if (loop_ops->input_eof != NULL)
		loop_ops->input_eof();
}

/* One read; -1 when input is over (or, after a hang-up, empty). */
static int
loop_read_input(void)
{
	char	buf[LOOP_READ_SIZE];
	ssize_t	n;

	if (loop_in_fd == -1)
		return (-1);
	n = read(loop_in_fd, buf, sizeof(buf));
	if (n == -1 && errno == EINTR)
		return (0);
	if (n == -1 && errno == EAGAIN && !loop_in_hup)
		return (0);
	if (n <= 0) {
		/* EOF, or a terminal that went away (EIO). */
		loop_input_ended();
		return (-1);
	}
	if (loop_ops->input != NULL)
		loop_ops->input(buf, (size_t)n);
	return (0);
}

static void
loop_read_signals(void)
{
	unsigned char	buf[64];
	ssize_t		n, i;

	while ((n = read(loop_sig.fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++)
			if (loop_ops->signal != NULL)
				loop_ops->signal(buf[i]);
	}
}

static int
loop_raw_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct loop_fd	*lfd = lws_get_opaque_user_data(wsi);
	struct loop_out	*o;

	if (lfd == NULL)
		return (0);
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (lfd->kind == LOOP_INPUT)
			return (loop_read_input() == -1 ? -1 : 0);
		if (lfd->kind == LOOP_SIGNALS)
			loop_read_signals();
		return (0);
	case LWS_CALLBACK_RAW_WRITEABLE_FILE:
		if (lfd->kind != LOOP_OUTPUT)
			return (0);
		o = (struct loop_out *)lfd;
		if (loop_out_write(o) == -1)
			return (0);
		if (loop_was_full && loop_buffered() <= LOOP_OUT_LOW) {
			loop_was_full = 0;
			ws_pause(0);
		}
		return (0);
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		rawio_forget(wsi);
		lws_set_opaque_user_data(wsi, NULL);
		lfd->wsi = NULL;
		if (lfd->kind == LOOP_OUTPUT) {
			/* A hang-up on our output: the reader is gone. */
			o = (struct loop_out *)lfd;
			o->lfd.fd = -1;
			if (!loop_done)
				loop_out_broken(o, EPIPE);
		} else if (lfd->kind == LOOP_INPUT) {
			loop_in.fd = -1;
			if (!loop_done && !loop_in_ended) {
				loop_in_hup = 1;
				loop_drain_input();
			}
		}
		return (0);
	default:
		return (0);
	}
}
