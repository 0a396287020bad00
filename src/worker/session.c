/*
 * session.c: the session's child process as the worker sees it.
 *
 * Output is read into the ring as fast as it comes, whatever the clients
 * do.  The exit becomes final only when the child was reaped and its output
 * drained (EOF on every stream, or a short deadline for grandchildren that
 * hold them open), so every client gets the last byte before the exit.
 * Deletion escalates SIGHUP, SIGTERM, SIGKILL on every process the
 * session started (its cgroup, or the worker's tree: contain.c), and
 * answers only when none is left.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "log.h"
#include "rawio.h"
#include "ring.h"
#include "worker.h"

#define SESSION_HUP_GRACE_MS	500
#define SESSION_TERM_GRACE_MS	2000
#define SESSION_POLL_MS		10

static unsigned char	session_buf[WORKER_CHUNK];

static void	session_input_drop_all(void);

void
session_output(struct worker_fd *wf)
{
	ssize_t	n;
	int	i, got = 0, brief = 0, tag = (wf->kind == WFD_ERR);

	/* A few reads per wakeup keep one stream from starving the loop. */
	for (i = 0; i < 4; i++) {
		n = read(wf->fd, session_buf, sizeof(session_buf));
		if (n > 0) {
			ring_append(worker->ring, tag, session_buf, (size_t)n);
			got = 1;
			if (n < WORKER_FULL_READ) {
				brief = 1;
				break;
			}
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			break;
		/* EOF, or EIO from a PTY whose slave side is all closed. */
		lws_set_timeout(wf->wsi, 1, LWS_TO_KILL_ASYNC);
		if (wf == worker->out)
			worker->out_open = 0;
		else if (wf == worker->err)
			worker->err_open = 0;
		break;
	}
	if (got) {
		/*
		 * A short read (an echo, a prompt) goes out at once; bulk
		 * output waits for each client's writeable callback, so one
		 * read is not written to every client in a row.
		 */
		if (brief)
			worker_send_clients();
		else
			worker_wake_clients();
		worker_output_changed();
	}
	session_check_final();
}

/* Read whatever is still buffered in the streams, without waiting. */
static void
session_drain_now(void)
{
	if (worker->out != NULL && worker->out_open)
		session_output(worker->out);
	if (worker->err != NULL && worker->err_open)
		session_output(worker->err);
}

/* --exited-ttl: an exited session removes itself after a while. */
static void
session_ttl_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	log_info("session %s: exited-ttl expired", worker->id);
	session_delete(NULL, 0);
}

static void
session_finalise(void)
{
	if (worker->final)
		return;
	session_drain_now();
	worker->final = 1;
	if (worker->master_keep != -1) {
		close(worker->master_keep);
		worker->master_keep = -1;
	}
	lws_sul_cancel(&worker->sul_drain);
	/* Late writers get EOF or EIO, not a reader that never comes. */
	if (worker->out != NULL)
		lws_set_timeout(worker->out->wsi, 1, LWS_TO_KILL_ASYNC);
	if (worker->err != NULL)
		lws_set_timeout(worker->err->wsi, 1, LWS_TO_KILL_ASYNC);
	if (worker->in != NULL)
		lws_set_timeout(worker->in->wsi, 1, LWS_TO_KILL_ASYNC);
	session_input_drop_all();
	log_debug("session %s: exited, status %d", worker->id, worker->status);
	if (worker_limits.exited_ttl > 0)
		lws_sul_schedule(worker->ctx, 0, &worker->sul_ttl,
		    session_ttl_cb, (lws_usec_t)worker_limits.exited_ttl *
		    LWS_US_PER_SEC);
	worker_broadcast_update();
	worker_wake_clients();
}

static void
session_drain_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	session_finalise();
}

void
session_check_final(void)
{
	if (worker->final || !worker->reaped)
		return;
	if (!worker->out_open && !worker->err_open)
		session_finalise();
}

static int	session_group_alive(void);
static void	session_delete_done(void);

void
session_reap(void)
{
	pid_t	pid;
	int	status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != worker->pid)
			continue;	/* an orphan we adopted as subreaper */
		worker->reaped = 1;
		worker->status = status;
		lws_sul_schedule(worker->ctx, 0, &worker->sul_drain,
		    session_drain_cb, WORKER_DRAIN_MS * LWS_US_PER_MS);
		session_check_final();
	}
	/*
	 * A delete ends as soon as the group is gone, on the SIGCHLD that
	 * says so, not at the next poll (which only paces the grace steps).
	 */
	if (worker->deleting && !worker->quitting && worker->reaped &&
	    !session_group_alive())
		session_delete_done();
}

