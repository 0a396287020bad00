/*
 * main.c: lodge-bench's driver: the private lodged, the sessions it made,
 * the figures and their report (a table on stdout, results.txt,
 * results.json and sessions.dat for gnuplot).
 *
 * lodged runs on a free loopback port with a temporary runtime directory
 * (on a tmpfs, /dev/shm, as systemd's RuntimeDirectory is, unless
 * --rundir-on-disk);
 * the bench reads the token it writes.  Every session a benchmark creates is
 * deleted when the benchmark ends, and on any failure or interruption the
 * bench deletes what is left, kills only the processes it started (by pid)
 * and stops its lodged.
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <linux/magic.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

int			 bench_runs = 5;
int			 bench_quick;
int			 bench_port;
char			 bench_token[256];
volatile int		 bench_interrupted;

static pid_t		 lodged_pid = -1;
char			 bench_workdir[256];	/* temp: run dir, log, dtach */
static char		 rundir[320];
/*
 * lodged's runtime dir is on a tmpfs, as systemd's RuntimeDirectory= (under
 * /run) is: /dev/shm when it is one, unless --rundir-on-disk.  The front
 * writes a record file and binds a socket there per session, which on
 * ext4 costs inode allocation among thousands just freed.
 */
static char		 rundir_tmpfs[300];
static int		 rundir_on_disk;
int			 bench_keep_damon;	/* B8: leave DAMON on */
static const char	*bench_lodged;	/* its path, for a restart */
static const char	*instance = "";	/* "-floor": the second lodged's */
static const char	*outdir = "tests/bench";
static int		 max_sessions = 1000;

/* ---- sessions made by the bench ---- */

struct sess	*sessions;
int		 nsessions;
static int	 capsessions;

static struct sess	*sess_add(const char *, pid_t);
static void		 sess_adopt_listed(void);

/* ---- figures ---- */

static char		 notes[64][2048];
static int		 nnotes;

static struct figure	 figures[160];
static int		 nfigures;
static double		 section_secs[16];
static const char	*section_names[16];
static int		 nsections;

struct figure *
fig_new(const char *id, const char *name, const char *unit,
    const char *base, const char *op, double target, int absolute)
{
	struct figure	*f;

	if (nfigures == (int)(sizeof(figures) / sizeof(*figures)))
		fatalx("too many figures");
	f = &figures[nfigures++];
	memset(f, 0, sizeof(*f));
	f->id = id;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->unit = unit;
	snprintf(f->base, sizeof(f->base), "%s", base != NULL ? base : "");
	f->op = op;
	f->target = target;
	f->absolute = absolute;
	return (f);
}

/* One run's value and, if the figure has one, its floor. */
void
fig_run(struct figure *f, double v, double b)
{
	if (f->n == BENCH_MAXRUNS)
		return;
	f->v[f->n] = v;
	f->b[f->n] = b;
	f->n++;
}

