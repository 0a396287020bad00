/*
 * rundir.c: the runtime directory, and the trust placed in it.
 *
 * What lodged finds under RUNDIR it believes: the token, the sockets of
 * its sessions.  So RUNDIR and RUNDIR/sessions must be lodged's own and
 * writable by nobody else, every directory above them root's or lodged's
 * and writable by nobody else unless sticky (/tmp), and none of it reached
 * through a link someone else could turn.  Anything else is refused at
 * start, with the reason.  Inside, the front works relative to one
 * descriptor of the directory, opened without following links.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "log.h"

#define RUNDIR_MODE	0711	/* others reach the sockets, never list */

/* Why st, owned by a trusted uid, could still be changed by others. */
static const char *
rundir_loose(const struct stat *st, int sticky_ok)
{
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) == 0 ||
	    (sticky_ok && (st->st_mode & S_ISVTX)))
		return (NULL);
	if ((st->st_mode & S_IWGRP) && (st->st_mode & S_IWOTH))
		return ("writable by group and others");
	return (st->st_mode & S_IWGRP ? "writable by its group" :
	    "writable by others");
}

/* Each directory above the resolved path: root's or ours, kept closed. */
static int
rundir_check_parents(const char *path)
{
	struct stat	 st;
	char		 part[PATH_MAX];
	const char	*why;
	size_t		 i;

	for (i = 1; path[i] != '\0'; i++) {
		if (path[i] != '/')
			continue;
		memcpy(part, path, i);
		part[i] = '\0';
		if (lstat(part, &st) == -1) {
			log_warn("%s", part);
			return (-1);
		}
		if (!S_ISDIR(st.st_mode))
			why = "not a directory";
		else if (st.st_uid != 0 && st.st_uid != geteuid())
			why = "owned by another user";
		else
			why = rundir_loose(&st, 1);
		if (why != NULL) {
			log_warnx("--runtime-dir %s: refused, %s is %s", path,
			    part, why);
			return (-1);
		}
	}
	if (lstat("/", &st) == -1 || st.st_uid != 0 ||
	    rundir_loose(&st, 0) != NULL) {
		log_warnx("--runtime-dir %s: refused, / is not root's", path);
		return (-1);
	}
	return (0);
}

/*
 * The name, resolved: links above RUNDIR are followed once, here, and the
 * path every later use takes holds none.
 */
static int
rundir_resolve(char *dir, size_t len)
{
	char	 parent[PATH_MAX], real[PATH_MAX], *slash;

	if (realpath(dir, real) == NULL) {
		if (errno != ENOENT) {
			log_warn("%s", dir);
			return (-1);
		}
		strlcpy(parent, dir, sizeof(parent));
		slash = strrchr(parent, '/');
		*slash = '\0';
		if (realpath(parent[0] == '\0' ? "/" : parent, real) == NULL) {
			log_warn("%s", parent[0] == '\0' ? "/" : parent);
			return (-1);
		}
		if (strcmp(real, "/") != 0)
			strlcat(real, "/", sizeof(real));
		strlcat(real, slash + 1, sizeof(real));
	}
	if (strlen(real) > 200 || strlcpy(dir, real, len) >= len) {
		log_warnx("--runtime-dir %s: resolves to %s, longer than "
		    "200 bytes", dir, real);
		return (-1);
	}
	return (0);
}

/* A directory of ours, reached without a link, closed to others. */
static int
rundir_openat(int at, const char *path, const char *name)
{
	struct stat	 st;
	const char	*why;
	int		 fd;

	if (mkdirat(at, path, RUNDIR_MODE) == -1 && errno != EEXIST) {
		log_warn("mkdir %s", name);
		return (-1);
	}
	if ((fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		if (errno == ELOOP || errno == ENOTDIR)
			log_warnx("%s: refused, a symbolic link or not a "
			    "directory", name);
		else
			log_warn("%s", name);
		return (-1);
	}
	if (fstat(fd, &st) == -1) {
		log_warn("%s", name);
		goto fail;
	}
	if (st.st_uid != geteuid())
		why = "owned by another user";
	else
		why = rundir_loose(&st, 0);
	if (why != NULL) {
		log_warnx("%s: refused, %s (lodged keeps its token and "
		    "sockets there)", name, why);
		goto fail;
	}
	if ((st.st_mode & 07777) != RUNDIR_MODE &&
	    fchmod(fd, RUNDIR_MODE) == -1) {
		log_warn("chmod %s", name);
		goto fail;
	}
	return (fd);
fail:
	close(fd);
	return (-1);
}

/* An entry lodged replaces at start: if there, a socket of ours. */
static int
rundir_check_socket(const char *entry)
{
	struct stat	st;

	if (fstatat(front->rundir_fd, entry, &st, AT_SYMLINK_NOFOLLOW) ==
	    -1)
		return (errno == ENOENT ? 0 : -1);
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		log_warnx("%s/%s: refused, %s", front->conf.rundir, entry,
		    S_ISSOCK(st.st_mode) ? "owned by another user" :
		    "not a socket");
		return (-1);
	}
	return (0);
}

/* Check, create and open RUNDIR and RUNDIR/sessions; 0 or -1 (logged). */
int
rundir_open(void)
{
	char	name[700];
	int	fd;

	front->rundir_fd = -1;
	if (rundir_resolve(front->conf.rundir,
	    sizeof(front->conf.rundir)) == -1 ||
	    rundir_check_parents(front->conf.rundir) == -1)
		return (-1);
	if ((fd = rundir_openat(AT_FDCWD, front->conf.rundir,
	    front->conf.rundir)) == -1)
		return (-1);
	front->rundir_fd = fd;
	snprintf(name, sizeof(name), "%s/sessions", front->conf.rundir);
	if ((fd = rundir_openat(front->rundir_fd, "sessions", name)) == -1 ||
	    rundir_check_socket("lodged.sock") == -1) {
		if (fd != -1)
			close(fd);
		close(front->rundir_fd);
		front->rundir_fd = -1;
		return (-1);
	}
	close(fd);
	return (0);
}
