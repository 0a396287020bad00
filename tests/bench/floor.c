/*
 * floor.c: each benchmark's floor, the same work done without lodged.
 *
 * posix_spawn + waitpid of /bin/true; a command writing into a raw pipe or
 * a raw PTY read by the bench; C-to-C pipe and loopback TCP streams;
 * keystrokes on a raw PTY and a loopback TCP one-byte echo; a loopback TCP
 * fetch; dtach's per-session process.  The children are forked or spawned here and waited
 * for here.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

extern char	**environ;

#define FLOOR_RBUF	(256 * KIB)

static unsigned char *
floor_buf(void)
{
	static unsigned char	*buf;

	if (buf == NULL) {
		if ((buf = malloc(FLOOR_RBUF)) == NULL)
			fatalx("out of memory");
		memset(buf, 0, FLOOR_RBUF);
	}
	return (buf);
}

static ssize_t
read_retry(int fd, void *buf, size_t len)
{
	ssize_t	n;

	while ((n = read(fd, buf, len)) == -1 && errno == EINTR)
		check_interrupt();
	return (n);
}

void
floor_spawn_true(struct samples *s, int n)
{
	char	*argv[] = { "/bin/true", NULL };
	pid_t	 pid;
	double	 t0;
	int	 i, rc, st;

	for (i = 0; i < n; i++) {
		t0 = now_ms();
		if ((rc = posix_spawn(&pid, argv[0], NULL, NULL, argv,
		    environ)) != 0)
			fatalx("posix_spawn: %s", strerror(rc));
		while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
			check_interrupt();
		samples_add(s, now_ms() - t0);
	}
}

/* argv's stdout into a pipe read by the bench; seconds, bytes read. */
double
floor_pipe_cmd(char *const argv[], uint64_t *bytes)
{
	unsigned char	*buf = floor_buf();
	int		 p[2];
	pid_t		 pid;
	double		 t0;
	ssize_t		 n;

	*bytes = 0;
	if (pipe2(p, O_CLOEXEC) == -1)
		fatalx("pipe: %s", strerror(errno));
	t0 = now_ms();
	pid = spawn_cmd(argv, -1, p[1], -1);
	close(p[1]);
	while ((n = read_retry(p[0], buf, FLOOR_RBUF)) > 0)
		*bytes += (uint64_t)n;
	close(p[0]);
	wait_pid(pid, NULL);
	return ((now_ms() - t0) / 1e3);
}

/* A forked child writes total bytes in blk writes into a pipe. */
double
floor_pipe_c2c(uint64_t total, size_t blk)
{
	unsigned char	*buf = floor_buf();
	uint64_t	 got = 0, left;
	int		 p[2];
	pid_t		 pid;
	double		 t0;
	ssize_t		 n;

	if (pipe2(p, O_CLOEXEC) == -1)
		fatalx("pipe: %s", strerror(errno));
	t0 = now_ms();
	if ((pid = fork()) == -1)
		fatalx("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		for (left = total; left > 0; left -= (uint64_t)n)
			if ((n = write(p[1], buf, left < blk ? left : blk)) <= 0)
				_exit(1);
		_exit(0);
	}
	pids_track(pid);
	close(p[1]);
	while ((n = read_retry(p[0], buf, blk)) > 0)
		got += (uint64_t)n;
	close(p[0]);
	wait_pid(pid, NULL);
	if (got != total)
		fatalx("pipe stream: %llu of %llu bytes",
		    (unsigned long long)got, (unsigned long long)total);
	return ((now_ms() - t0) / 1e3);
}

int
floor_listen(int *port)
{
	struct sockaddr_in	sin;
	socklen_t		sl = sizeof(sin);
	int			fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fatalx("socket: %s", strerror(errno));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 16) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == -1)
		fatalx("listen: %s", strerror(errno));
	*port = ntohs(sin.sin_port);
	return (fd);
}

/* A forked child sends total bytes in blk writes over loopback TCP. */
double
floor_tcp_c2c(uint64_t total, size_t blk)
{
	unsigned char	*buf = floor_buf();
	uint64_t	 got = 0, left;
	int		 lfd, fd, port;
	pid_t		 pid;
	double		 t0;
	ssize_t		 n;

	lfd = floor_listen(&port);
	t0 = now_ms();
	if ((pid = fork()) == -1)
		fatalx("fork: %s", strerror(errno));
	if (pid == 0) {
		close(lfd);
		if ((fd = tcp_connect(port)) == -1)
			_exit(1);
		for (left = total; left > 0; left -= (uint64_t)n)
			if ((n = write(fd, buf, left < blk ? left : blk)) <= 0)
				_exit(1);
		_exit(0);
	}
	pids_track(pid);
	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		fatalx("accept: %s", strerror(errno));
	close(lfd);
	while ((n = read_retry(fd, buf, FLOOR_RBUF)) > 0)
		got += (uint64_t)n;
	close(fd);
	wait_pid(pid, NULL);
	if (got != total)
		fatalx("tcp stream: %llu of %llu bytes",
		    (unsigned long long)got, (unsigned long long)total);
	return ((now_ms() - t0) / 1e3);
}