static int
cmpd(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

static void
summary(const double *in, int n, double *mn, double *md, double *mx)
{
	double	v[BENCH_MAXRUNS];

	if (n == 0) {
		*mn = *md = *mx = NAN;
		return;
	}
	memcpy(v, in, sizeof(double) * (size_t)n);
	qsort(v, (size_t)n, sizeof(double), cmpd);
	*mn = v[0];
	*mx = v[n - 1];
	*md = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
fig_ratios(const struct figure *f, double *r)
{
	int	i;

	for (i = 0; i < f->n; i++)
		r[i] = f->b[i] != 0 ? f->v[i] / f->b[i] : NAN;
}

/* -1 no target, 0 missed, 1 met */
static int
fig_met(const struct figure *f)
{
	double	r[BENCH_MAXRUNS], mn, md, mx;

	if (f->op == NULL || f->n == 0)
		return (-1);
	if (f->absolute)
		summary(f->v, f->n, &mn, &md, &mx);
	else {
		fig_ratios(f, r);
		summary(r, f->n, &mn, &md, &mx);
	}
	return (strcmp(f->op, "<=") == 0 ? md <= f->target :
	    md >= f->target);
}

static const char *
fmt(double v, char *buf)
{
	double	a = fabs(v);

	if (isnan(v))
		return ("-");
	if (a >= 100)
		sprintf(buf, "%.0f", v);
	else if (a >= 10)
		sprintf(buf, "%.1f", v);
	else if (a >= 1)
		sprintf(buf, "%.2f", v);
	else
		sprintf(buf, "%.3f", v);
	return (buf);
}

static void
fmt3(const double *v, int n, char *out, size_t len)
{
	double	mn, md, mx;
	char	a[32], b[32], c[32];

	summary(v, n, &mn, &md, &mx);
	snprintf(out, len, "%s / %s / %s", fmt(mn, a), fmt(md, b),
	    fmt(mx, c));
}

static void
print_table(FILE *fp)
{
	struct figure	*f;
	double		 r[BENCH_MAXRUNS], mn, md, mx;
	char		 vals[96], bvals[96], rat[64], tgt[32], a[32], b[32];
	char		 c[32];
	const char	*last = "";
	int		 i, met;

	fprintf(fp, "%-3s %-48s %-5s %-22s | %-40s %-22s | %-20s | %-9s | %s\n",
	    "", "figure", "unit", "min / median / max", "floor (same run)",
	    "min / median / max", "ratio med (range)", "target", "met");
	for (i = 0; i < nfigures; i++) {
		f = &figures[i];
		if (strcmp(last, f->id) != 0 && i > 0)
			fprintf(fp, "\n");
		last = f->id;
		fmt3(f->v, f->n, vals, sizeof(vals));
		if (f->base[0] != '\0') {
			fmt3(f->b, f->n, bvals, sizeof(bvals));
			fig_ratios(f, r);
			summary(r, f->n, &mn, &md, &mx);
			snprintf(rat, sizeof(rat), "%s (%s-%s)", fmt(md, a),
			    fmt(mn, b), fmt(mx, c));
		} else {
			bvals[0] = '\0';
			snprintf(rat, sizeof(rat), "-");
		}
		if (f->op != NULL)
			snprintf(tgt, sizeof(tgt), "%s %g%s", f->op, f->target,
			    f->absolute ? f->unit : "x");
		else
			snprintf(tgt, sizeof(tgt), "-");
		met = fig_met(f);
		fprintf(fp, "%-3s %-48s %-5s %-22s | %-40s %-22s | %-20s | "
		    "%-9s | %s\n", f->id, f->name, f->unit, vals,
		    f->base[0] ? f->base : "-", bvals, rat, tgt,
		    met == -1 ? "" : met ? "yes" : "NO");
	}
}

static void
json_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', fp);
		if ((unsigned char)*s < 0x20)
			fprintf(fp, "\\u%04x", *s);
		else
			fputc(*s, fp);
	}
	fputc('"', fp);
}

static void
json_num(FILE *fp, double v)
{
	if (isnan(v) || isinf(v))
		fprintf(fp, "null");
	else
		fprintf(fp, "%.6g", v);
}

static void
json_runs(FILE *fp, const char *key, const double *v, int n)
{
	double	mn, md, mx;
	int	i;

	summary(v, n, &mn, &md, &mx);
	fprintf(fp, "\"%s\": {\"runs\": [", key);
	for (i = 0; i < n; i++) {
		if (i > 0)
			fprintf(fp, ", ");
		json_num(fp, v[i]);
	}
	fprintf(fp, "], \"min\": ");
	json_num(fp, mn);
	fprintf(fp, ", \"median\": ");
	json_num(fp, md);
	fprintf(fp, ", \"max\": ");
	json_num(fp, mx);
	fprintf(fp, "}");
}

struct machine {
	char	date[64];
	char	model[128];
	char	kernel[256];
	long	nproc;
	long	mem_mb;
	char	lodged[256];
	char	load_start[64];
	char	load_end[64];
};

/* The first three fields of /proc/loadavg. */
static void
loadavg(char *out, size_t len)
{
	FILE	*f;
	double	 a = 0, b = 0, c = 0;

	if ((f = fopen("/proc/loadavg", "re")) != NULL) {
		if (fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3)
			a = b = c = 0;
		fclose(f);
	}
	snprintf(out, len, "%.2f %.2f %.2f", a, b, c);
}

static void
machine_info(struct machine *m)
{
	struct utsname	 u;
	time_t		 t = time(NULL);
	FILE		*f;
	char		 line[512], *p;

	memset(m, 0, sizeof(*m));
	strftime(m->date, sizeof(m->date), "%Y-%m-%d %H:%M UTC", gmtime(&t));
	m->nproc = sysconf(_SC_NPROCESSORS_ONLN);
	m->mem_mb = (long)((double)sysconf(_SC_PHYS_PAGES) *
	    (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0));
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof(m->kernel), "%s %s %s", u.sysname,
		    u.release, u.machine);
	if ((f = fopen("/proc/cpuinfo", "re")) != NULL) {
		while (fgets(line, sizeof(line), f) != NULL) {
			if (strncmp(line, "model name", 10) == 0 &&
			    (p = strchr(line, ':')) != NULL) {
				p += 2;
				p[strcspn(p, "\n")] = '\0';
				snprintf(m->model, sizeof(m->model), "%s", p);
				break;
			}
		}
		fclose(f);
	}
}