/*
 * Input is a queue of whole messages, written to the child in the order
 * they came.  Nothing is dropped: a client whose own queued bytes reach
 * WORKER_CLIENT_INPUT is not read any more (rx flow control) until they
 * drain below it, so one writer can hold at most that much (plus one
 * message) ahead of another's, and the rest waits in the client's socket.
 * A REST input, which has no connection to pause, is refused whole when
 * the queue holds WORKER_INPUT_MAX.  Input is discarded only once the
 * child's stdin is gone: there is nobody left to take it.
 */
static void
session_input_pause(struct client *cl, int pause)
{
	if (cl->input_paused == pause || cl->wsi == NULL)
		return;
	cl->input_paused = pause;
	lws_rx_flow_control(cl->wsi, (pause ?
	    LWS_RXFLOW_REASON_APPLIES_DISABLE :
	    LWS_RXFLOW_REASON_APPLIES_ENABLE) | CLIENT_RXFLOW_INPUT |
	    LWS_RXFLOW_REASON_FLAG_PROCESS_NOW);
}

static void
session_input_drop_all(void)
{
	struct input_msg	*m;
	struct client		*cl;

	while ((m = STAILQ_FIRST(&worker->inq)) != NULL) {
		STAILQ_REMOVE_HEAD(&worker->inq, entry);
		free(m);
	}
	worker->inq_len = 0;
	LIST_FOREACH(cl, &worker->clients, entry) {
		cl->input_queued = 0;
		session_input_pause(cl, 0);
	}
}

/* Write queued input; ask to be called again while some is left. */
void
session_input_flush(void)
{
	struct worker_fd	*wf = worker->req.pty ? worker->out : worker->in;
	struct input_msg	*m;
	struct client		*cl;
	ssize_t			 n;

	while ((m = STAILQ_FIRST(&worker->inq)) != NULL &&
	    worker->in_fd != -1) {
		n = write(worker->in_fd, m->data + m->off, m->len - m->off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			session_input_drop_all();	/* the reader is gone */
			break;
		}
		m->off += (size_t)n;
		if ((cl = m->cl) != NULL) {
			cl->input_queued -= (size_t)n;
			if (cl->input_queued < WORKER_CLIENT_INPUT)
				session_input_pause(cl, 0);
		}
		if (m->off == m->len) {
			worker->inq_len -= m->len;
			STAILQ_REMOVE_HEAD(&worker->inq, entry);
			free(m);
		}
	}
	if (worker->in_fd == -1 && worker->inq_len > 0)
		session_input_drop_all();
	if (wf == NULL)
		return;
	if (worker->inq_len > 0)
		rawio_writable(wf->wsi);
	else if (worker->inq_eof && !worker->req.pty && worker->in != NULL) {
		lws_set_timeout(worker->in->wsi, 1, LWS_TO_KILL_ASYNC);
		worker->in_fd = -1;
	}
}

/* Queue one whole message; -1 out of memory. */
static int
session_input_queue(struct client *cl, const void *data, size_t len)
{
	struct input_msg	*m;

	if ((m = malloc(sizeof(*m) + len)) == NULL)
		return (-1);
	m->cl = cl;
	m->len = len;
	m->off = 0;
	memcpy(m->data, data, len);
	STAILQ_INSERT_TAIL(&worker->inq, m, entry);
	worker->inq_len += len;
	if (cl != NULL)
		cl->input_queued += len;
	session_input_flush();
	return (0);
}

/* REST input: -1 when the queue is full, and then nothing is written. */
int
session_input(const void *data, size_t len)
{
	if (worker->in_fd == -1 || worker->inq_eof || len == 0)
		return (0);
	if (worker->inq_len + len > WORKER_INPUT_MAX)
		return (-1);
	return (session_input_queue(NULL, data, len));
}

/* A client's stdin message: taken whole; -1 only when out of memory. */
int
session_client_input(struct client *cl, const void *data, size_t len)
{
	if (worker->in_fd == -1 || worker->inq_eof || len == 0)
		return (0);
	if (session_input_queue(cl, data, len) == -1)
		return (-1);
	if (cl->input_queued >= WORKER_CLIENT_INPUT)
		session_input_pause(cl, 1);
	return (0);
}

