/*
 * child.c: starting the session's process.
 *
 * The child gets its own session and process group, the PTY as controlling
 * terminal (or three pipes), fds 0-2 only, default signal dispositions and
 * an empty mask.  It joins its group (contain.c) first, takes the peer's
 * process limit, dies with its parent, and looks its program up in PATH
 * as the user, after the uid change, as execvp would.  A failure before or in execve travels back through a
 * close-on-exec pipe as a stage and an errno, so the caller reports why the
 * command could not start instead of inventing an exit code.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "nofile.h"
#include "worker.h"

enum child_stage {
	CHILD_STAGE_SETUP,
	CHILD_STAGE_TTY,
	CHILD_STAGE_CHDIR,
	CHILD_STAGE_USER,
	CHILD_STAGE_RESOLVE,
	CHILD_STAGE_EXEC,
};

struct child_error {
	int	stage;
	int	err;
};

static void
child_strv_free(char **v)
{
	size_t	i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

static int
child_strv_add(char ***v, size_t *n, const char *s)
{
	char	**nv;

	if ((nv = reallocarray(*v, *n + 2, sizeof(char *))) == NULL)
		return (-1);
	*v = nv;
	if ((nv[*n] = strdup(s)) == NULL)
		return (-1);
	nv[++*n] = NULL;
	return (0);
}

/* Replace or add NAME=value in an environment vector. */
static int
child_env_set(char ***v, size_t *n, const char *kv)
{
	size_t	 i, klen = strcspn(kv, "=");

	for (i = 0; i < *n; i++) {
		if (strncmp((*v)[i], kv, klen) == 0 && (*v)[i][klen] == '=') {
			char *s = strdup(kv);

			if (s == NULL)
				return (-1);
			free((*v)[i]);
			(*v)[i] = s;
			return (0);
		}
	}
	return (child_strv_add(v, n, kv));
}

/* The environment into *v; on failure *v holds what was made so far. */
static int
child_environ(char ***v, const struct spawnreq *r, const char *user,
    const char *home, const char *shell, int pty)
{
	const char	*const set[][2] = {
		{ "HOME", home }, { "USER", user }, { "LOGNAME", user },
		{ "SHELL", shell }, { "PATH", "/usr/local/sbin:/usr/local/bin:"
		    "/usr/sbin:/usr/bin:/sbin:/bin" }, { "LANG", getenv("LANG") }
	};
	char		 buf[2048];
	size_t		 n = 0, i;

	for (i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		if (set[i][1] == NULL)
			continue;	/* LANG: only if lodged has one */
		snprintf(buf, sizeof(buf), "%s=%s", set[i][0], set[i][1]);
		if (child_env_set(v, &n, buf) == -1)
			return (-1);
	}
	if (pty && child_env_set(v, &n, "TERM=xterm-256color") == -1)
		return (-1);
	for (i = 0; i < r->nenv; i++)
		if (child_env_set(v, &n, r->env[i]) == -1)
			return (-1);
	return (0);
}

/* The argument vector into *v, as child_environ makes the environment. */
static int
child_argv(char ***v, const struct spawnreq *r, const char *shell)
{
	char		 login[PATH_MAX];
	size_t		 n = 0, i;
	const char	*base;

	if (r->args != NULL) {
		for (i = 0; i < r->nargs; i++)
			if (child_strv_add(v, &n, r->args[i]) == -1)
				return (-1);
	} else if (r->command != NULL) {
		if (child_strv_add(v, &n, shell) == -1 ||
		    child_strv_add(v, &n, "-c") == -1 ||
		    child_strv_add(v, &n, r->command) == -1)
			return (-1);
	} else {
		/* A login shell: argv[0] begins with '-', as login(1) does. */
		base = strrchr(shell, '/');
		base = base != NULL ? base + 1 : shell;
		snprintf(login, sizeof(login), "-%s", base);
		return (child_strv_add(v, &n, login));
	}
	return (0);
}

int
child_spec_init(struct child_spec *s, const struct spawnreq *r,
    const char *user, const char *home, const char *shell, int pty)
{
	memset(s, 0, sizeof(*s));
	s->workdir = r->workdir != NULL ? r->workdir : home;
	s->pty = pty;
	s->cols = r->cols;
	s->rows = r->rows;
	s->cgroup_fd = -1;
	if (child_argv(&s->argv, r, shell) == -1 ||
	    child_environ(&s->envp, r, user, home, shell, pty) == -1) {
		child_spec_free(s);
		return (-1);
	}
	return (0);
}

void
child_spec_free(struct child_spec *s)
{
	child_strv_free(s->argv);
	child_strv_free(s->envp);
	s->argv = s->envp = NULL;
}