static void
print_header(FILE *fp, const struct machine *m)
{
	fprintf(fp, "lodge-bench  %s\n", m->date);
	fprintf(fp, "machine: %ld CPUs, %s, %ld MiB RAM, %s\n", m->nproc,
	    m->model, m->mem_mb, m->kernel);
	fprintf(fp, "load average (1/5/15 min): %s at start, %s at end (other "
	    "work on the machine)\n", m->load_start, m->load_end);
	fprintf(fp, "lodged: %s; %d runs per figure; ratio = figure / floor "
	    "of the same run, median over runs%s\n\n", m->lodged, bench_runs,
	    bench_quick ? "; QUICK MODE (reduced sizes)" : "");
}

static void
write_results(const struct machine *m)
{
	struct figure	*f;
	double		 r[BENCH_MAXRUNS];
	char		 path[512];
	FILE		*fp;
	int		 i, met;

	snprintf(path, sizeof(path), "%s/results.txt", outdir);
	if ((fp = fopen(path, "w")) == NULL)
		fatalx("%s: %s", path, strerror(errno));
	print_header(fp, m);
	print_table(fp);
	fprintf(fp, "\n");
	for (i = 0; i < nsections; i++)
		fprintf(fp, "%s took %.1f s\n", section_names[i],
		    section_secs[i]);
	fclose(fp);

	snprintf(path, sizeof(path), "%s/results.json", outdir);
	if ((fp = fopen(path, "w")) == NULL)
		fatalx("%s: %s", path, strerror(errno));
	fprintf(fp, "{\n  \"date\": ");
	json_str(fp, m->date);
	fprintf(fp, ",\n  \"machine\": {\"nproc\": %ld, \"model\": ",
	    m->nproc);
	json_str(fp, m->model);
	fprintf(fp, ", \"memory_mib\": %ld, \"kernel\": ", m->mem_mb);
	json_str(fp, m->kernel);
	fprintf(fp, ", \"load_start\": ");
	json_str(fp, m->load_start);
	fprintf(fp, ", \"load_end\": ");
	json_str(fp, m->load_end);
	fprintf(fp, "},\n  \"lodged\": ");
	json_str(fp, m->lodged);
	fprintf(fp, ",\n  \"runs\": %d,\n  \"quick\": %s,\n  \"sections\": {",
	    bench_runs, bench_quick ? "true" : "false");
	for (i = 0; i < nsections; i++)
		fprintf(fp, "%s\"%s\": %.1f", i ? ", " : "", section_names[i],
		    section_secs[i]);
	fprintf(fp, "},\n  \"figures\": [\n");
	for (i = 0; i < nfigures; i++) {
		f = &figures[i];
		fprintf(fp, "    {\"id\": \"%s\", \"name\": ", f->id);
		json_str(fp, f->name);
		fprintf(fp, ", \"unit\": ");
		json_str(fp, f->unit);
		fprintf(fp, ",\n     ");
		json_runs(fp, "value", f->v, f->n);
		if (f->base[0] != '\0') {
			fprintf(fp, ",\n     \"floor_name\": ");
			json_str(fp, f->base);
			fprintf(fp, ",\n     ");
			json_runs(fp, "floor", f->b, f->n);
			fig_ratios(f, r);
			fprintf(fp, ",\n     ");
			json_runs(fp, "ratio", r, f->n);
		}
		if (f->op != NULL) {
			met = fig_met(f);
			fprintf(fp, ",\n     \"target\": {\"op\": \"%s\", "
			    "\"value\": %g, \"on\": \"%s\"}, \"met\": %s",
			    f->op, f->target, f->absolute ? "value" : "ratio",
			    met ? "true" : "false");
		}
		fprintf(fp, "}%s\n", i + 1 < nfigures ? "," : "");
	}
	fprintf(fp, "  ],\n  \"notes\": [");
	for (i = 0; i < nnotes; i++) {
		fprintf(fp, "%s\n    ", i ? "," : "");
		json_str(fp, notes[i]);
	}
	fprintf(fp, "\n  ]\n}\n");
	fclose(fp);
}

void
note(const char *fmtstr, ...)
{
	va_list	ap;

	if (nnotes == 64)
		return;
	va_start(ap, fmtstr);
	vsnprintf(notes[nnotes++], sizeof(notes[0]), fmtstr, ap);
	va_end(ap);
	fprintf(stderr, "  note: %s\n", notes[nnotes - 1]);
}

/* ---- the private lodged ---- */

static int
free_port(void)
{
	struct sockaddr_in	sin;
	socklen_t		sl = sizeof(sin);
	int			fd, port;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fatalx("socket: %s", strerror(errno));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == -1)
		fatalx("bind: %s", strerror(errno));
	port = ntohs(sin.sin_port);
	close(fd);
	return (port);
}

