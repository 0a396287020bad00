/*
 * spawner.c: the front's link to the worker template.
 *
 * The only code in the front that forks or execs: it starts the template
 * (lodged --template, control channel on fd 3) and sends it spawn requests,
 * each with one end of a fresh socket pair that becomes the new worker's
 * control connection.  A template that died is started again on demand.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "log.h"

static struct {
	struct front_fd	 ffd;
	struct ctl	 ctl;
	struct lws	*wsi;
	pid_t		 pid;
	int		 up;
} spawner = { .ctl = { .fd = -1 } };

int
spawner_start(void)
{
	char	*argv[5];
	int	 sp[2], argc = 0;
	pid_t	 pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1) {
		log_warn("socketpair");
		return (-1);
	}
	argv[argc++] = "lodged";
	argv[argc++] = "--template";
	argv[argc++] = front->conf.foreground ? "-f" : "-s";
	if (front->conf.verbose)
		argv[argc++] = "-v";
	argv[argc] = NULL;
	switch (pid = fork()) {
	case -1:
		log_warn("fork");
		close(sp[0]);
		close(sp[1]);
		return (-1);
	case 0:
		/* Only 0-2 and the control channel on 3 cross the exec. */
		if (dup2(sp[1], 3) == -1)
			_exit(1);
		closefrom(4);
		signal(SIGPIPE, SIG_DFL);
		execv(front->self, argv);
		_exit(127);
	}
	close(sp[1]);
	ctl_init(&spawner.ctl, sp[0]);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	spawner.pid = pid;
	spawner.up = 1;
	spawner.ffd.kind = FFD_TEMPLATE;
	spawner.ffd.ptr = &spawner;
	if (front->ctx != NULL &&
	    (spawner.wsi = front_adopt(sp[0], &spawner.ffd)) == NULL) {
		ctl_close(&spawner.ctl);
		spawner.up = 0;
		return (-1);
	}
	return (0);
}

/* Adopt the channel into the loop once the loop exists. */
static int
spawner_ready(void)
{
	if (!spawner.up && spawner_start() == -1)
		return (-1);
	if (spawner.wsi == NULL &&
	    (spawner.wsi = front_adopt(spawner.ctl.fd, &spawner.ffd)) == NULL)
		return (-1);
	return (0);
}

int
spawner_spawn(msgpack_sbuffer *sb, int fd)
{
	if (spawner_ready() == -1) {
		close(fd);
		return (-1);
	}
	/* Spawn requests are small; the template reads them at once. */
	if (ctl_send_wait(&spawner.ctl, sb, fd) == -1) {
		log_warnx("the worker template does not answer");
		return (-1);
	}
	return (0);
}

void
spawner_closed(void)
{
	log_warnx("the worker template exited; starting another on demand");
	spawner.ctl.fd = -1;	/* lws closed it */
	ctl_close(&spawner.ctl);
	spawner.wsi = NULL;
	spawner.up = 0;
	(void)kill(spawner.pid, SIGKILL);
	(void)waitpid(spawner.pid, NULL, 0);
}