static const char *const child_stage_names[] = {
	[CHILD_STAGE_SETUP] = "cannot set up the process",
	[CHILD_STAGE_TTY] = "cannot set up the terminal",
	[CHILD_STAGE_CHDIR] = "cannot change to workDir",
	[CHILD_STAGE_USER] = "cannot become the user",
	[CHILD_STAGE_RESOLVE] = "cannot execute",
	[CHILD_STAGE_EXEC] = "cannot execute",
};

/* What this process ignores; a plain mask, as glibc's sigset_t calls
 * refuse the signals it reserves. */
static uint64_t		child_ignored;

/* The kernel's sigaction: the handler, flags, restorer, an 8-byte mask. */
struct child_ksigaction {
	void		*handler;
	unsigned long	 flags;
	void		*restorer;
	uint64_t	 mask;
};

/*
 * The signals this process ignores, asked of the kernel (libc hides the
 * ones it reserves).  Each process sets its dispositions once at start,
 * so the answer is kept per process (a forked worker asks again).
 */
static void
child_find_ignored(void)
{
	static pid_t	known;

	if (known == getpid())
		return;
	known = getpid();
	struct child_ksigaction	ksa;
	int			sig;

	child_ignored = 0;
	for (sig = 1; sig < NSIG && sig <= 64; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (syscall(SYS_rt_sigaction, sig, NULL, &ksa,
		    sizeof(ksa.mask)) == 0 && ksa.handler == (void *)SIG_IGN)
			child_ignored |= 1ULL << (sig - 1);
	}
}

/*
 * Take a peer's RLIMIT_NPROC, within this process's hard limit (raising
 * it needs CAP_SYS_RESOURCE, which root may lack).  Only syscalls: the
 * vfork child calls it.
 */
int
child_limit_nproc(const struct rlimit *want)
{
	struct rlimit	rl, cur;

	rl = *want;
	if (getrlimit(RLIMIT_NPROC, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
	    (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > cur.rlim_max))
		rl.rlim_max = cur.rlim_max;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > rl.rlim_max)
		rl.rlim_cur = rl.rlim_max;
	return (setrlimit(RLIMIT_NPROC, &rl));
}