static int
lodged_try(const char *lodged)
{
	char	listen[64], maxs[32], budget[32], path[600], log[600];
	struct http h;
	FILE	*f;
	pid_t	 pid;
	int	 fd, i, st;

	bench_port = free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", bench_port);
	snprintf(maxs, sizeof(maxs), "%d", max_sessions + 64);
	/* Every session's 1 MiB ring in the budget (B8: past 1/4 of RAM). */
	snprintf(budget, sizeof(budget), "%llu",
	    (unsigned long long)(max_sessions + 64) * MIB);
	snprintf(log, sizeof(log), "%s/lodged%s.log", bench_workdir, instance);
	if ((pid = fork()) == -1)
		fatalx("fork: %s", strerror(errno));
	if (pid == 0) {
		if ((fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644)) != -1) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(lodged, lodged, "--foreground", "--listen", listen,
		    "--runtime-dir", rundir, "--max-sessions", maxs,
		    "--buffer-budget", budget, (char *)NULL);
		_exit(127);
	}
	lodged_pid = pid;
	pids_track(pid);
	snprintf(path, sizeof(path), "%s/token", rundir);
	for (i = 0; i < 200; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			pids_untrack(pid);
			lodged_pid = -1;
			return (-1);
		}
		if ((f = fopen(path, "re")) != NULL) {
			if (fgets(bench_token, sizeof(bench_token), f) != NULL)
				bench_token[strcspn(bench_token, "\r\n")] = '\0';
			fclose(f);
			if (bench_token[0] != '\0' && http_open(&h) == 0) {
				if (http_call(&h, "GET", "/v1/health", NULL) ==
				    0 && h.status == 200) {
					http_close(&h);
					return (0);
				}
				http_close(&h);
			}
		}
		usleep(50000);
	}
	fatalx("lodged did not come up; see %s", log);
}

static void
lodged_start(const char *lodged)
{
	int	i;

	snprintf(rundir, sizeof(rundir), "%s/run%s", rundir_tmpfs[0] != '\0' ?
	    rundir_tmpfs : bench_workdir, instance);
	for (i = 0; i < 3; i++)
		if (lodged_try(lodged) == 0)
			return;
	fatalx("lodged exited at start; see %s/lodged%s.log", bench_workdir,
	    instance);
}

static void
lodged_stop(void)
{
	int	i, st;

	if (lodged_pid <= 0)
		return;
	(void)kill(lodged_pid, SIGTERM);
	for (i = 0; i < 100; i++) {
		if (waitpid(lodged_pid, &st, WNOHANG) == lodged_pid)
			break;
		usleep(20000);
	}
	if (i == 100) {
		(void)kill(lodged_pid, SIGKILL);
		(void)waitpid(lodged_pid, &st, 0);
	}
	pids_untrack(lodged_pid);
	lodged_pid = -1;
}

/*
 * A fresh lodged in place of the one running (which holds no sessions):
 * what one benchmark left in its heap does not count in the next's.
 */
void
bench_lodged_restart(void)
{
	char	path[600];

	if (nsessions > 0)
		fatalx("lodged restarted with %d sessions", nsessions);
	lodged_stop();
	snprintf(path, sizeof(path), "%s/token", rundir);
	(void)unlink(path);
	lodged_start(bench_lodged);
}

/*
 * A second lodged, empty, beside the bench's own: B8's floor in the same
 * moments.  bench_side_swap() exchanges everything that names "the
 * lodged" (its pid, port, token, runtime dir and sessions) with the
 * other's, so every call of the bench goes to whichever is current.
 */
static struct {
	pid_t		 pid;
	int		 port;
	char		 token[sizeof(bench_token)];
	char		 rundir[sizeof(rundir)];
	const char	*instance;
	struct sess	*sessions;
	int		 nsessions, capsessions;
} side = { -1, 0, "", "", "-floor", NULL, 0, 0 };
static int	side_current;	/* the second lodged is the current one */
static int	cleaning_up;	/* bench_cleanup has begun */

#define SWAP(a, b, type) do { type t_ = (a); (a) = (b); (b) = t_; } while (0)
void
bench_side_swap(void)
{
	char	buf[sizeof(rundir)];

	SWAP(lodged_pid, side.pid, pid_t);
	SWAP(bench_port, side.port, int);
	SWAP(instance, side.instance, const char *);
	SWAP(sessions, side.sessions, struct sess *);
	SWAP(nsessions, side.nsessions, int);
	SWAP(capsessions, side.capsessions, int);
	memcpy(buf, bench_token, sizeof(bench_token));
	memcpy(bench_token, side.token, sizeof(bench_token));
	memcpy(side.token, buf, sizeof(bench_token));
	memcpy(buf, rundir, sizeof(rundir));
	memcpy(rundir, side.rundir, sizeof(rundir));
	memcpy(side.rundir, buf, sizeof(rundir));
	side_current = !side_current;
}
#undef SWAP

/* Start the second lodged; the bench's own stays the current one. */
void
bench_side_start(void)
{
	bench_side_swap();
	if (lodged_pid > 0)
		fatalx("the second lodged is already running");
	lodged_start(bench_lodged);
	bench_side_swap();
}

