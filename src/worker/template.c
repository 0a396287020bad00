/*
 * template.c: the process that forks session workers.
 *
 * The front starts it once, by exec, before it serves anyone, so it holds no
 * connection, no token and no libwebsockets state.  Every worker it forks
 * starts from this clean, already-linked image: no exec per session, and
 * the pages of the shared libraries stay shared.  It reaps the workers it
 * forked and exits when the front's control channel closes; the workers live
 * on (each is its own session, and is reparented when the template exits).
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "log.h"
#include "mpack.h"
#include "worker.h"

static void
template_reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void
template_sigchld(int sig)
{
	(void)sig;
}

static void
template_spawn(struct ctl *c, const msgpack_object *o, int fd)
{
	pid_t	pid;

	if (fd == -1) {
		log_warnx("template: spawn request without a socket");
		return;
	}
	switch (pid = fork()) {
	case -1:
		log_warn("template: fork");
		close(fd);	/* the front sees EOF and answers 500 */
		return;
	case 0:
		close(c->fd);
		c->fd = -1;
		signal(SIGCHLD, SIG_DFL);
		worker_main(fd, o);
	}
	close(fd);
}

void
template_main(int ctlfd)
{
	struct ctl		 c;
	struct pollfd		 pfd;
	struct sigaction	 sa;
	msgpack_unpacked	 up;
	int			 r, fd;

	setproctitle("template");
	log_setident("lodged-template");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = template_sigchld;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);

	ctl_init(&c, ctlfd);
	msgpack_unpacked_init(&up);
	for (;;) {
		template_reap();
		pfd.fd = c.fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 1000) == -1) {
			if (errno == EINTR)
				continue;
			fatal("template: poll");
		}
		if (pfd.revents == 0)
			continue;
		if ((r = ctl_read(&c)) == 0 || r == -1)
			break;
		while ((r = ctl_next(&c, &up, &fd)) == 1) {
			if (mpack_streq(mpack_get(&up.data, "type"), "spawn"))
				template_spawn(&c, &up.data, fd);
			else if (fd != -1)
				close(fd);
		}
		if (r == -1) {
			log_warnx("template: bad frame from the front");
			break;
		}
	}
	msgpack_unpacked_destroy(&up);
	ctl_close(&c);
	exit(0);
}
