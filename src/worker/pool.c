/*
 * pool.c: workers forked ahead of need.
 *
 * A fork costs the template a third of a millisecond, and the new process
 * as much again before it runs; a session or exec stream should not wait
 * for that.  The template keeps POOL_SIZE workers forked and waiting, each
 * on a socket pair of its own.  A request goes to a waiting worker (the
 * spawn frame and the connection's descriptor), which becomes the session
 * or stream worker; the template forks a replacement after the request is
 * on its way.  Waiting workers exit when the template does (their socket
 * closes), so none outlive it.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "log.h"
#include "mpack.h"
#include "worker.h"

#define POOL_SIZE	2

static struct {
	pid_t	pid;
	int	fd;	/* the template's end of the worker's socket pair */
} pool[POOL_SIZE];
static int	pool_n;
static char	*pool_frame;	/* the request a waiting worker got */

/* In any process forked from the template: drop the pool's sockets. */
void
pool_forget(void)
{
	int	i;

	for (i = 0; i < pool_n; i++)
		close(pool[i].fd);
	pool_n = 0;
}

static void
pool_spawn(void *arg, const msgpack_object *o, int *fds)
{
	worker_main(fds[0], o);
}

static void
pool_stream(void *arg, const msgpack_object *o, int *fds)
{
	stream_main(fds[0], o);
}

/* What a waiting worker takes from the template: the allow-list. */
static const struct proto_handler waiting_dispatch_template[] = {
	{ PROTO_SPAWN, pool_spawn },
	{ PROTO_STREAM, pool_stream },
};

/* A waiting worker: block until the request that makes it what it is. */
static void __attribute__((noreturn))
pool_wait(int fd)
{
	struct ctl		 c;
	msgpack_unpacked	 up;
	int			 cfd;

	setproctitle("waiting");
	ctl_init(&c, fd);
	msgpack_unpacked_init(&up);
	if (ctl_recv_wait(&c, &up, &cfd, -1) != 1 || cfd == -1)
		_exit(0);	/* the template went away */
	/* up points into the frame: keep it, free the rest of c. */
	pool_frame = ctl_take_frame(&c);
	ctl_close(&c);
	(void)proto_dispatch(PROTO_TEMPLATE_WAITING, waiting_dispatch_template,
	    PROTO_NHANDLERS(waiting_dispatch_template), "the template", NULL,
	    &up.data, &cfd, 1);
	_exit(1);
}

/* Fork workers until the pool is full (or fork fails: try again later). */
void
pool_fill(void)
{
	pid_t	pid;
	int	sp[2];

	while (pool_n < POOL_SIZE) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
		    sp) == -1) {
			log_warn("template: socketpair");
			return;
		}
		switch (pid = fork()) {
		case -1:
			log_warn("template: fork");
			child_close_pair(sp);
			return;
		case 0:
			close(sp[0]);
			template_child_setup();
			pool_wait(sp[1]);
		}
		close(sp[1]);
		pool[pool_n].pid = pid;
		pool[pool_n].fd = sp[0];
		pool_n++;
	}
}

/*
 * Hand a spawn or stream request (the frame the front sent, as it came,
 * with the connection fd) to a waiting worker: its pid when one took it
 * (fd is then closed here), -1 when none could (fd untouched: the caller
 * forks).
 */
pid_t
pool_take(const struct ctl *from, int fd)
{
	const msgpack_sbuffer	sb = { .size = from->frame_len,
				    .data = from->frame };
	struct ctl		c;
	int			dup, r = -1;

	while (r == -1 && pool_n > 0) {
		pool_n--;
		if ((dup = fcntl(fd, F_DUPFD_CLOEXEC, 3)) == -1)
			break;
		/* A full socket buffer is not possible: one frame, new pair. */
		ctl_init(&c, pool[pool_n].fd);
		r = ctl_send_wait(&c, &sb, dup);
		ctl_close(&c);
	}
	if (r != 0)
		return (-1);
	close(fd);
	return (pool[pool_n].pid);
}

/* A child of the template exited: forget it if it was waiting. */
void
pool_reaped(pid_t pid)
{
	int	i;

	for (i = 0; i < pool_n; i++) {
		if (pool[i].pid == pid) {
			close(pool[i].fd);
			pool[i] = pool[--pool_n];
			return;
		}
	}
}