/* Delete the second lodged's sessions and stop it; the bench's is current. */
void
bench_side_stop(void)
{
	bench_side_swap();
	if (cleaning_up && lodged_pid > 0)
		sess_adopt_listed();
	if (nsessions > 0 && lodged_pid > 0)
		(void)sess_delete_all();
	lodged_stop();
	bench_side_swap();
}

pid_t
bench_front_pid(void)
{
	return (lodged_pid);
}

pid_t
bench_template_pid(void)
{
	pid_t	pid;

	if ((pid = proc_child_named(lodged_pid, "template")) == -1)
		fatalx("cannot find lodged's template process");
	return (pid);
}

/* ---- sessions ---- */

static struct sess	*sess_take(struct http *, const char *);

struct sess *
sess_create(struct http *h, const char *body, double *ms)
{
	double	t0 = now_ms();

	if (http_call(h, "POST", "/v1/sessions", body) == -1)
		fatalx("POST /v1/sessions: connection failed");
	if (ms != NULL)
		*ms = now_ms() - t0;
	return (sess_take(h, body));
}

/* The session a 201 reply on h made (the request was body). */
static struct sess *
sess_take(struct http *h, const char *body)
{
	struct sess	*s;
	json_error_t	 err;
	json_t		*j;
	const char	*id;

	if (h->status != 201)
		fatalx("POST /v1/sessions %s: %d %s", body, h->status, h->body);
	if ((j = json_loadb(h->body, h->body_len, 0, &err)) == NULL ||
	    (id = json_string_value(json_object_get(j, "id"))) == NULL)
		fatalx("POST /v1/sessions: bad reply %s", h->body);
	s = sess_add(id, (pid_t)json_integer_value(json_object_get(j, "pid")));
	json_decref(j);
	return (s);
}

/* Record the session id whose command is child. */
static struct sess *
sess_add(const char *id, pid_t child)
{
	struct sess	*s;

	if (nsessions == capsessions) {
		capsessions = capsessions ? capsessions * 2 : 64;
		if ((sessions = realloc(sessions, (size_t)capsessions *
		    sizeof(*sessions))) == NULL)
			fatalx("out of memory");
	}
	s = &sessions[nsessions++];
	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->child = child;
	s->worker = proc_ppid(s->child);
	s->worker_start = proc_start(s->worker);
	pids_track(s->worker);
	return (s);
}

/*
 * When the bench ends: also record the sessions lodged lists that the
 * bench does not know (a create whose reply an interruption cut off), so
 * that they are deleted too; sessions outlive their front.
 */
static void
sess_adopt_listed(void)
{
	struct http	 h;
	json_t		*j, *list, *o;
	const char	*id;
	size_t		 i;
	int		 k, adopted = 0;

	/* A create cut off may still be under way in lodged: let it end. */
	usleep(300000);
	if (http_open(&h) == -1)
		return;
	if (http_call(&h, "GET", "/v1/sessions", NULL) == 0 &&
	    h.status == 200 &&
	    (j = json_loadb(h.body, h.body_len, 0, NULL)) != NULL) {
		list = json_object_get(j, "sessions");
		json_array_foreach(list, i, o) {
			if ((id = json_string_value(json_object_get(o,
			    "id"))) == NULL)
				continue;
			for (k = 0; k < nsessions; k++)
				if (strcmp(sessions[k].id, id) == 0)
					break;
			if (k < nsessions)
				continue;
			(void)sess_add(id, (pid_t)json_integer_value(
			    json_object_get(o, "pid")));
			adopted++;
		}
		json_decref(j);
	}
	http_close(&h);
	if (adopted > 0)
		fprintf(stderr, "lodge-bench: %d sessions the bench had no "
		    "reply for\n", adopted);
}

json_t *
sess_get(struct http *h, const struct sess *s)
{
	char		 path[256];
	json_error_t	 err;
	json_t		*j;

	snprintf(path, sizeof(path), "/v1/sessions/%s", s->id);
	if (http_call(h, "GET", path, NULL) == -1 || h->status != 200)
		fatalx("GET %s failed", path);
	if ((j = json_loadb(h->body, h->body_len, 0, &err)) == NULL)
		fatalx("GET %s: bad reply", path);
	return (j);
}

/*
 * Create n sessions of body over nconn connections (at most 16), one
 * request in flight on each: as fast as lodged takes them.  Seconds.
 */