/* The value of NAME in an environment vector, or NULL. */
static const char *
child_getenv(char **envp, const char *name)
{
	size_t	n = strlen(name), i;

	for (i = 0; envp != NULL && envp[i] != NULL; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return (envp[i] + n + 1);
	return (NULL);
}

/*
 * In the child, after the uid change: find FILE in PATH as execvp does, so
 * the lookup sees only what the user may see.  Only syscalls and string
 * functions: this is a vfork child.  0 or an errno.
 */
static int
child_resolve(const char *file, const char *pathenv, char *out,
    size_t outlen)
{
	const char	*p, *colon;
	size_t		 dlen, flen = strlen(file);
	int		 saw_eacces = 0;
	struct stat	 st;

	if (file[0] == '\0')
		return (ENOENT);
	if (strchr(file, '/') != NULL) {
		if (flen >= outlen)
			return (ENAMETOOLONG);
		memcpy(out, file, flen + 1);
		return (0);
	}
	for (p = pathenv; ; p = colon + 1) {
		colon = strchr(p, ':');
		dlen = colon != NULL ? (size_t)(colon - p) : strlen(p);
		if (dlen + 1 + flen < outlen) {
			/* An empty entry is the working directory. */
			memcpy(out, p, dlen);
			if (dlen > 0)
				out[dlen++] = '/';
			memcpy(out + dlen, file, flen + 1);
			if (access(out, X_OK) == 0) {
				if (stat(out, &st) == 0 && S_ISREG(st.st_mode))
					return (0);
			} else if (errno == EACCES)
				saw_eacces = 1;
		}
		if (colon == NULL)
			break;
	}
	return (saw_eacces ? EACCES : ENOENT);
}

/* In the child: report and die.  Only syscalls: this may be a vfork child. */
static void __attribute__((noreturn))
child_fail(int errfd, int stage)
{
	struct child_error	ce;

	ce.stage = stage;
	ce.err = errno;
	(void)!write(errfd, &ce, sizeof(ce));
	_exit(127);
}

/* What the vfork child needs, all of it made before the vfork. */
struct child_args {
	const struct child_spec	*s;
	const char		*file;		/* to look up in PATH */
	const char		*pathenv;
	char			*path;		/* the parent's: what was run */
	size_t			 pathlen;
	char			**shargv;
	const char		*slave;
	pid_t			 parent;
	int			 in, out, err, errfd;
};

/*
 * In the child, after vfork: everything up to execve.  It shares the
 * parent's memory, so it writes only to its own stack and to a->path (the
 * parent reads there what it tried to run), and makes syscalls.
 */
static void __attribute__((noreturn))
child_exec(const struct child_args *a)
{
	const struct child_spec	*s = a->s;
	struct child_ksigaction	 ksa;
	sigset_t		 set;
	int			 fd, sig, rc, errfd = a->errfd;
	int			 in = a->in, out = a->out, err = a->err;

	/*
	 * execve resets caught signals itself; ignored ones it keeps.  Reset
	 * with the system call: libc refuses to touch the signals it reserves
	 * for itself (32 and 33 with glibc), which would still cross execve.
	 */
	memset(&ksa, 0, sizeof(ksa));
	ksa.handler = (void *)SIG_DFL;
	for (sig = 1; sig < NSIG && sig <= 64; sig++)
		if (child_ignored & (1ULL << (sig - 1)))
			(void)syscall(SYS_rt_sigaction, sig, &ksa, NULL,
			    sizeof(ksa.mask));
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);

	/* Into the group before anything else can fork: none escapes it. */
	if (s->cgroup_fd != -1 && write(s->cgroup_fd, "0", 1) == -1)
		child_fail(errfd, CHILD_STAGE_SETUP);
	if (setsid() == -1)
		child_fail(errfd, CHILD_STAGE_SETUP);
	nofile_restore();
	/* Before the uid change, which then checks it as login(1) does. */
	if (s->set_nproc && child_limit_nproc(&s->nproc) == -1)
		child_fail(errfd, CHILD_STAGE_SETUP);
	if (s->setuser) {
		if (setgroups(s->ngroups, s->groups) == -1 ||
		    setgid(s->gid) == -1 || setuid(s->uid) == -1)
			child_fail(errfd, CHILD_STAGE_USER);
	}
	/*
	 * Die with the parent (a crashed worker, a killed template).  Set
	 * after the uid change, which clears it; a parent already gone is
	 * seen in getppid().
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		child_fail(errfd, CHILD_STAGE_SETUP);
	if (getppid() != a->parent)
		_exit(127);
	if (a->slave != NULL) {
		if ((fd = open(a->slave, O_RDWR)) == -1)
			child_fail(errfd, CHILD_STAGE_TTY);
		if (ioctl(fd, TIOCSCTTY, 0) == -1)
			child_fail(errfd, CHILD_STAGE_TTY);
		in = out = err = fd;
	}
	if (in == -1 && (in = open("/dev/null", O_RDONLY)) == -1)
		child_fail(errfd, CHILD_STAGE_SETUP);
	/* Keep the error pipe clear of 0-2 while they are set up. */
	if (errfd <= 2) {
		if ((fd = fcntl(errfd, F_DUPFD_CLOEXEC, 3)) == -1)
			_exit(127);
		errfd = fd;
	}
	if (dup2(in, 0) == -1 || dup2(out, 1) == -1 || dup2(err, 2) == -1)
		child_fail(errfd, CHILD_STAGE_SETUP);
	if (errfd != 3) {
		if (dup3(errfd, 3, O_CLOEXEC) == -1)
			child_fail(errfd, CHILD_STAGE_SETUP);
		errfd = 3;
	}
	closefrom(4);
	if (s->workdir != NULL && chdir(s->workdir) == -1)
		child_fail(errfd, CHILD_STAGE_CHDIR);
	if ((rc = child_resolve(a->file, a->pathenv, a->path,
	    a->pathlen)) != 0) {
		errno = rc;
		child_fail(errfd, CHILD_STAGE_RESOLVE);
	}
	execve(a->path, s->argv, s->envp);
	/* Like execvp: a file without #! is a script for /bin/sh. */
	if (errno == ENOEXEC && a->shargv != NULL)
		execve("/bin/sh", a->shargv, s->envp);
	child_fail(errfd, CHILD_STAGE_EXEC);
}

