/*
 * record.c: RUNDIR/registry/, what the front knows of each session.
 *
 * A worker's socket, RUNDIR/sessions/ID.sock, is how a front finds the
 * worker again, but a file is easily removed, and a worker that does not
 * answer says nothing.  So for each session the front keeps, in a
 * directory of its own (mode 0700), ID.json: the session object, the
 * worker's pid and start time, rewritten when the session's state
 * changes; and ID.sock: a second link to the worker's socket.  A removed
 * ID.sock then neither hides a session nor frees its name: the next
 * front reaches the worker through its link and puts ID.sock back, and a
 * worker that does not answer is still listed and can still be deleted.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "log.h"

#define RECORD_DIR	"registry"

/* Create or check RUNDIR/registry: ours, a directory, closed to others. */
int
record_init(void)
{
	struct stat	st;
	char		path[700];
	int		fd;

	front->records_fd = -1;
	snprintf(path, sizeof(path), "%s/" RECORD_DIR, front->conf.rundir);
	if (mkdir(path, 0700) == -1 && errno != EEXIST) {
		log_warn("mkdir %s", path);
		return (-1);
	}
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		log_warn("%s", path);
		return (-1);
	}
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		log_warnx("%s: not lodged's own directory of mode 0700; "
		    "sessions are found from their sockets only", path);
		close(fd);
		return (-1);
	}
	front->records_fd = fd;
	return (0);
}

/* The record: the session object, and how to tell its worker's pid. */
void
record_write(struct session *s)
{
	char		 name[80], tmp[90], sock[700];
	char		*text;
	size_t		 len, off = 0;
	ssize_t		 n;
	int		 fd;

	if (front->records_fd == -1 || s->json == NULL || s->worker_pid <= 0)
		return;
	strlcpy(s->recorded, s->state, sizeof(s->recorded));
	/* The object as the front holds it: its text, spliced in. */
	if (asprintf(&text, "{\"session\":%s,\"workerPid\":%d,"
	    "\"workerStart\":%llu}", s->json, (int)s->worker_pid,
	    s->worker_start) == -1)
		return;
	snprintf(name, sizeof(name), "%s.json", s->id);
	snprintf(tmp, sizeof(tmp), "%s.json.new", s->id);
	if ((fd = openat(front->records_fd, tmp, O_WRONLY | O_CREAT |
	    O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1) {
		log_warn("record %s", tmp);
		free(text);
		return;
	}
	len = strlen(text);
	while (off < len && (n = write(fd, text + off, len - off)) > 0)
		off += (size_t)n;
	free(text);
	if (close(fd) == -1 || off < len ||
	    renameat(front->records_fd, tmp, front->records_fd, name) == -1) {
		log_warn("record %s", name);
		(void)unlinkat(front->records_fd, tmp, 0);
		return;
	}
	/* The second link to the worker's socket, made once. */
	snprintf(name, sizeof(name), "%s.sock", s->id);
	snprintf(sock, sizeof(sock), "%s/sessions/%s.sock", front->conf.rundir,
	    s->id);
	if (linkat(AT_FDCWD, sock, front->records_fd, name, 0) == -1 &&
	    errno != EEXIST)
		log_warn("link %s", sock);
}

void
record_remove(const char *id)
{
	char	name[80];

	if (front->records_fd == -1)
		return;
	snprintf(name, sizeof(name), "%s.json", id);
	(void)unlinkat(front->records_fd, name, 0);
	snprintf(name, sizeof(name), "%s.sock", id);
	(void)unlinkat(front->records_fd, name, 0);
}

/* The path of the registry's link to the worker's socket, if it has one. */
int
record_link_path(const char *id, char *path, size_t len)
{
	struct stat	st;
	char		name[80];

	snprintf(name, sizeof(name), "%s.sock", id);
	if (front->records_fd == -1 || fstatat(front->records_fd, name, &st,
	    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISSOCK(st.st_mode))
		return (-1);
	if ((size_t)snprintf(path, len, "%s/" RECORD_DIR "/%s",
	    front->conf.rundir, name) >= len)
		return (-1);
	return (0);
}

/* Put RUNDIR/sessions/ID.sock back from the registry's link. */
int
record_restore(const char *id)
{
	struct stat	st;
	char		name[80], sock[700];

	snprintf(name, sizeof(name), "%s.sock", id);
	snprintf(sock, sizeof(sock), "%s/sessions/%s.sock", front->conf.rundir,
	    id);
	if (front->records_fd == -1 || lstat(sock, &st) == 0 ||
	    errno != ENOENT)
		return (0);
	if (linkat(front->records_fd, name, AT_FDCWD, sock, 0) == -1)
		return (-1);
	log_info("session %s: %s put back", id, sock);
	return (1);
}
