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
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rawio.h"
#include "ring.h"
#include "worker.h"

#define SESSION_POLL_MS		10

/* A delete: HUP, TERM after 0.5 s, KILL after 2 s more, and again. */
static const struct escalate_step session_ending[] = {
	{ SIGHUP, 500 }, { SIGTERM, 2000 }, { SIGKILL, SESSION_POLL_MS },
	{ 0, 0 }
};

static unsigned char	session_buf[WORKER_CHUNK];

/* What gather.c held goes to every client now. */
static void
session_gather_cb(lws_sorted_usec_list_t *sul)
{
	worker->gather.sent_at = lws_now_usecs();
	worker_wake_clients();
}

/*
 * Read what the process wrote; a drain reads on even while a paced client
 * holds the process back (pace.c), since the streams close after it.
 */
void
session_output(struct worker_fd *wf, int drain)
{
	ssize_t	n;
	int	i, got = 0, brief = 0, tag = (wf->kind == WFD_ERR);

	/* A few reads per wakeup keep one stream from starving the loop. */
	for (i = 0; i < 4; i++) {
		n = read(wf->fd, session_buf, sizeof(session_buf));
		if (n > 0) {
			ring_append(worker->ring, tag, session_buf, (size_t)n);
			got = 1;
			if (worker->npaced > 0) {
				pace_check();
				if (worker->pace_held && !drain)
					break;
			}
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
		 * A short read that answers input (an echo, a prompt) goes
		 * out at once; bulk output waits for each client's writeable
		 * callback, so one read is not written to every client in a
		 * row; small output of the process's own is gathered.
		 */
		if (!brief)
			worker_wake_clients();
		else if (!gather_hold(&worker->gather, worker->ctx,
		    session_gather_cb))
			worker_send_clients();
		worker_output_changed();
	}
	session_check_final();
}

/*
 * lws closes a raw-file wsi on POLLHUP without POLLIN, which is what a pipe
 * held back by pace (pace.c) reports once every writer is gone: what is
 * still in it is read here, before the descriptor goes.
 */
void
session_output_closing(struct worker_fd *wf)
{
	ssize_t	n;
	int	got = 0, tag = (wf->kind == WFD_ERR);

	if (worker->final)
		return;
	while ((n = read(wf->fd, session_buf, sizeof(session_buf))) > 0) {
		ring_append(worker->ring, tag, session_buf, (size_t)n);
		got = 1;
	}
	if (got) {
		worker_wake_clients();
		worker_output_changed();
	}
}

/* --exited-ttl: an exited session removes itself after a while. */
static void
session_ttl_cb(lws_sorted_usec_list_t *sul)
{
	log_info("session %s: exited-ttl expired", worker->id);
	session_delete(NULL, 0);
}

/* The exit is final (also the drain deadline's callback). */
static void
session_finalise(lws_sorted_usec_list_t *sul)
{
	struct worker_fd	**fds[3] = { &worker->out, &worker->err,
				    &worker->in };
	int			 i;

	if (worker->final)
		return;
	/* Read whatever is still buffered in the streams, without waiting. */
	if (worker->out != NULL && worker->out_open)
		session_output(worker->out, 1);
	if (worker->err != NULL && worker->err_open)
		session_output(worker->err, 1);
	if (worker->final)
		return;		/* the drain read EOF and finalised it */
	worker->final = 1;
	pace_check();		/* nothing is left to hold back */
	if (worker->master_keep != -1) {
		close(worker->master_keep);
		worker->master_keep = -1;
	}
	lws_sul_cancel(&worker->sul_drain);
	/* Late writers get EOF or EIO, not a reader that never comes. */
	for (i = 0; i < 3; i++)
		if (*fds[i] != NULL)
			lws_set_timeout((*fds[i])->wsi, 1, LWS_TO_KILL_ASYNC);
	inputq_drop(&worker->inq);
	log_debug("session %s: exited, status %d", worker->id, worker->status);
	if (worker_limits.exited_ttl > 0)
		lws_sul_schedule(worker->ctx, 0, &worker->sul_ttl,
		    session_ttl_cb, (lws_usec_t)worker_limits.exited_ttl *
		    LWS_US_PER_SEC);
	worker_broadcast_update();
	worker_wake_clients();
}

void
session_check_final(void)
{
	if (worker->final || !worker->reaped)
		return;
	if (!worker->out_open && !worker->err_open)
		session_finalise(NULL);
}

static void
session_delete_done(void)
{
	int	i;

	lws_sul_cancel(&worker->sul_delete);
	session_finalise(NULL);
	worker_quit();
	control_broadcast_gone();
	for (i = 0; i < worker->ndelete; i++)
		if (worker->delete_ctl[i] != NULL)
			control_send_reply(worker->delete_ctl[i],
			    worker->delete_waiters[i], 204, NULL, NULL, 0);
	worker->ndelete = 0;
}

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
		    session_finalise, WORKER_DRAIN_MS * LWS_US_PER_MS);
		session_check_final();
	}
	/*
	 * A delete ends as soon as the group is gone, on the SIGCHLD that
	 * says so, not at the next poll (which only paces the grace steps).
	 */
	if (worker->deleting && !worker->quitting && worker->reaped &&
	    !contain_alive(&worker->group, worker->pid))
		session_delete_done();
}

