/*
 * contain.c: every process a session or a command starts, found and ended
 * together.
 *
 * Where the kernel has cgroup v2 and lodged may make groups in its own
 * cgroup, each session, exec stream and exec command gets a group of its
 * own, BASE/lodge/NAME, that its child joins before execve: nothing it
 * starts can leave (setsid, double forks and nohup included), and
 * cgroup.kill ends all of it at once.  The descriptors are opened while
 * the creator is still root, and the kernel checks a migration against
 * the opener's credentials, so a child that already runs as the user
 * still joins.
 *
 * Elsewhere the group is the subreaper's tree: every process whose parent
 * chain leads to TOP (escaped grandchildren are reparented to a subreaper,
 * so they stay in it), and for the template's commands the orphans of the
 * command's session SID, which the template (a subreaper too) adopted.
 * Each signal follows the children lists again; the caller repeats until
 * none is left.
 *
 * A group is named after the pid of the process that made it; the
 * template removes the groups of processes that are gone (contain_sweep).
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"

static char	contain_base[1024];	/* "": no cgroup, the tree */
static int	contain_no_children;	/* no /proc/.../children: pgrps only */
static DIR	*contain_sweep_dir;	/* a sweep under way */
static int	 contain_sweep_left;	/* its groups not removed yet */

#define CONTAIN_SWEEP_STEP	64	/* groups a step of a sweep looks at */

/* The cgroup2 mount point, from mountinfo; 0 or -1. */
static int
contain_mount(char *out, size_t outlen)
{
	FILE	*f;
	char	 line[4096], *p, *mnt, *sep;
	int	 found = -1;

	if ((f = fopen("/proc/self/mountinfo", "re")) == NULL)
		return (-1);
	while (found == -1 && fgets(line, sizeof(line), f) != NULL) {
		/* id parent maj:min root mount opts... - fstype src opts */
		if ((sep = strstr(line, " - ")) == NULL ||
		    strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		p = line;
		for (int i = 0; i < 4 && p != NULL; i++)
			if ((p = strchr(p, ' ')) != NULL)
				p++;
		if (p == NULL)
			continue;
		mnt = p;
		if ((p = strchr(mnt, ' ')) == NULL)
			continue;
		*p = '\0';
		/* Octal escapes (\040) in the path: not ours to handle. */
		if (strchr(mnt, '\\') == NULL &&
		    strlcpy(out, mnt, outlen) < outlen)
			found = 0;
	}
	fclose(f);
	return (found);
}

/* This process's cgroup v2 path ("0::/path"); 0 or -1. */
static int
contain_own(char *out, size_t outlen)
{
	FILE	*f;
	char	 line[4096];
	int	 found = -1;

	if ((f = fopen("/proc/self/cgroup", "re")) == NULL)
		return (-1);
	while (found == -1 && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "0::/", 4) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (strlcpy(out, line + 3, outlen) < outlen)
			found = 0;
	}
	fclose(f);
	return (found);
}

/*
 * Decide once, in the template, before any worker is forked: cgroups
 * under BASE/lodge, or the tree.  Never fails.
 */
void
contain_init(int use_cgroup)
{
	char	mnt[PATH_MAX], own[PATH_MAX], base[1024];

	contain_base[0] = '\0';
	/* The tree needs CONFIG_PROC_CHILDREN; without it, process groups. */
	if ((contain_no_children = access("/proc/thread-self/children",
	    R_OK) == -1))
		log_warnx("no /proc/PID/task/TID/children: a group without a "
		    "cgroup is its process group only");
	if (!use_cgroup || geteuid() != 0)
		return;
	if (contain_mount(mnt, sizeof(mnt)) == -1 ||
	    contain_own(own, sizeof(own)) == -1)
		return;
	if ((size_t)snprintf(base, sizeof(base), "%s%s%slodge", mnt,
	    strcmp(own, "/") == 0 ? "" : own, "/") >= sizeof(base))
		return;
	contain_use(base);
}

