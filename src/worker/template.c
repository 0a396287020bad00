/*
 * template.c: the process that forks session workers and runs exec calls.
 *
 * The front starts it once, by exec, before it serves anyone, so it holds no
 * connection, no token and no libwebsockets state.  Every worker it forks
 * starts from this clean, already-linked image: no exec per session, and
 * the pages of the shared libraries stay shared.
 *
 * It also starts the commands of POST /v1/exec itself, with vfork, on pipes
 * the front made: the front reads their output, and the template reaps them
 * and reports each exit status.  It exits when the front's channel closes;
 * workers live on (each is its own session and is reparented).
 */
#include <sys/types.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "log.h"
#include "mpack.h"
#include "spawnreq.h"
#include "worker.h"

#define TEMPLATE_GROUPS_MAX	256

/* A running exec command, by the front's request id. */
struct template_exec {
	LIST_ENTRY(template_exec) entry;
	int64_t		 id;
	pid_t		 pid;
};

static LIST_HEAD(, template_exec) template_execs =
    LIST_HEAD_INITIALIZER(template_execs);

static void
template_send(struct ctl *c, msgpack_sbuffer *sb)
{
	if (ctl_send(c, sb, -1) == -1)
		log_warnx("template: cannot answer the front");
}

/* A command that did not start: the front answers 422. */
static void
template_spawn_failed(struct ctl *c, int64_t id, const char *why)
{
	msgpack_sbuffer	sb;
	msgpack_packer	pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 5);
	mpack_kv_str(&pk, "type", "spawned");
	mpack_kv_int(&pk, "id", id);
	mpack_kv_int(&pk, "status", 422);
	mpack_kv_str(&pk, "code", "spawn_failed");
	mpack_kv_str(&pk, "message", why);
	template_send(c, &sb);
	msgpack_sbuffer_destroy(&sb);
}

static void
template_reap(struct ctl *c)
{
	struct template_exec	*e;
	msgpack_sbuffer		 sb;
	msgpack_packer		 pk;
	pid_t			 pid;
	int			 status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		LIST_FOREACH(e, &template_execs, entry)
			if (e->pid == pid)
				break;
		if (e == NULL)
			continue;	/* a session worker */
		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		msgpack_pack_map(&pk, 3);
		mpack_kv_str(&pk, "type", "exited");
		mpack_kv_int(&pk, "id", e->id);
		mpack_kv_int(&pk, "status", status);
		template_send(c, &sb);
		msgpack_sbuffer_destroy(&sb);
		LIST_REMOVE(e, entry);
		free(e);
	}
}

/*
 * Run an exec request: fds[] holds the write ends of stdout and stderr and,
 * when there is input, the read end of stdin.  Only a failure is answered
 * now; success is known to the front when "exited" comes.
 */
