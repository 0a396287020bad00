/*
 * template.c: the process that forks session workers and runs exec calls.
 *
 * The front starts it once, by exec, before it serves anyone, so it holds no
 * connection, no token and no libwebsockets state.  Every worker it forks
 * starts from this clean, already-linked image: no exec per session, and
 * the pages of the shared libraries stay shared.
 *
 * It also runs the commands of POST /v1/exec itself (execrun.c), with vfork
 * and no worker process per call.  It exits when the front's channel closes;
 * workers live on (each is its own session and is reparented).
 */
#include <sys/types.h>
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
#include "worker.h"

static struct ctl	*template_ctl;
static int		 template_sfd = -1;

/* In a process just forked from the template: keep nothing of its. */
void
template_child_setup(void)
{
	close(template_ctl->fd);
	template_ctl->fd = -1;
	close(template_sfd);
	execrun_forget();
	pool_forget();
	signal(SIGCHLD, SIG_DFL);
}

static void
template_reap(struct ctl *c)
{
	pid_t	pid;
	int	status;

	/* Session workers are reaped here too; they are not reported. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (!execrun_reaped(c, pid, status))
			pool_reaped(pid);
	}
}

static void
template_fork(struct ctl *c, const msgpack_object *o, int fd, int stream)
{
	pid_t	pid;

	if (fd == -1) {
		log_warnx("template: request without a descriptor");
		return;
	}
	if (pool_take(o, fd) == 0)
		return;
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

static void
template_dispatch(struct ctl *c, msgpack_unpacked *up, int *fds, int nfds)
{
	const msgpack_object	*o = &up->data, *type = mpack_get(o, "type");
	int			 i;

	if (mpack_streq(type, "spawn") && nfds == 1)
		template_fork(c, o, fds[0], 0);
	else if (mpack_streq(type, "stream") && nfds == 1)
		template_fork(c, o, fds[0], 1);
	else {
		if (mpack_streq(type, "exec"))
			execrun_start(c, o);
		else if (mpack_streq(type, "kill"))
			execrun_kill(o);
		else
			log_warnx("template: unexpected request");
		for (i = 0; i < nfds; i++)
			close(fds[i]);
	}
}

void
template_main(int ctlfd)
{
	struct ctl		 c;
	struct pollfd		*pfd = NULL, *np;
	void			**tag = NULL, **nt;
	struct signalfd_siginfo	 si;
	msgpack_unpacked	 up;
	sigset_t		 set;
	size_t			 cap = 0, want;
	int			 r, fds[CTL_FRAME_FDS], nfds, n;

	child_save_limits();
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
		if (poll(pfd, (nfds_t)(2 + n), execrun_timeout()) == -1) {
			if (errno == EINTR)
				continue;
			fatal("template: poll");
		}
		if (pfd[1].revents & POLLIN) {
			while (read(template_sfd, &si, sizeof(si)) > 0)
				;
			template_reap(&c);
		}
		execrun_events(&c, pfd + 2, tag + 2, n);
		execrun_timers(&c);
		if (pfd[0].revents & POLLOUT && ctl_flush(&c) == -1)
			break;
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if ((r = ctl_read(&c)) == 0 || r == -1)
				break;
			while ((r = ctl_nextv(&c, &up, fds, &nfds)) == 1)
				template_dispatch(&c, &up, fds, nfds);
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
	exit(0);
}