double
sess_create_many(const char *body, int n, int nconn)
{
	struct http	 h[16];
	struct pollfd	 pfd[16];
	int		 busy[16], sent = 0, done = 0, i;
	double		 t0 = now_ms();

	if (nconn > 16)
		nconn = 16;
	if (nconn > n)
		nconn = n;
	for (i = 0; i < nconn; i++) {
		if (http_open(&h[i]) == -1)
			fatalx("cannot connect to lodged");
		if (http_send(&h[i], "POST", "/v1/sessions", body) == -1)
			fatalx("POST /v1/sessions: send failed");
		busy[i] = 1;
		sent++;
	}
	while (done < n) {
		for (i = 0; i < nconn; i++) {
			pfd[i].fd = busy[i] ? h[i].fd : -1;
			pfd[i].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)nconn, 60000) <= 0) {
			check_interrupt();
			if (errno == EINTR)
				continue;
			fatalx("POST /v1/sessions: no answer in 60 s");
		}
		for (i = 0; i < nconn; i++) {
			if (!busy[i] || !(pfd[i].revents & (POLLIN | POLLHUP |
			    POLLERR)))
				continue;
			if (http_recv(&h[i]) == -1)
				fatalx("POST /v1/sessions: connection failed");
			(void)sess_take(&h[i], body);
			done++;
			busy[i] = 0;
			if (sent < n) {
				if (http_send(&h[i], "POST", "/v1/sessions",
				    body) == -1)
					fatalx("POST /v1/sessions: send failed");
				busy[i] = 1;
				sent++;
			}
		}
		if ((done & 255) == 0)
			check_interrupt();
	}
	for (i = 0; i < nconn; i++)
		http_close(&h[i]);
	return ((now_ms() - t0) / 1e3);
}

/* DELETE every session, over up to 16 connections at once; seconds. */
double
sess_delete_all(void)
{
	struct http	 h[16];
	struct pollfd	 pfd[16];
	int		 inflight[16], k = nsessions < 16 ? nsessions : 16;
	int		 next = 0, done = 0, i, tries, reused = 0;
	char		 path[256];
	double		 t0 = now_ms(), t;

	for (i = 0; i < k; i++) {
		if (http_open(&h[i]) == -1)
			fatalx("cannot connect to lodged");
		snprintf(path, sizeof(path), "/v1/sessions/%s",
		    sessions[next].id);
		if (http_send(&h[i], "DELETE", path, NULL) == -1)
			fatalx("DELETE: send failed");
		inflight[i] = next++;
	}
	while (done < nsessions) {
		for (i = 0; i < k; i++) {
			pfd[i].fd = inflight[i] >= 0 ? h[i].fd : -1;
			pfd[i].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)k, 60000) <= 0) {
			if (errno == EINTR && !bench_interrupted)
				continue;
			fatalx("DELETE: no answer");
		}
		for (i = 0; i < k; i++) {
			if (inflight[i] < 0 || !(pfd[i].revents & (POLLIN |
			    POLLHUP | POLLERR)))
				continue;
			if (http_recv(&h[i]) == -1 || (h[i].status != 204 &&
			    h[i].status != 404))
				fatalx("DELETE session: %d", h[i].status);
			done++;
			inflight[i] = -1;
			if (next < nsessions) {
				snprintf(path, sizeof(path), "/v1/sessions/%s",
				    sessions[next].id);
				if (http_send(&h[i], "DELETE", path, NULL) == -1)
					fatalx("DELETE: send failed");
				inflight[i] = next++;
			}
		}
	}
	t = (now_ms() - t0) / 1e3;
	for (i = 0; i < k; i++)
		http_close(&h[i]);
	/*
	 * The workers leave after answering; wait, then make sure.  A pid
	 * is a worker's only while its start time is the worker's: by now
	 * the pids of the first ones deleted may be another process's.
	 */
	for (tries = 0; tries < 250; tries++) {
		for (i = 0; i < nsessions; i++)
			if (proc_alive_since(sessions[i].worker,
			    sessions[i].worker_start))
				break;
		if (i == nsessions)
			break;
		usleep(20000);
	}
	for (i = 0; i < nsessions; i++) {
		if (proc_alive_since(sessions[i].worker,
		    sessions[i].worker_start)) {
			note("worker %d of session %s still there 5 s after "
			    "DELETE; killed", (int)sessions[i].worker,
			    sessions[i].id);
			(void)kill(sessions[i].worker, SIGKILL);
		} else if (proc_alive(sessions[i].worker))
			reused++;
		pids_untrack(sessions[i].worker);
	}
	if (reused > 0)
		note("%d pids of deleted workers were another process's by "
		    "the end of the deletes (the pid counter wrapped); not "
		    "counted as workers left", reused);
	nsessions = 0;
	return (t);
}