/* Groups under base, made if need be, if it is a cgroup with cgroup.kill. */
void
contain_use(const char *base)
{
	char	probe[PATH_MAX];

	if (mkdir(base, 0755) == -1 && errno != EEXIST) {
		log_debug("no cgroup for sessions (%s: %s): using the process "
		    "tree", base, strerror(errno));
		return;
	}
	/* cgroup.kill came with Linux 5.14; without it, the tree. */
	snprintf(probe, sizeof(probe), "%s/cgroup.kill", base);
	if (access(probe, W_OK) == -1) {
		log_debug("no cgroup.kill in %s: using the process tree", base);
		return;
	}
	strlcpy(contain_base, base, sizeof(contain_base));
	log_debug("sessions and commands in cgroups under %s", contain_base);
}

static int
contain_has_cgroup(void)
{
	return (contain_base[0] != '\0');
}

static void
contain_path(char *out, size_t outlen, const char *name, const char *file)
{
	snprintf(out, outlen, "%s/%s%s%s", contain_base, name,
	    file != NULL ? "/" : "", file != NULL ? file : "");
}

/*
 * Make the group NAME for processes below TOP (tree mode: TOP's
 * descendants).  A group left by a dead process of the same pid is ended
 * and made again.  Never fails: a cgroup that cannot be made leaves this
 * group to the tree.
 */