/* Write queued input; ask to be called again while some is left. */
void
session_input_flush(void)
{
	struct worker_fd	*wf = worker->req.pty ? worker->out : worker->in;

	if (inputq_write(&worker->inq) > 0) {
		if (wf != NULL)
			rawio_writable(wf->wsi);
	} else if (worker->inq.eof && !worker->req.pty && wf != NULL) {
		lws_set_timeout(wf->wsi, 1, LWS_TO_KILL_ASYNC);
		worker->inq.fd = -1;
	}
}

/*
 * A client's stdin message is taken whole: -1 only when out of memory.  A
 * REST input (cl NULL), which has no connection to pause, is refused
 * whole when the queue holds WORKER_INPUT_MAX: -1, and nothing written.
 */
int
session_input(struct client *cl, const void *data, size_t len)
{
	if (worker->inq.fd == -1 || worker->inq.eof || len == 0)
		return (0);
	if ((cl == NULL && worker->inq.len + len > WORKER_INPUT_MAX) ||
	    inputq_push(&worker->inq, cl != NULL ? &cl->in : NULL, data,
	    len) == -1)
		return (-1);
	worker->gather.answering = 1;
	session_input_flush();
	return (0);
}

/* The child's stdin is gone: nobody will take what is queued. */
void
session_input_closed(void)
{
	worker->inq.fd = -1;
	inputq_drop(&worker->inq);
}

/* Only for pipes: the one caller refuses eof on a terminal. */
void
session_input_eof(void)
{
	worker->inq.eof = 1;
	session_input_flush();
}

int
session_signal(int signo, char *why, size_t whylen)
{
	if (worker->reaped) {
		snprintf(why, whylen, "the session's process has exited");
		return (409);
	}
	if (kill(-child_signal_group(worker->req.pty && worker->out != NULL ?
	    worker->out->fd : -1, worker->pid), signo) == -1 &&
	    kill(-worker->pid, signo) == -1) {
		snprintf(why, whylen, "cannot signal: %s", strerror(errno));
		return (409);
	}
	return (204);
}

int
session_resize(int cols, int rows, char *why, size_t whylen)
{
	if (!worker->req.pty) {
		snprintf(why, whylen, "the session has no terminal");
		return (400);
	}
	if (worker->out == NULL || worker->final) {
		snprintf(why, whylen, "the session's process has exited");
		return (409);
	}
	if (child_set_size(worker->out->fd, cols, rows) == -1) {
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

static void
session_delete_cb(lws_sorted_usec_list_t *sul)
{
	int	sig;

	session_reap();
	if (worker->quitting)
		return;		/* session_reap saw the group go */
	if (worker->reaped && !contain_alive(&worker->group, worker->pid)) {
		session_delete_done();
		return;
	}
	if ((sig = escalate_due(&worker->ending, escalate_now())) != 0)
		(void)contain_signal_all(&worker->group, worker->pid,
		    worker->reaped, sig);
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
	escalate_start(&worker->ending, session_ending, 0, escalate_now());
	session_delete_cb(NULL);
}