/* Attach and read up to "live"; replayed output bytes. */
uint64_t
sess_attach(struct ws *w, const struct sess *s, const char *query)
{
	char			 path[512];
	const unsigned char	*p;
	const msgpack_object	*o;
	const char		*d;
	size_t			 n, dn;
	uint64_t		 replay = 0;

	snprintf(path, sizeof(path), "/v1/sessions/%s/attach%s", s->id,
	    query != NULL ? query : "");
	if (ws_open(w, path) == -1)
		fatalx("attach %s: handshake failed", s->id);
	for (;;) {
		if (ws_recv(w, &p, &n) != 1)
			fatalx("attach %s: closed before live (code %d)", s->id,
			    w->close_code);
		if ((o = ws_decode(w, p, n)) == NULL)
			fatalx("attach: not a msgpack map");
		if (mp_type_is(o, "live"))
			return (replay);
		if ((mp_type_is(o, "stdout") || mp_type_is(o, "stderr")) &&
		    mp_bin(o, "data", &d, &dn) == 0)
			replay += dn;
		else if (mp_type_is(o, "error"))
			fatalx("attach: error message");
	}
}

/* A msgpack {"type":"stdin","data":bin} message. */
void
pack_stdin(msgpack_sbuffer *sb, const void *data, size_t len)
{
	msgpack_packer	pk;

	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "type", 4);
	msgpack_pack_str_with_body(&pk, "stdin", 5);
	msgpack_pack_str_with_body(&pk, "data", 4);
	msgpack_pack_bin_with_body(&pk, data, len);
}

/* ---- cleanup ---- */

void
bench_cleanup(void)
{
	static int	in_cleanup;

	if (in_cleanup++)
		return;
	alarm(0);
	bench_interrupted = 0;
	cleaning_up = 1;
	if (side_current)
		bench_side_swap();
	if (side.pid > 0) {
		fprintf(stderr, "lodge-bench: stopping the second lodged\n");
		bench_side_stop();
	}
	if (lodged_pid > 0)
		sess_adopt_listed();
	if (nsessions > 0 && lodged_pid > 0) {
		fprintf(stderr, "lodge-bench: deleting %d sessions\n",
		    nsessions);
		(void)sess_delete_all();
	}
	lodged_stop();
	pids_kill_all();
	if (bench_workdir[0] != '\0' && getenv("LODGE_BENCH_KEEP") == NULL) {
		char	*argv[] = { "rm", "-rf", bench_workdir, NULL, NULL };
		pid_t	 pid;

		if (rundir_tmpfs[0] != '\0')
			argv[3] = rundir_tmpfs;
		pid = spawn_cmd(argv, -1, -1, -1);
		wait_pid(pid, NULL);
	}
}

/* A directory for lodged's runtime dir on a tmpfs, if there is one. */
static void
rundir_pick(void)
{
	struct statfs	sf;

	if (rundir_on_disk || statfs("/dev/shm", &sf) == -1 ||
	    sf.f_type != TMPFS_MAGIC)
		return;
	snprintf(rundir_tmpfs, sizeof(rundir_tmpfs),
	    "/dev/shm/lodge-bench-run.XXXXXX");
	if (mkdtemp(rundir_tmpfs) == NULL)
		rundir_tmpfs[0] = '\0';
}

static void
on_signal(int sig)
{
	bench_interrupted = sig;
}

static void
usage(void)
{
	fprintf(stderr, "usage: lodge-bench [--lodged PATH] [--outdir DIR] "
	    "[--runs N (5)] [--quick] [--rundir-on-disk] [--keep-damon]\n"
	    "                   [--only B1,B2,...] [--time-limit SECONDS "
	    "(900)]\n"
	    "       lodge-bench --sdk-figures [--url URL] [--token TOKEN] "
	    "[--execs N] [--keys N] [--bytes N]\n");
	exit(2);
}

