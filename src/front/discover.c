/*
 * discover.c: finding the sessions again when the front starts.
 *
 * Runs once the listeners are open, and never waits: each session is put
 * in the registry from its record (RUNDIR/registry/ID.json) at once, so
 * it is listed and its name stays taken, and its worker is linked to in
 * the event loop (registry_connect), which bounds every step.  A socket
 * in RUNDIR/sessions/ with no record (left by an older lodged) is linked
 * to the same way, and listed once its worker has said who it is.
 */
#include <sys/types.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "log.h"
#include "spawnreq.h"

/* The id in NAME.SUFFIX, if NAME could be an id. */
static int
discover_id(const char *file, const char *suffix, char *id, size_t len)
{
	size_t	n = strlen(file), sl = strlen(suffix);

	if (n <= sl || strcmp(file + n - sl, suffix) != 0 || n - sl >= len ||
	    !spawnreq_name_valid(file, n - sl))
		return (-1);
	memcpy(id, file, n - sl);
	id[n - sl] = '\0';
	return (0);
}

static void
discover_record(const char *file, const char *id)
{
	struct session	*s;
	json_error_t	 err;
	json_t		*j, *obj;
	const char	*name;
	int		 fd;

	if ((fd = openat(front->records_fd, file, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return;
	j = json_loadfd(fd, JSON_REJECT_DUPLICATES, &err);
	close(fd);
	if (j == NULL || !json_is_object(obj = json_object_get(j,
	    "session")) || json_integer_value(json_object_get(j,
	    "workerPid")) <= 0) {
		log_warnx("record %s: unusable, removed", file);
		record_remove(id);
		json_decref(j);
		return;
	}
	name = json_string_value(json_object_get(obj, "name"));
	if (registry_find_id(id) == NULL &&
	    (s = registry_known(id, name != NULL ? name : "", obj)) != NULL) {
		s->worker_pid = (pid_t)json_integer_value(json_object_get(j,
		    "workerPid"));
		s->worker_start = (unsigned long long)json_integer_value(
		    json_object_get(j, "workerStart"));
		strlcpy(s->recorded, s->state, sizeof(s->recorded));
	}
	json_decref(j);
}

static int
discover_dir(const char *dir, const char *suffix, int records)
{
	DIR		*d;
	struct dirent	*de;
	char		 id[64];
	int		 n = 0;

	if ((d = opendir(dir)) == NULL) {
		log_warn("%s", dir);
		return (0);
	}
	while ((de = readdir(d)) != NULL) {
		if (discover_id(de->d_name, suffix, id, sizeof(id)) == -1 ||
		    registry_find_id(id) != NULL)
			continue;
		if (records)
			discover_record(de->d_name, id);
		else
			(void)registry_known(id, "", NULL);
		if (registry_find_id(id) != NULL)
			n++;
	}
	closedir(d);
	return (n);
}

void
discover_start(void)
{
	struct session	**all;
	char		 dir[700];
	int		 n = 0, i, count;

	if (record_init() == 0) {
		snprintf(dir, sizeof(dir), "%s/registry", front->conf.rundir);
		n += discover_dir(dir, ".json", 1);
	}
	snprintf(dir, sizeof(dir), "%s/sessions", front->conf.rundir);
	n += discover_dir(dir, ".sock", 0);
	if (n == 0)
		return;
	log_info("finding %d session%s", n, n == 1 ? "" : "s");
	/* Linking may forget a session: take the list first. */
	if ((all = calloc((size_t)n, sizeof(*all))) == NULL)
		return;
	count = registry_all(all, n);
	for (i = 0; i < count; i++)
		registry_connect(all[i]);
	free(all);
}