/* vfork, kept apart so no caller's variable lives across it. */
static pid_t __attribute__((noinline))
child_vfork(const struct child_args *a)
{
	sigset_t	all, old;
	pid_t		pid;

	/* No handler of ours may run in the vfork child. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = vfork();
	if (pid == 0)
		child_exec(a);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return (pid);
}

void
child_close_pair(int p[2])
{
	if (p[0] != -1)
		close(p[0]);
	if (p[1] != -1)
		close(p[1]);
	p[0] = p[1] = -1;
}

int
child_set_size(int master, int cols, int rows)
{
	struct winsize	ws;

	memset(&ws, 0, sizeof(ws));
	ws.ws_col = (unsigned short)cols;
	ws.ws_row = (unsigned short)rows;
	return (ioctl(master, TIOCSWINSZ, &ws));
}

pid_t
child_signal_group(int master, pid_t pid)
{
	pid_t	pg;

	if (master != -1 && (pg = tcgetpgrp(master)) > 0)
		return (pg);
	return (pid);
}

/*
 * Every pseudo-terminal the kernel allows is in use (ENOSPC from
 * /dev/ptmx, which says "No space left on device"): say which limit.
 */
static void
child_pty_full(char *why, size_t whylen)
{
	char	buf[32] = "?";
	FILE	*f;

	if ((f = fopen("/proc/sys/kernel/pty/max", "re")) != NULL) {
		if (fgets(buf, sizeof(buf), f) == NULL)
			strlcpy(buf, "?", sizeof(buf));
		buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	snprintf(why, whylen, "no pseudo-terminal is left: the kernel's "
	    "limit kernel.pty.max (%s) is reached; raise it, or ask for "
	    "pipes", buf);
}

int
child_start(const struct child_spec *s, struct child *c, char *why,
    size_t whylen)
{
	struct child_error	 ce;
	struct child_args	 a;
	char			 slave[128], path[PATH_MAX];
	const char		*what;
	int			 ep[2] = { -1, -1 }, ip[2] = { -1, -1 };
	int			 op[2] = { -1, -1 }, xp[2] = { -1, -1 };
	int			 master = -1, full = 0;
	ssize_t			 i, n;
	pid_t			 pid;

	memset(c, 0, sizeof(*c));
	c->master = c->in = c->out = c->err = -1;
	memset(&a, 0, sizeof(a));
	a.s = s;
	a.path = path;
	a.pathlen = sizeof(path);
	/* A login shell's argv[0] is "-sh": run SHELL itself. */
	a.file = s->login ? child_getenv(s->envp, "SHELL") : s->argv[0];
	if (a.file == NULL)
		a.file = "/bin/sh";
	if ((a.pathenv = child_getenv(s->envp, "PATH")) == NULL)
		a.pathenv = "/usr/local/bin:/usr/bin:/bin";
	path[0] = '\0';
	if (pipe2(ep, O_CLOEXEC) == -1)
		goto syserr;
	if (s->pty) {
		if ((master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) ==
		    -1 && errno == ENOSPC) {
			child_pty_full(why, whylen);
			full = 1;
			goto fail;
		}
		if (master == -1 || grantpt(master) == -1 ||
		    unlockpt(master) == -1 ||
		    ptsname_r(master, slave, sizeof(slave)) != 0)
			goto syserr;
		if (child_set_size(master, s->cols, s->rows) == -1)
			goto syserr;
		a.slave = slave;	/* it is the child's 0-2 */
	} else if (s->given) {
		a.in = s->fds[0];
		a.out = s->fds[1];
		a.err = s->fds[2];
	} else {
		if (pipe2(ip, O_CLOEXEC) == -1 || pipe2(op, O_CLOEXEC) == -1 ||
		    pipe2(xp, O_CLOEXEC) == -1)
			goto syserr;
		a.in = ip[0];
		a.out = op[1];
		a.err = xp[1];
	}

	/* Built before vfork: the child may not allocate. */
	if (!s->login) {
		for (n = 0; s->argv[n] != NULL; n++)
			;
		if ((a.shargv = calloc((size_t)n + 2, sizeof(char *))) == NULL)
			goto syserr;
		a.shargv[0] = "sh";
		a.shargv[1] = path;
		for (i = 1; i < n; i++)
			a.shargv[i + 1] = s->argv[i];
	}
	child_find_ignored();
	a.parent = getpid();
	a.errfd = ep[1];
	pid = child_vfork(&a);
	free(a.shargv);
	if (pid == -1)
		goto syserr;
	close(ep[1]);
	ep[1] = -1;
	if (ip[0] != -1) {
		close(ip[0]);
		close(op[1]);
		close(xp[1]);
		ip[0] = op[1] = xp[1] = -1;
	}
	do {
		n = read(ep[0], &ce, sizeof(ce));
	} while (n == -1 && errno == EINTR);
	close(ep[0]);
	ep[0] = -1;
	if (n == (ssize_t)sizeof(ce)) {
		while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
			;
		what = ce.stage == CHILD_STAGE_CHDIR ? s->workdir :
		    ce.stage == CHILD_STAGE_RESOLVE ? a.file :
		    ce.stage == CHILD_STAGE_EXEC ? path : NULL;
		if (what != NULL)
			snprintf(why, whylen, "%s '%s': %s",
			    child_stage_names[ce.stage], what,
			    strerror(ce.err));
		else
			snprintf(why, whylen, "%s: %s",
			    child_stage_names[ce.stage], strerror(ce.err));
		goto fail;
	}
	c->pid = pid;
	c->master = master;
	c->in = ip[1];
	c->out = op[0];
	c->err = xp[0];
	return (0);

syserr:
	snprintf(why, whylen, "cannot start the process: %s", strerror(errno));
fail:
	child_close_pair(ep);
	child_close_pair(ip);
	child_close_pair(op);
	child_close_pair(xp);
	if (master != -1)
		close(master);
	errno = full ? ENOSPC : EIO;	/* ENOSPC: kernel.pty.max */
	return (-1);
}