static const struct {
	const char	*id;
	void		(*fn)(void);
} benches[] = {
	{ "B1", bench_b1 },
	{ "B2", bench_b2 },
	{ "B3", bench_b3 },
	{ "B4", bench_b4 },
	{ "B5", bench_b5 },
	{ "B6", bench_b6 },
	{ "B7", bench_b7 },
	{ "B8", bench_b8 },
};

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lodged", required_argument, NULL, 'l' },
		{ "outdir", required_argument, NULL, 'o' },
		{ "runs", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "rundir-on-disk", no_argument, NULL, 'd' },
		{ "keep-damon", no_argument, NULL, 'k' },
		{ "only", required_argument, NULL, 'b' },
		{ "time-limit", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	struct sigaction	 sa;
	struct rlimit		 rl;
	rlim_t			 want;
	struct machine		 m;
	const char		*lodged = "./lodged", *only = NULL;
	char			 abspath[4096], cmd[4200];
	FILE			*p;
	double			 t0, tall = now_ms();
	int			 ch, i, limit = 900;
	size_t			 k;

	/* tests/sdk/bench.sh: the SDK figures against a running daemon */
	if (argc > 1 && strcmp(argv[1], "--sdk-figures") == 0)
		return (sdk_figures(argc - 1, argv + 1));
	/* B4's floor of `lodge attach`, run on a terminal of the bench's */
	if (argc > 1 && strcmp(argv[1], "--relay-client") == 0)
		return (relay_client(argc - 1, argv + 1));
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l': lodged = optarg; break;
		case 'o': outdir = optarg; break;
		case 'r':
			bench_runs = atoi(optarg);
			if (bench_runs < 1 || bench_runs > BENCH_MAXRUNS)
				usage();
			break;
		case 'q': bench_quick = 1; break;
		case 'd': rundir_on_disk = 1; break;
		case 'k': bench_keep_damon = 1; break;
		case 'b': only = optarg; break;
		case 't': limit = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if (realpath(lodged, abspath) == NULL || access(abspath, X_OK) != 0) {
		fprintf(stderr, "lodge-bench: %s: not an executable\n", lodged);
		exit(2);
	}
	lodged = abspath;
	/* Before the run, not after it: a run can take many minutes. */
	if (mkdir(outdir, 0755) == -1 && errno != EEXIST)
		fatalx("%s: %s", outdir, strerror(errno));
	if (access(outdir, W_OK) != 0)
		fatalx("%s: %s", outdir, strerror(errno));
	max_sessions = bench_quick ? 100 : 1000;
	if (only == NULL || strstr(only, "B8") != NULL)
		max_sessions = bench_b8_sessions();

	/*
	 * Each session holds a control socket in the front, which lodged
	 * (inheriting this limit) sizes at twice --max-sessions and 4,096
	 * more; root may raise the hard limit too.
	 */
	want = (rlim_t)max_sessions * 2 + 4096 + 128;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
		if (rl.rlim_max < want && geteuid() == 0)
			rl.rlim_max = want;
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1 &&
		    getrlimit(RLIMIT_NOFILE, &rl) == 0) {
			rl.rlim_cur = rl.rlim_max;
			(void)setrlimit(RLIMIT_NOFILE, &rl);
		}
		if (rl.rlim_cur < (rlim_t)max_sessions + 256)
			note("descriptor limit %llu: lodged cannot hold %d "
			    "sessions", (unsigned long long)rl.rlim_cur,
			    max_sessions);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: blocked calls end */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (limit > 0)
		alarm((unsigned)limit);

	snprintf(bench_workdir, sizeof(bench_workdir), "/tmp/lodge-bench.XXXXXX");
	if (mkdtemp(bench_workdir) == NULL)
		fatalx("mkdtemp: %s", strerror(errno));
	machine_info(&m);
	loadavg(m.load_start, sizeof(m.load_start));
	if (atof(m.load_start) > (double)m.nproc)
		note("load average %s at start: more runnable work than CPUs; "
		    "expect noisy figures", m.load_start);
	snprintf(cmd, sizeof(cmd), "%s --version 2>&1", lodged);
	if ((p = popen(cmd, "r")) != NULL) {
		if (fgets(m.lodged, sizeof(m.lodged), p) != NULL)
			m.lodged[strcspn(m.lodged, "\n")] = '\0';
		pclose(p);
	}
	if ((p = popen("git describe --always --dirty 2>/dev/null", "r")) !=
	    NULL) {
		char	rev[64];

		if (fgets(rev, sizeof(rev), p) != NULL) {
			rev[strcspn(rev, "\n")] = '\0';
			k = strlen(m.lodged);
			snprintf(m.lodged + k, sizeof(m.lodged) - k,
			    " (git %s)", rev);
		}
		pclose(p);
	}
	bench_lodged = lodged;
	rundir_pick();
	lodged_start(lodged);
	fprintf(stderr, "lodge-bench: lodged pid %d on 127.0.0.1:%d, "
	    "runtime dir %s\n", (int)lodged_pid, bench_port, rundir);
	note("lodged's runtime dir: %s (%s)", rundir, rundir_tmpfs[0] != '\0' ?
	    "tmpfs" : "the disk's file system; --rundir-on-disk or no tmpfs "
	    "/dev/shm");

	for (k = 0; k < sizeof(benches) / sizeof(*benches); k++) {
		if (only != NULL && strstr(only, benches[k].id) == NULL)
			continue;
		fprintf(stderr, "lodge-bench: %s\n", benches[k].id);
		t0 = bench_section_t0 = now_ms();
		benches[k].fn();
		if (nsessions > 0)
			(void)sess_delete_all();
		section_names[nsections] = benches[k].id;
		section_secs[nsections++] = (now_ms() - t0) / 1e3;
		fprintf(stderr, "lodge-bench: %s took %.1f s\n", benches[k].id,
		    section_secs[nsections - 1]);
	}
	bench_cleanup();
	loadavg(m.load_end, sizeof(m.load_end));

	section_names[nsections] = "all";
	section_secs[nsections++] = (now_ms() - tall) / 1e3;
	print_header(stdout, &m);
	print_table(stdout);
	printf("\n");
	for (i = 0; i < nnotes; i++)
		printf("note: %s\n", notes[i]);
	write_results(&m);
	write_sessions_dat(outdir);
	return (0);
}
