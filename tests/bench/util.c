/*
 * util.c: clocks, sample sets, the processes the bench started, /proc.
 *
 * Every process the bench starts is tracked by pid, so an aborted run kills
 * exactly those and nothing else on this shared machine.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

extern char	**environ;

double
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	fflush(stdout);
	fprintf(stderr, "lodge-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	bench_cleanup();
	exit(1);
}

void
progress(const char *fmt, ...)
{
	va_list	ap;

	fprintf(stderr, "  .. ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

void
check_interrupt(void)
{
	if (bench_interrupted)
		fatalx("interrupted by %s", bench_interrupted == SIGALRM ?
		    "the time limit" : strsignal(bench_interrupted));
}

double	bench_section_t0;	/* when the current benchmark started */

/*
 * Whether to start run number `done` + 1: up to --runs, but once three runs
 * are in, not past the benchmark's share of the time limit, so that a
 * loaded machine shortens the runs instead of hitting the limit.
 */
int
bench_more_runs(const char *id, int done, double budget_s)
{
	double	elapsed = (now_ms() - bench_section_t0) / 1e3;

	check_interrupt();
	if (done >= bench_runs)
		return (0);
	if (done < 3 || bench_quick || elapsed * (done + 1) / done <= budget_s)
		return (1);
	note("%s: %d runs, not %d: the next would pass its time budget "
	    "(%.0f s)", id, done, bench_runs, budget_s);
	return (0);
}

void
samples_add(struct samples *s, double v)
{
	double	*nv;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		if ((nv = realloc(s->v, s->cap * sizeof(*nv))) == NULL)
			fatalx("out of memory");
		s->v = nv;
	}
	s->v[s->n++] = v;
}

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/* Nearest-rank percentile; sorts the set in place. */
double
samples_pct(struct samples *s, double p)
{
	size_t	k;

	if (s->n == 0)
		return (0);
	qsort(s->v, s->n, sizeof(*s->v), cmp_double);
	k = (size_t)(p / 100.0 * (double)s->n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > s->n)
		k = s->n;
	return (s->v[k - 1]);
}

void
samples_reset(struct samples *s)
{
	s->n = 0;
}