void
contain_create(struct contain *c, const char *name, pid_t top)
{
	char	path[PATH_MAX];

	memset(c, 0, sizeof(*c));
	c->procs = c->kill = -1;
	c->top = top;
	strlcpy(c->name, name, sizeof(c->name));
	if (!contain_has_cgroup())
		return;
	contain_path(path, sizeof(path), name, NULL);
	if (mkdir(path, 0755) == -1) {
		if (errno != EEXIST)
			goto fail;
		(void)contain_remove(name);
		if (mkdir(path, 0755) == -1)
			goto fail;
	}
	contain_path(path, sizeof(path), name, "cgroup.procs");
	if ((c->procs = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		goto fail;
	contain_path(path, sizeof(path), name, "cgroup.kill");
	if ((c->kill = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		goto fail;
	c->cgroup = 1;
	return;
fail:
	log_warn("cgroup %s (the process tree instead)", path);
	contain_close(c);
	contain_path(path, sizeof(path), name, NULL);
	(void)rmdir(path);
}

/*
 * The child joined: close cgroup.procs.  Opened by root, it would let a
 * worker that runs as the user move any process into the group.
 */
void
contain_close_procs(struct contain *c)
{
	if (c->procs != -1)
		close(c->procs);
	c->procs = -1;
}

/* Close the descriptors (a process forked off, or done with it). */
void
contain_close(struct contain *c)
{
	contain_close_procs(c);
	if (c->kill != -1)
		close(c->kill);
	c->kill = -1;
}

/* Field 6 of /proc/PID/stat, the session, and whether it is a zombie. */
static int
contain_stat(pid_t pid, pid_t *sid, int *zombie)
{
	char	path[64], buf[1024], *p;
	int	fd, pgrp, s, pp;
	ssize_t	n;
	char	state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return (-1);
	buf[n] = '\0';
	/* The name may hold spaces and parentheses: after the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c %d %d %d", &state, &pp, &pgrp, &s) != 4)
		return (-1);
	*sid = s;
	*zombie = (state == 'Z' || state == 'X');
	return (0);
}

/* A growing list of pids. */
struct contain_list {
	pid_t	*v;
	size_t	 n, cap;
};

static int
contain_add(struct contain_list *l, pid_t pid)
{
	pid_t	*nv;
	size_t	 cap;

	if (l->n == l->cap) {
		cap = l->cap == 0 ? 64 : l->cap * 2;
		if ((nv = reallocarray(l->v, cap, sizeof(*nv))) == NULL)
			return (-1);
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = pid;
	return (0);
}

/* Append the pids a file lists (cgroup.procs, children), space apart. */
static int
contain_read_pids(const char *path, struct contain_list *l)
{
	char	buf[4096], *p, *end;
	size_t	have = 0;
	ssize_t	r;
	long	v;
	int	fd, rc = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (errno == ENOENT || errno == ESRCH ? 0 : -1);
	for (;;) {
		r = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = '\0';
		/* Whole numbers only: the last may go on in the next read. */
		for (p = buf; ; p = end) {
			while (*p == ' ' || *p == '\n')
				p++;
			v = strtol(p, &end, 10);
			if (end == p || *end == '\0')
				break;
			if (v > 0 && contain_add(l, (pid_t)v) == -1)
				rc = -1;
		}
		have = strlen(p);
		memmove(buf, p, have);
	}
	buf[have] = '\0';
	if (have > 0 && (v = strtol(buf, NULL, 10)) > 0 &&
	    contain_add(l, (pid_t)v) == -1)
		rc = -1;
	close(fd);
	return (rc);
}

/* Append the children of pid, those of each of its threads. */
static int
contain_children(pid_t pid, struct contain_list *l)
{
	struct dirent	*de;
	DIR		*d;
	char		 path[96];
	int		 rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return (0);	/* gone */
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children",
		    (int)pid, de->d_name);
		if (contain_read_pids(path, l) == -1)
			rc = -1;
	}
	closedir(d);
	return (rc);
}

/*
 * The tree: TOP (unless it is this process), its descendants, and, for a
 * command (SID set), the orphans of its session that were reparented to
 * this process (a subreaper) and their descendants.  Follows the
 * children lists, so it costs what the group holds, not what runs.
 */
static int
contain_tree_signal(struct contain *c, int sig)
{
	struct contain_list	 l = { NULL, 0, 0 };
	size_t			 i, first;
	pid_t			 self = getpid(), sid;
	int			 zombie, count = 0, rc = 0;

	if (contain_no_children)
		return (-1);	/* the caller falls back to the process group */
	if (c->top <= 0)
		return (0);
	if (c->top != self && contain_add(&l, c->top) == -1)
		rc = -1;
	if (contain_children(c->top, &l) == -1)
		rc = -1;
	if (c->sid > 0 && c->top != self) {
		first = l.n;
		if (contain_children(self, &l) == -1)
			rc = -1;
		for (i = first; i < l.n; ) {
			if (l.v[i] == c->top || contain_stat(l.v[i], &sid,
			    &zombie) == -1 || sid != c->sid)
				l.v[i] = l.v[--l.n];
			else
				i++;
		}
	}
	for (i = 0; i < l.n; i++)
		if (l.v[i] != c->top && contain_children(l.v[i], &l) == -1)
			rc = -1;
	for (i = 0; i < l.n; i++) {
		if (l.v[i] == self || contain_stat(l.v[i], &sid, &zombie) ==
		    -1 || zombie)
			continue;
		count++;
		if (sig != 0)
			(void)kill(l.v[i], sig);
	}
	free(l.v);
	return (rc == -1 && count == 0 ? -1 : count);
}

static int
contain_cgroup_signal(struct contain *c, int sig)
{
	struct contain_list	 l = { NULL, 0, 0 };
	char			 path[PATH_MAX];
	size_t			 i;
	int			 rc;

	if (sig == SIGKILL && c->kill != -1 && write(c->kill, "1", 1) == -1)
		log_warn("cgroup %s: cgroup.kill", c->name);
	contain_path(path, sizeof(path), c->name, "cgroup.procs");
	rc = contain_read_pids(path, &l);
	for (i = 0; sig != 0 && sig != SIGKILL && i < l.n; i++)
		(void)kill(l.v[i], sig);
	free(l.v);
	return (rc == -1 ? -1 : (int)l.n);
}

/*
 * Send sig to every process of the group (0: none).  Returns how many
 * were alive before it, 0 when the group is empty, -1 when it cannot
 * tell.  A stopped process is continued, so TERM and HUP reach it.
 */
int
contain_signal(struct contain *c, int sig)
{
	int	n;

	if (c->cgroup)
		n = contain_cgroup_signal(c, sig);
	else
		n = contain_tree_signal(c, sig);
	if (n > 0 && sig != 0 && sig != SIGKILL && sig != SIGCONT)
		(void)contain_signal(c, SIGCONT);
	return (n);
}

/*
 * sig to all a command started: its group, then its process group (whose
 * id is not reused while a member lives), or the command itself while it
 * is not reaped.  What the signal stops is continued.
 */
int
contain_signal_all(struct contain *c, pid_t pid, int reaped, int sig)
{
	/* The group first: the command's death would orphan its children. */
	int	n = contain_signal(c, sig);

	if (pid > 0 && kill(-pid, sig) == -1 && !reaped)
		(void)kill(pid, sig);
	if (pid > 0 && sig != SIGKILL)
		(void)kill(-pid, SIGCONT);
	return (n);
}

/* Is anything the command pid started still alive, wherever it went? */
int
contain_alive(struct contain *c, pid_t pid)
{
	int	n;

	if (pid <= 0)
		return (0);
	if ((n = contain_signal(c, 0)) == -1)
		return (kill(-pid, 0) == 0 || errno == EPERM);
	return (n > 0);
}

/* End what the group NAME holds and remove it; 0 once it is gone. */
int
contain_remove(const char *name)
{
	char	path[PATH_MAX];
	int	fd;

	if (!contain_has_cgroup() || name[0] == '\0')
		return (0);
	contain_path(path, sizeof(path), name, NULL);
	if (rmdir(path) == 0 || errno == ENOENT)
		return (0);
	contain_path(path, sizeof(path), name, "cgroup.kill");
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) != -1) {
		(void)!write(fd, "1", 1);
		close(fd);
	}
	contain_path(path, sizeof(path), name, NULL);
	return (rmdir(path) == 0 || errno == ENOENT ? 0 : -1);
}

/* Does pid run (a zombie does not: its parent may be gone too)? */
static int
contain_running(pid_t pid)
{
	pid_t	sid;
	int	zombie;

	if (kill(pid, 0) == -1 && errno != EPERM)
		return (0);
	if (contain_stat(pid, &sid, &zombie) == -1)
		return (0);
	return (!zombie);
}

/* The pid a group's name carries: "s123", "t123", "x123.4". */
static pid_t
contain_creator(const char *name)
{
	char	*end;
	long	 v;

	if (name[0] != 's' && name[0] != 't' && name[0] != 'x')
		return (-1);
	if (!isdigit((unsigned char)name[1]))
		return (-1);
	v = strtol(name + 1, &end, 10);
	if (v <= 0 || v > INT_MAX || (*end != '\0' && *end != '.'))
		return (-1);
	return ((pid_t)v);
}

/*
 * In the template: end and remove the groups whose makers are gone (a
 * worker that crashed, a template killed with its commands), and this
 * template's own groups that keep(name) does not claim.  Groups of other
 * live processes are theirs.  A sweep goes CONTAIN_SWEEP_STEP groups a
 * call: a look at one costs four syscalls, and with 10,000 sessions a
 * whole sweep would hold the template (its exec calls and creates) for
 * 40,000 of them.  Returns 1 while the sweep goes on, then how many
 * groups could not be removed yet, as 0 or -n.
 */
int
contain_sweep_step(int (*keep)(const char *))
{
	struct dirent	*de;
	pid_t		 pid, self = getpid();
	int		 n, left;

	if (contain_sweep_dir == NULL) {
		contain_sweep_left = 0;
		if (!contain_has_cgroup() ||
		    (contain_sweep_dir = opendir(contain_base)) == NULL)
			return (0);
	}
	for (n = 0; n < CONTAIN_SWEEP_STEP; n++) {
		if ((de = readdir(contain_sweep_dir)) == NULL) {
			contain_sweep_forget();
			left = contain_sweep_left;
			contain_sweep_left = 0;
			return (-left);
		}
		if (de->d_type != DT_DIR ||
		    (pid = contain_creator(de->d_name)) == -1)
			continue;
		if (pid == self) {
			if (de->d_name[0] == 'x' && keep != NULL &&
			    keep(de->d_name))
				continue;
			if (de->d_name[0] != 'x')
				continue;
		} else if (contain_running(pid))
			continue;
		if (contain_remove(de->d_name) == -1)
			contain_sweep_left++;
	}
	return (1);
}

/* A whole sweep at once (the template's start); how many are left. */
int
contain_sweep(int (*keep)(const char *))
{
	int	r;

	while ((r = contain_sweep_step(keep)) == 1)
		;
	return (-r);
}

/* Drop a sweep under way (in a process forked from the template). */
void
contain_sweep_forget(void)
{
	if (contain_sweep_dir != NULL)
		closedir(contain_sweep_dir);
	contain_sweep_dir = NULL;
}
