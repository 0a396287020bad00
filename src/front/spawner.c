/*
 * spawner.c: the front's link to the worker template.
 *
 * The only code in the front that forks or execs: it starts the template
 * (lodged-worker --template, control channel on fd 3) and sends it spawn requests,
 * each with one end of a fresh socket pair that becomes the new worker's
 * control connection.  A template that died is started again on demand.
 * Under systemd the template waits at a gate until it has been moved out of
 * the service's cgroup (scope.c), so nothing it forks is born there.
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
#include "rawio.h"
#include "mpack.h"
#include "nofile.h"

static struct {
	struct front_fd	 ffd;
	struct ctl	 ctl;
	struct lws	*wsi;
	pid_t		 pid;
	int		 up;
} spawner = { .ffd = { .kind = FFD_TEMPLATE }, .ctl = { .fd = -1 } };

int
spawner_start(void)
{
	char	*argv[6];
	int	 sp[2], gate[2], argc = 0;
	char	 c;
	pid_t	 pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1) {
		log_warn("socketpair");
		return (-1);
	}
	if (pipe2(gate, O_CLOEXEC) == -1) {
		log_warn("pipe2");
		close(sp[0]);
		close(sp[1]);
		return (-1);
	}
	/* argv[0] "lodged": process titles read "lodged: template". */
	argv[argc++] = "lodged";
	argv[argc++] = "--template";
	argv[argc++] = front->conf.foreground ? "-f" : "-s";
	argv[argc++] = front->conf.verbose ? "-v" : "-q";
	if (front->conf.no_cgroup)
		argv[argc++] = "--no-cgroup";
	argv[argc] = NULL;
	switch (pid = fork()) {
	case -1:
		log_warn("fork");
		close(sp[0]);
		close(sp[1]);
		close(gate[0]);
		close(gate[1]);
		return (-1);
	case 0:
		/* Wait until the parent has placed us (EOF opens the gate). */
		close(gate[1]);
		while (read(gate[0], &c, 1) == -1 && errno == EINTR)
			;
		/* Only 0-2 and the control channel on 3 cross the exec. */
		if (dup2(sp[1], 3) == -1)
			_exit(1);
		closefrom(4);
		nofile_restore();
		signal(SIGPIPE, SIG_DFL);
		execv(front->worker, argv);
		_exit(127);
	}
	close(gate[0]);
	(void)scope_adopt(pid);
	close(gate[1]);
	close(sp[1]);
	ctl_init(&spawner.ctl, sp[0]);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	spawner.pid = pid;
	spawner.up = 1;
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

/*
 * Queue a request (and fd, which passes to the queue) for the template;
 * m is freed.
 */
int
spawner_send(struct proto_out *m, int fd)
{
	if (spawner_ready() == -1) {
		if (fd != -1)
			close(fd);
		proto_free(m);
		return (-1);
	}
	if (proto_send(&spawner.ctl, m, fd) == -1) {
		log_warnx("the worker template does not answer");
		lws_set_timeout(spawner.wsi, 1, LWS_TO_KILL_ASYNC);
		return (-1);
	}
	if (ctl_pending(&spawner.ctl))
		rawio_writable(spawner.wsi);
	return (0);
}

void
spawner_writeable(void)
{
	if (ctl_flush(&spawner.ctl) == 1)
		rawio_writable(spawner.wsi);
}

/* What the front takes from the template: the allow-list. */
static const struct proto_handler front_dispatch_template[] = {
	{ PROTO_SPAWNED, exec_spawned },
	{ PROTO_OUTPUT, exec_output },
	{ PROTO_EXITED, exec_exited },
};

void
spawner_readable(void)
{
	msgpack_unpacked	 up;
	int			 r, fd;

	if ((r = ctl_read(&spawner.ctl)) == 0 || r == -1) {
		lws_set_timeout(spawner.wsi, 1, LWS_TO_KILL_ASYNC);
		return;
	}
	msgpack_unpacked_init(&up);
	while ((r = ctl_next(&spawner.ctl, &up, &fd)) == 1)
		(void)proto_dispatch(PROTO_TEMPLATE_FRONT,
		    front_dispatch_template,
		    PROTO_NHANDLERS(front_dispatch_template), "the template",
		    NULL, &up.data, &fd, fd == -1 ? 0 : 1);
	msgpack_unpacked_destroy(&up);
	if (r == -1) {
		log_warnx("bad frame from the worker template");
		lws_set_timeout(spawner.wsi, 1, LWS_TO_KILL_ASYNC);
	}
}

void
spawner_closed(void)
{
	if (!front->quit)
		log_warnx("the worker template exited; starting another on "
		    "demand");
	spawner.ctl.fd = -1;	/* lws closed it */
	ctl_close(&spawner.ctl);
	spawner.wsi = NULL;
	spawner.up = 0;
	exec_template_lost();
	(void)kill(spawner.pid, SIGKILL);
	(void)waitpid(spawner.pid, NULL, 0);
}