void
samples_free(struct samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/* ---- processes the bench started ---- */

static pid_t	tracked[32768];	/* B8: 10,000 workers */
static int	ntracked;

void
pids_track(pid_t pid)
{
	if (pid > 0 && ntracked < (int)(sizeof(tracked) / sizeof(*tracked)))
		tracked[ntracked++] = pid;
}

void
pids_untrack(pid_t pid)
{
	int	i;

	for (i = 0; i < ntracked; i++) {
		if (tracked[i] == pid) {
			tracked[i] = tracked[--ntracked];
			return;
		}
	}
}

/* SIGKILL every tracked pid still there (each one individually). */
void
pids_kill_all(void)
{
	int	i;

	for (i = 0; i < ntracked; i++)
		(void)kill(tracked[i], SIGKILL);
	for (i = 0; i < ntracked; i++)
		(void)waitpid(tracked[i], NULL, WNOHANG);
	ntracked = 0;
}

/* posix_spawnp argv with the given fds as 0, 1, 2 (-1: /dev/null). */
pid_t
spawn_cmd(char *const argv[], int in, int out, int err)
{
	posix_spawn_file_actions_t	fa;
	pid_t				pid;
	int				fds[3] = { in, out, err }, i, rc;

	posix_spawn_file_actions_init(&fa);
	for (i = 0; i < 3; i++) {
		if (fds[i] == -1)
			posix_spawn_file_actions_addopen(&fa, i, "/dev/null",
			    i == 0 ? O_RDONLY : O_WRONLY, 0);
		else
			posix_spawn_file_actions_adddup2(&fa, fds[i], i);
	}
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		fatalx("spawn %s: %s", argv[0], strerror(rc));
	pids_track(pid);
	return (pid);
}

int
wait_pid(pid_t pid, int *status)
{
	int	st, rc;

	while ((rc = waitpid(pid, &st, 0)) == -1 && errno == EINTR)
		check_interrupt();
	pids_untrack(pid);
	if (status != NULL)
		*status = st;
	return (rc);
}

/* "Field:   123 kB" from /proc/PID/<file>; -1 if absent. */
long
proc_field_kb(pid_t pid, const char *file, const char *field)
{
	char	path[64], line[256];
	FILE	*f;
	size_t	fl = strlen(field);
	long	v = -1;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	if ((f = fopen(path, "re")) == NULL)
		return (-1);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			v = strtol(line + fl + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return (v);
}

/*
 * From /proc/PID/stat: the state letter, the parent and the start time
 * (clock ticks after boot), which tells a process from a later one given
 * its pid.
 */
static int
proc_state(pid_t pid, char *state, int *ppid, unsigned long long *start)
{
	char	path[64], buf[1024], *p;
	int	fd;
	ssize_t	n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return (-1);
	buf[n] = '\0';
	/* pid (comm) state ppid ...; comm may hold spaces and parens */
	if ((p = strrchr(buf, ')')) == NULL || sscanf(p + 1, " %c %d %*d "
	    "%*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
	    "%llu", state, ppid, start) != 3)
		return (-1);
	return (0);
}

pid_t
proc_ppid(pid_t pid)
{
	unsigned long long	start;
	char			state;
	int			ppid;

	return (proc_state(pid, &state, &ppid, &start) == -1 ? -1 :
	    (pid_t)ppid);
}

/* When pid started, or 0 if it is gone. */
unsigned long long
proc_start(pid_t pid)
{
	unsigned long long	start;
	char			state;
	int			ppid;

	return (proc_state(pid, &state, &ppid, &start) == -1 ? 0 : start);
}

/*
 * 1 if the process that started at start still runs as pid; 0 if it is
 * gone or a zombie, or if pid now names a later process (the kernel gives
 * freed pids out again once its counter wraps, which at 10,000 sessions
 * and pid_max 32,768 is within one run).
 */
int
proc_alive_since(pid_t pid, unsigned long long start)
{
	unsigned long long	now;
	char			state;
	int			ppid;

	if (proc_state(pid, &state, &ppid, &now) == -1)
		return (0);
	return (now == start && state != 'Z' && state != 'X');
}

int
proc_alive(pid_t pid)
{
	unsigned long long	start;
	char			state;
	int			ppid;

	/* A zombie counts as gone. */
	if (proc_state(pid, &state, &ppid, &start) == -1)
		return (0);
	return (state != 'Z' && state != 'X');
}

/* From /proc/PID/schedstat: ns on a CPU, and times scheduled in. */
int
proc_sched(pid_t pid, double *cpu_ns, double *slices)
{
	char			path[64];
	FILE			*f;
	unsigned long long	run, wait, n;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return (-1);
	if (fscanf(f, "%llu %llu %llu", &run, &wait, &n) != 3) {
		fclose(f);
		return (-1);
	}
	fclose(f);
	*cpu_ns = (double)run;
	if (slices != NULL)
		*slices = (double)n;
	return (0);
}

double
proc_cpu_ns(pid_t pid)
{
	double	ns;

	return (proc_sched(pid, &ns, NULL) == -1 ? 0 : ns);
}

/* The first child of parent whose command line holds needle. */
pid_t
proc_child_named(pid_t parent, const char *needle)
{
	char	path[96], cmd[512];
	FILE	*f;
	int	pid;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)parent,
	    (int)parent);
	if ((f = fopen(path, "re")) == NULL)
		return (-1);
	while (fscanf(f, "%d", &pid) == 1) {
		if (proc_cmdline(pid, cmd, sizeof(cmd)) == 0 &&
		    strstr(cmd, needle) != NULL) {
			fclose(f);
			return (pid);
		}
	}
	fclose(f);
	return (-1);
}

int
proc_cmdline(pid_t pid, char *out, size_t outlen)
{
	char	path[64];
	int	fd;
	ssize_t	n, i;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	n = read(fd, out, outlen - 1);
	close(fd);
	if (n < 0)
		return (-1);
	for (i = 0; i < n; i++)
		if (out[i] == '\0')
			out[i] = ' ';
	out[n] = '\0';
	return (0);
}