/* sh -c cmd on a fresh PTY (its controlling terminal). */
pid_t
floor_pty_start(const char *cmd, int *master, int *slave)
{
	int	m, s;
	pid_t	pid;

	if (openpty(&m, &s, NULL, NULL, NULL) == -1)
		fatalx("openpty: %s", strerror(errno));
	if ((pid = fork()) == -1)
		fatalx("fork: %s", strerror(errno));
	if (pid == 0) {
		close(m);
		setsid();
		if (ioctl(s, TIOCSCTTY, 0) == -1)
			_exit(126);
		dup2(s, 0);
		dup2(s, 1);
		dup2(s, 2);
		if (s > 2)
			close(s);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	pids_track(pid);
	if (slave != NULL) {
		(void)fcntl(s, F_SETFD, FD_CLOEXEC);
		*slave = s;
	} else
		close(s);
	(void)fcntl(m, F_SETFD, FD_CLOEXEC);
	*master = m;
	return (pid);
}

/*
 * cmd's output through a raw PTY read loop (64 KiB reads) until `expect`
 * bytes came; seconds.  The bench keeps a slave fd open, so the read loop
 * never sees the EIO of a hung-up terminal (which, on this kernel, may come
 * before the last bytes were read) and stops at the byte count instead.
 */
double
floor_pty_cmd(const char *cmd, uint64_t expect)
{
	unsigned char	*buf = floor_buf();
	int		 m, keep;
	pid_t		 pid;
	double		 t0, t;
	uint64_t	 bytes = 0;
	ssize_t		 n;

	t0 = now_ms();
	pid = floor_pty_start(cmd, &m, &keep);
	while (bytes < expect && (n = read_retry(m, buf, 64 * KIB)) > 0)
		bytes += (uint64_t)n;
	t = now_ms();
	close(keep);
	close(m);
	wait_pid(pid, NULL);
	if (bytes != expect)
		fatalx("raw PTY: %llu of %llu bytes", (unsigned long long)bytes,
		    (unsigned long long)expect);
	return ((t - t0) / 1e3);
}

/* cmd on a fresh PTY, up to its ready mark R. */
void
pty_term_open(struct pty_term *t, const char *cmd)
{
	unsigned char	r;

	t->pid = floor_pty_start(cmd, &t->master, NULL);
	do {
		if (read_retry(t->master, &r, 1) != 1)
			fatalx("pty keys: no ready mark");
	} while (r != 'R');
}

/*
 * n one-byte round trips on t after warm untimed ones: each byte written
 * is timed to its echo in ms (other bytes are skipped).
 */
void
pty_term_keys(struct pty_term *t, struct samples *s, int n, int warm)
{
	unsigned char	c, r;
	int		i;
	double		t0;

	for (i = -warm; i < n; i++) {
		c = (unsigned char)('a' + (i & 15));
		t0 = now_ms();
		if (write(t->master, &c, 1) != 1)
			fatalx("pty keys: write %d failed", i);
		do {
			if (read_retry(t->master, &r, 1) != 1)
				fatalx("pty keys: no echo of %d", i);
		} while (r != c);
		if (i >= 0)
			samples_add(s, now_ms() - t0);
		if ((i & 1023) == 0)
			check_interrupt();
	}
}

void
pty_term_close(struct pty_term *t)
{
	close(t->master);
	(void)kill(t->pid, SIGKILL);
	wait_pid(t->pid, NULL);
}

/* One-byte round trips through cmd on a fresh PTY (ms). */
void
floor_pty_keys(const char *cmd, struct samples *s, int n)
{
	struct pty_term	t;

	pty_term_open(&t, cmd);
	pty_term_keys(&t, s, n, 100);
	pty_term_close(&t);
}

/* One-byte round trips to a forked echo server over loopback TCP. */
void
floor_tcp_echo(struct samples *s, int n)
{
	unsigned char	c, r;
	int		lfd, fd, port, one = 1, i;
	pid_t		pid;
	double		t0;

	lfd = floor_listen(&port);
	if ((pid = fork()) == -1)
		fatalx("fork: %s", strerror(errno));
	if (pid == 0) {
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			_exit(1);
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		while (read(fd, &c, 1) == 1)
			if (write(fd, &c, 1) != 1)
				break;
		_exit(0);
	}
	pids_track(pid);
	close(lfd);
	if ((fd = tcp_connect(port)) == -1)
		fatalx("tcp echo: connect: %s", strerror(errno));
	for (i = -100; i < n; i++) {
		c = (unsigned char)('a' + (i & 15));
		t0 = now_ms();
		if (write(fd, &c, 1) != 1 || read_retry(fd, &r, 1) != 1 ||
		    r != c)
			fatalx("tcp echo: round trip %d failed", i);
		if (i >= 0)
			samples_add(s, now_ms() - t0);
	}
	close(fd);
	wait_pid(pid, NULL);
}

/* Connect, receive `bytes` from a forked server: n times. */
void
floor_tcp_fetch(struct samples *s, int n, size_t bytes)
{
	unsigned char	*buf = floor_buf();
	size_t		 got;
	int		 lfd, fd, port, i;
	pid_t		 pid;
	double		 t0;
	ssize_t		 k;

	lfd = floor_listen(&port);
	if ((pid = fork()) == -1)
		fatalx("fork: %s", strerror(errno));
	if (pid == 0) {
		for (i = -5; i < n; i++) {
			size_t	left;

			if ((fd = accept(lfd, NULL, NULL)) == -1)
				_exit(1);
			for (left = bytes; left > 0; left -= (size_t)k)
				if ((k = write(fd, buf, left < 65536 ? left :
				    65536)) <= 0)
					_exit(1);
			close(fd);
		}
		_exit(0);
	}
	pids_track(pid);
	close(lfd);
	for (i = -5; i < n; i++) {
		t0 = now_ms();
		if ((fd = tcp_connect(port)) == -1)
			fatalx("tcp fetch: connect: %s", strerror(errno));
		for (got = 0; got < bytes; got += (size_t)k)
			if ((k = read_retry(fd, buf, FLOOR_RBUF)) <= 0)
				fatalx("tcp fetch: short read");
		if (i >= 0)
			samples_add(s, now_ms() - t0);
		close(fd);
	}
	wait_pid(pid, NULL);
}

static int
in_path(const char *prog)
{
	char	 path[4096], *p, *dir, *save = NULL, file[4200];
	const char *env = getenv("PATH");

	snprintf(path, sizeof(path), "%s", env != NULL ? env :
	    "/usr/bin:/bin");
	for (p = path; (dir = strtok_r(p, ":", &save)) != NULL; p = NULL) {
		snprintf(file, sizeof(file), "%s/%s", dir, prog);
		if (access(file, X_OK) == 0)
			return (1);
	}
	return (0);
}

/*
 * n dtach sessions of cat (`dtach -n SOCK cat`), each with its own master
 * process; the average PSS and RSS of those masters, in kB.  The masters
 * are found by their socket paths (in our own directory) and killed here.
 */
int
floor_dtach_pss(const char *dir, int n, double *pss_kb, double *rss_kb,
    double *dirty_kb)
{
	char		 sock[512], cmd[1024], want[600];
	char		*argv[] = { "dtach", "-n", sock, "cat", NULL };
	pid_t		 pid, masters[256];
	DIR		*d;
	struct dirent	*de;
	long		 pss, rss, dirty;
	int		 i, nm = 0, st, tries;
	double		 tp = 0, tr = 0, td = 0;

	if (n > 256)
		n = 256;
	if (!in_path("dtach"))
		return (-1);
	for (i = 0; i < n; i++) {
		snprintf(sock, sizeof(sock), "%s/dtach.%d", dir, i);
		pid = spawn_cmd(argv, -1, -1, -1);
		wait_pid(pid, &st);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fatalx("dtach -n failed (is dtach installed?)");
	}
	snprintf(want, sizeof(want), "dtach -n %s/dtach.", dir);
	usleep(200000);
	if ((d = opendir("/proc")) == NULL)
		fatalx("opendir /proc");
	while ((de = readdir(d)) != NULL && nm < n) {
		if ((pid = (pid_t)atoi(de->d_name)) <= 0)
			continue;
		if (proc_cmdline(pid, cmd, sizeof(cmd)) == -1 ||
		    strncmp(cmd, want, strlen(want)) != 0)
			continue;
		masters[nm++] = pid;
		pids_track(pid);
	}
	closedir(d);
	for (i = 0; i < nm; i++) {
		pss = proc_field_kb(masters[i], "smaps_rollup", "Pss");
		rss = proc_field_kb(masters[i], "smaps_rollup", "Rss");
		dirty = proc_field_kb(masters[i], "smaps_rollup",
		    "Private_Dirty");
		tp += (double)pss;
		tr += (double)rss;
		td += (double)dirty;
	}
	for (i = 0; i < nm; i++)
		(void)kill(masters[i], SIGTERM);
	for (tries = 0; tries < 100; tries++) {
		for (i = 0; i < nm; i++)
			if (proc_alive(masters[i]))
				break;
		if (i == nm)
			break;
		usleep(20000);
	}
	for (i = 0; i < nm; i++) {
		if (proc_alive(masters[i]))
			(void)kill(masters[i], SIGKILL);
		pids_untrack(masters[i]);
	}
	for (i = 0; i < n; i++) {
		snprintf(sock, sizeof(sock), "%s/dtach.%d", dir, i);
		(void)unlink(sock);
	}
	if (nm != n)
		fatalx("found %d of %d dtach masters", nm, n);
	*pss_kb = tp / nm;
	*rss_kb = tr / nm;
	*dirty_kb = td / nm;
	return (nm);
}