static void
template_exec_run(struct ctl *c, const msgpack_object *o, int *fds, int nfds)
{
	struct spawnreq		 req;
	struct child_spec	 spec;
	struct child		 ch;
	struct template_exec	*e;
	gid_t			 groups[TEMPLATE_GROUPS_MAX];
	char			 why[1024], user[SPAWNREQ_USER_MAX + 1];
	char			 home[512], shell[256], **argv = NULL;
	char			 **envp = NULL;
	int64_t			 id = 0, uid, gid;
	int			 ngroups = TEMPLATE_GROUPS_MAX, i;

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	memset(&req, 0, sizeof(req));
	if (mpack_get_int(o, "uid", 0, UINT32_MAX, &uid) != 1 ||
	    mpack_get_int(o, "gid", 0, UINT32_MAX, &gid) != 1 ||
	    mpack_strcpy(mpack_get(o, "user"), user, sizeof(user)) == -1 ||
	    mpack_strcpy(mpack_get(o, "home"), home, sizeof(home)) == -1 ||
	    mpack_strcpy(mpack_get(o, "shell"), shell, sizeof(shell)) == -1 ||
	    spawnreq_decode(mpack_get(o, "req"), SPAWN_EXEC, 0, &req, why,
	    sizeof(why)) == -1) {
		template_spawn_failed(c, id, "malformed exec request");
		goto out;
	}
	if (nfds < 2) {
		template_spawn_failed(c, id, "malformed exec request");
		goto out;
	}
	argv = child_argv(&req, shell);
	envp = child_environ(&req, user, home, shell, 0);
	if (argv == NULL || envp == NULL) {
		template_spawn_failed(c, id, "out of memory");
		goto out;
	}
	memset(&spec, 0, sizeof(spec));
	spec.argv = argv;
	spec.envp = envp;
	spec.workdir = req.workdir != NULL ? req.workdir : home;
	spec.given = 1;
	spec.fds[0] = nfds == 3 ? fds[2] : -1;
	spec.fds[1] = fds[0];
	spec.fds[2] = fds[1];
	if ((uid_t)uid != geteuid() || (gid_t)gid != getegid()) {
		if (getgrouplist(user, (gid_t)gid, groups, &ngroups) == -1)
			ngroups = 0;
		spec.setuser = 1;
		spec.uid = (uid_t)uid;
		spec.gid = (gid_t)gid;
		spec.groups = groups;
		spec.ngroups = ngroups;
	}
	if (child_start(&spec, &ch, why, sizeof(why)) == -1) {
		template_spawn_failed(c, id, why);
		goto out;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		kill(ch.pid, SIGKILL);
		template_spawn_failed(c, id, "out of memory");
		goto out;
	}
	e->id = id;
	e->pid = ch.pid;
	LIST_INSERT_HEAD(&template_execs, e, entry);
out:
	child_strv_free(argv);
	child_strv_free(envp);
	spawnreq_free(&req);
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

static void
template_exec_kill(const msgpack_object *o)
{
	struct template_exec	*e;
	int64_t			 id = 0, sig = SIGKILL;

	(void)mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id);
	(void)mpack_get_int(o, "signal", 1, 64, &sig);
	LIST_FOREACH(e, &template_execs, entry) {
		if (e->id == id) {
			/* Still our unreaped child: the pid cannot be reused. */
			if (kill(-e->pid, (int)sig) == -1)
				(void)kill(e->pid, (int)sig);
			if (sig == SIGTERM || sig == SIGHUP)
				(void)kill(-e->pid, SIGCONT);
			return;
		}
	}
}

static void
template_fork(struct ctl *c, const msgpack_object *o, int fd, int stream)
{
	pid_t	pid;

	if (fd == -1) {
		log_warnx("template: request without a descriptor");
		return;
	}
	switch (pid = fork()) {
	case -1:
		log_warn("template: fork");
		close(fd);	/* the front or client sees EOF */
		return;
	case 0:
		close(c->fd);
		c->fd = -1;
		signal(SIGCHLD, SIG_DFL);
		if (stream)
			stream_main(fd, o);
		worker_main(fd, o);
	}
	close(fd);
}

static void
template_dispatch(struct ctl *c, msgpack_unpacked *up, int *fds, int nfds)
{
	const msgpack_object	*o = &up->data, *type = mpack_get(o, "type");
	int			 i;

	if (mpack_streq(type, "spawn") && nfds == 1)
		template_fork(c, o, fds[0], 0);
	else if (mpack_streq(type, "stream") && nfds == 1)
		template_fork(c, o, fds[0], 1);
	else if (mpack_streq(type, "exec"))
		template_exec_run(c, o, fds, nfds);
	else {
		if (mpack_streq(type, "kill"))
			template_exec_kill(o);
		else
			log_warnx("template: unexpected request");
		for (i = 0; i < nfds; i++)
			close(fds[i]);
	}
}

void
template_main(int ctlfd)
{
	struct ctl		 c;
	struct pollfd		 pfd[2];
	struct signalfd_siginfo	 si;
	msgpack_unpacked	 up;
	sigset_t		 set;
	int			 r, fds[CTL_FRAME_FDS], nfds;

	child_save_limits();
	setproctitle("template");
	log_setident("lodged-template");
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((pfd[1].fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) == -1)
		fatal("template: signalfd");

	ctl_init(&c, ctlfd);
	msgpack_unpacked_init(&up);
	for (;;) {
		pfd[0].fd = c.fd;
		pfd[0].events = POLLIN | (ctl_pending(&c) ? POLLOUT : 0);
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			fatal("template: poll");
		}
		if (pfd[1].revents & POLLIN) {
			while (read(pfd[1].fd, &si, sizeof(si)) > 0)
				;
			template_reap(&c);
		}
		if (pfd[0].revents & POLLOUT && ctl_flush(&c) == -1)
			break;
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if ((r = ctl_read(&c)) == 0 || r == -1)
			break;
		while ((r = ctl_nextv(&c, &up, fds, &nfds)) == 1)
			template_dispatch(&c, &up, fds, nfds);
		if (r == -1) {
			log_warnx("template: bad frame from the front");
			break;
		}
		(void)ctl_flush(&c);
	}
	msgpack_unpacked_destroy(&up);
	ctl_close(&c);
	exit(0);
}