/* A client is going: its queued messages are still written whole. */
void
session_input_forget(struct client *cl)
{
	struct input_msg	*m;

	STAILQ_FOREACH(m, &worker->inq, entry)
		if (m->cl == cl)
			m->cl = NULL;
	cl->input_queued = 0;
}

/* The child's stdin is gone: nobody will take what is queued. */
void
session_input_closed(void)
{
	worker->in_fd = -1;
	session_input_drop_all();
}

void
session_input_eof(void)
{
	if (worker->req.pty)
		return;
	worker->inq_eof = 1;
	session_input_flush();
}

static pid_t
session_target(void)
{
	pid_t	pg;

	if (worker->req.pty && worker->out != NULL &&
	    (pg = tcgetpgrp(worker->out->fd)) > 0)
		return (pg);
	return (worker->pid);
}

int
session_signal(int signo, char *why, size_t whylen)
{
	if (worker->reaped) {
		snprintf(why, whylen, "the session's process has exited");
		return (409);
	}
	if (kill(-session_target(), signo) == -1 &&
	    kill(-worker->pid, signo) == -1) {
		snprintf(why, whylen, "cannot signal: %s", strerror(errno));
		return (409);
	}
	return (204);
}

int
session_resize(int cols, int rows, char *why, size_t whylen)
{
	struct winsize	ws;

	if (!worker->req.pty) {
		snprintf(why, whylen, "the session has no terminal");
		return (400);
	}
	if (worker->out == NULL || worker->final) {
		snprintf(why, whylen, "the session's process has exited");
		return (409);
	}
	memset(&ws, 0, sizeof(ws));
	ws.ws_col = cols;
	ws.ws_row = rows;
	if (ioctl(worker->out->fd, TIOCSWINSZ, &ws) == -1) {
		snprintf(why, whylen, "cannot resize: %s", strerror(errno));
		return (409);
	}
	if (cols != worker->cols || rows != worker->rows) {
		worker->cols = cols;
		worker->rows = rows;
		worker_broadcast_update();
	}
	return (204);
}

/* Is anything the session started still alive, wherever it went? */
static int
session_group_alive(void)
{
	int	n;

	if ((n = contain_signal(&worker->group, 0)) == -1)
		return (kill(-worker->pid, 0) == 0 || errno == EPERM);
	return (n > 0);
}

/* sig to every process of the session: its group, not only its pgrp. */
static void
session_signal_all(int sig)
{
	(void)contain_signal(&worker->group, sig);
	(void)kill(-worker->pid, sig);
	if (sig != SIGKILL)
		(void)kill(-worker->pid, SIGCONT);
}

static void
session_delete_done(void)
{
	int	i;

	lws_sul_cancel(&worker->sul_delete);
	if (!worker->final)
		session_finalise();
	worker_quit();
	control_broadcast_gone();
	for (i = 0; i < worker->ndelete; i++)
		if (worker->delete_ctl[i] != NULL)
			control_send_reply(worker->delete_ctl[i],
			    worker->delete_waiters[i], 204, NULL, NULL, 0);
	worker->ndelete = 0;
}

static void
session_delete_cb(lws_sorted_usec_list_t *sul)
{
	static int64_t	waited;

	(void)sul;
	session_reap();
	if (worker->quitting)
		return;		/* session_reap saw the group go */
	if (worker->reaped && !session_group_alive()) {
		session_delete_done();
		return;
	}
	waited += SESSION_POLL_MS;
	if (worker->delete_stage == 1 && waited >= SESSION_HUP_GRACE_MS) {
		session_signal_all(SIGTERM);
		worker->delete_stage = 2;
		waited = 0;
	} else if (worker->delete_stage == 2 &&
	    waited >= SESSION_TERM_GRACE_MS) {
		session_signal_all(SIGKILL);
		worker->delete_stage = 3;
		waited = 0;
	} else if (worker->delete_stage == 3)
		session_signal_all(SIGKILL);	/* forked since the last walk */
	lws_sul_schedule(worker->ctx, 0, &worker->sul_delete,
	    session_delete_cb, SESSION_POLL_MS * LWS_US_PER_MS);
}

void
session_delete(struct worker_fd *ctl, int64_t reqid)
{
	if (ctl != NULL && worker->ndelete < 16) {
		worker->delete_ctl[worker->ndelete] = ctl;
		worker->delete_waiters[worker->ndelete++] = reqid;
	}
	if (worker->deleting)
		return;
	worker->deleting = 1;
	worker->delete_stage = 1;
	session_signal_all(SIGHUP);
	session_delete_cb(NULL);
}
