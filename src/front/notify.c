/*
 * notify.c: lodged under systemd: readiness, watchdog and socket activation.
 *
 * READY=1 goes to $NOTIFY_SOCKET once every listener is up; with socket
 * activation the TCP listeners come from LISTEN_FDS instead of --listen.
 * Under WatchdogSec=, WATCHDOG=1 goes out from the event loop itself at
 * half the interval, so a front whose loop is stuck stops sending it and
 * the service manager restarts it (sessions live on in their workers).
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "front.h"
#include "log.h"

static lws_sorted_usec_list_t	notify_sul_watchdog;
static lws_usec_t		notify_watchdog_every;

static void
notify_watchdog_cb(lws_sorted_usec_list_t *sul)
{
	(void)sd_notify(0, "WATCHDOG=1");
	lws_sul_schedule(front->ctx, 0, sul, notify_watchdog_cb,
	    notify_watchdog_every);
}

void
notify_ready(void)
{
	uint64_t	usec;
	int		rc;

	if ((rc = sd_notify(0, "READY=1")) < 0)
		log_warnx("sd_notify: %s", strerror(-rc));
	if (sd_watchdog_enabled(0, &usec) > 0 && usec >= 2) {
		notify_watchdog_every = (lws_usec_t)(usec / 2);
		notify_watchdog_cb(&notify_sul_watchdog);
	}
}

void
notify_stopping(void)
{
	(void)sd_notify(0, "STOPPING=1");
}

/* Listening sockets passed by the service manager, adopted as listeners. */
int
notify_listeners(void)
{
	struct listener	*l;
	int		 n, i, fd;

	if ((n = sd_listen_fds(1)) <= 0)
		return (0);
	for (i = 0; i < n; i++) {
		fd = SD_LISTEN_FDS_START + i;
		if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
			log_warnx("LISTEN_FDS: fd %d is not a listening stream "
			    "socket", fd);
			continue;
		}
		(void)fcntl(fd, F_SETFL, O_NONBLOCK);
		if ((l = listener_adopt_fd(fd)) == NULL)
			fatalx("cannot adopt the activated socket %d", fd);
		if (front->conf.no_auth && !l->is_unix &&
		    !listener_is_loopback(l->name))
			fatalx("--no-auth is refused: %s is not a loopback "
			    "address", l->name);
		log_info("listening on %s (socket activation)", l->name);
	}
	return (n);
}
