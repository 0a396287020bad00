/*
 * scope.c: lodged under systemd: the workers leave the service's cgroup.
 *
 * Sessions outlive the front by design, but everything in lodged.service's
 * cgroup is the service's to kill: `systemctl kill lodged` signals every
 * process in it, and so would a stop with any KillMode but "process".  So
 * the template, before it forks anything, is moved into a transient scope
 * of its own (as tmux does for its server); every worker, session and
 * command it forks is born there.  Outside a systemd service nothing moves.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>

#include "front.h"
#include "log.h"

/* How long a move may take before the template goes on where it is. */
#define SCOPE_WAIT_MS	2000

/*
 * Only a process started as a systemd service has a cgroup to leave: its
 * unit's name in service (NULL: nothing to leave), for the caller to free.
 */
static char *
scope_service(void)
{
	char	*unit = NULL;
	size_t	 n;

	if (sd_booted() <= 0 || getenv("INVOCATION_ID") == NULL ||
	    sd_pid_get_unit(0, &unit) < 0)
		return (NULL);
	n = strlen(unit);
	if (n > 8 && strcmp(unit + n - 8, ".service") == 0)
		return (unit);
	free(unit);
	return (NULL);
}

/*
 * The move is a job of the manager's; see it done in /proc: the scope
 * named, and the service in no hierarchy.  A hybrid host (cgroup v1 with
 * name=systemd beside the unified one) moves the process in each, one
 * after the other, and what the template forks in between would stay the
 * service's in the other.
 */
static int
scope_wait(pid_t pid, const char *name, const char *service)
{
	char		 path[64], buf[4096];
	FILE		*f;
	struct timespec	 ts = { 0, 1000000 };
	int		 i, found, left;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	for (i = 0; i < SCOPE_WAIT_MS; i++) {
		if ((f = fopen(path, "re")) == NULL)
			return (-1);
		found = left = 0;
		while (fgets(buf, sizeof(buf), f) != NULL) {
			found |= strstr(buf, name) != NULL;
			left |= strstr(buf, service) != NULL;
		}
		fclose(f);
		if (found && !left)
			return (0);
		nanosleep(&ts, NULL);
	}
	return (-1);
}

/*
 * Move pid into a new scope, lodge-workers-PID-RANDOM.scope.  Returns 0 when
 * it moved or nothing had to move, -1 when it stays in the service's cgroup
 * (logged: its sessions then die with the service).
 */
int
scope_adopt(pid_t pid)
{
	sd_bus		*bus = NULL;
	sd_bus_message	*m = NULL, *reply = NULL;
	sd_bus_error	 err = SD_BUS_ERROR_NULL;
	char		 name[96], desc[128], *service;
	int		 r;

	if ((service = scope_service()) == NULL)
		return (0);
	snprintf(name, sizeof(name), "lodge-workers-%d-%08x.scope", (int)pid,
	    arc4random());
	snprintf(desc, sizeof(desc), "lodge sessions and commands (lodged[%d])",
	    (int)getpid());
	if ((r = sd_bus_open_system(&bus)) < 0)
		goto fail;
	r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1",
	    "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
	    "StartTransientUnit");
	if (r >= 0)
		r = sd_bus_message_append(m, "ss", name, "fail");
	if (r >= 0)
		r = sd_bus_message_open_container(m, 'a', "(sv)");
	if (r >= 0)
		r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)",
		    "Description", "s", desc,
		    "PIDs", "au", 1, (uint32_t)pid,
		    /* the template makes a group per session below it */
		    "Delegate", "b", 1,
		    "CollectMode", "s", "inactive-or-failed");
	if (r >= 0)
		r = sd_bus_message_close_container(m);
	if (r >= 0)
		r = sd_bus_message_append(m, "a(sa(sv))", 0);
	if (r >= 0)
		r = sd_bus_call(bus, m, 5 * 1000000ULL, &err, &reply);
	if (r < 0)
		goto fail;
	if (scope_wait(pid, name, service) == -1) {
		log_warnx("%s: the template was not moved within %d ms", name,
		    SCOPE_WAIT_MS);
		r = -ETIMEDOUT;
		goto done;
	}
	log_debug("workers run in %s", name);
	goto done;
fail:
	log_warnx("cannot start %s (%s): sessions stay in the service's "
	    "cgroup and die with it", name,
	    sd_bus_error_is_set(&err) ? err.message : strerror(-r));
done:
	sd_bus_error_free(&err);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	sd_bus_flush_close_unref(bus);
	free(service);
	return (r < 0 ? -1 : 0);
}
