/*
 * scale.c: B6, sessions at scale.
 *
 * Create 1,000 PTY sessions running `cat`, one after the other on one
 * keep-alive connection, timing each POST.  At 10, 100 and 1,000 sessions:
 * the PSS of every idle worker ("lodged: session ID", the parent of the
 * session's cat) from /proc/PID/smaps_rollup, and GET /v1/sessions latency
 * (GET /v1/health alongside, the same HTTP path without the list).  Floors
 * of the same run: posix_spawn + waitpid of /bin/true, and the PSS of
 * dtach's per-session process (20 `dtach -n SOCK cat` sessions).  Then every
 * session is deleted.  sessions.dat (for gnuplot) gets the medians.
 */
#include <sys/types.h>
#include <sys/resource.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define B6_LEVELS	3
#define B6_DTACH	20
/* B8, further down */
#define B8_LEVELS	3
#define B8_EXTRA	1000	/* creates and DELETEs per level, each lodged */
#define B8_EXECS	3000
#define B8_ATTACHES	2000
#define B8_BUILDERS	4	/* connections creating a level at once */

static const int	levels_full[B6_LEVELS] = { 10, 100, 1000 };
static const int	levels_quick[B6_LEVELS] = { 10, 30, 100 };

/* Per level, per run: what sessions.dat plots. */
static struct {
	int	sessions;
	double	pss_total_mb[BENCH_MAXRUNS];
	double	pss_avg_kb[BENCH_MAXRUNS];
	double	create_p50[BENCH_MAXRUNS];	/* sessions since the last level */
	double	create_total[BENCH_MAXRUNS];	/* s, all sessions so far */
	double	dtach_total_mb[BENCH_MAXRUNS];
	double	get_p99[BENCH_MAXRUNS];
	double	spawn_p50[BENCH_MAXRUNS];
	int	n;
} level_data[B6_LEVELS];
static int	b6_done;

/* B8's PTY kind at its last level: the plot's point past B6's. */
static struct {
	int	sessions;
	double	pss_total_mb[BENCH_MAXRUNS];
	double	pss_avg_kb[BENCH_MAXRUNS];
	double	create_p50[BENCH_MAXRUNS];
	double	create_total[BENCH_MAXRUNS];	/* s, B8_BUILDERS at once */
	double	get_p99[BENCH_MAXRUNS];
	double	spawn_p50[BENCH_MAXRUNS];
	int	n;
} b8_point;

struct smaps {
	long	rss, pss, pss_anon, pss_file, private_dirty, private_clean;
};

static int
smaps_read(pid_t pid, struct smaps *m)
{
	char	path[64], line[256];
	FILE	*f;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return (-1);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Rss:", 4) == 0)
			m->rss = strtol(line + 4, NULL, 10);
		else if (strncmp(line, "Pss:", 4) == 0)
			m->pss = strtol(line + 4, NULL, 10);
		else if (strncmp(line, "Pss_Anon:", 9) == 0)
			m->pss_anon = strtol(line + 9, NULL, 10);
		else if (strncmp(line, "Pss_File:", 9) == 0)
			m->pss_file = strtol(line + 9, NULL, 10);
		else if (strncmp(line, "Private_Dirty:", 14) == 0)
			m->private_dirty = strtol(line + 14, NULL, 10);
		else if (strncmp(line, "Private_Clean:", 14) == 0)
			m->private_clean = strtol(line + 14, NULL, 10);
	}
	fclose(f);
	return (0);
}

static double
median(const double *v, int n)
{
	double	s[BENCH_MAXRUNS], t;
	int	i, j;

	if (n == 0)
		return (NAN);
	memcpy(s, v, sizeof(double) * (size_t)n);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && s[j - 1] > s[j]; j--) {
			t = s[j];
			s[j] = s[j - 1];
			s[j - 1] = t;
		}
	return (n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2);
}

void
write_sessions_dat(const char *outdir)
{
	char	path[512];
	FILE	*f;
	double	dtach_kb = NAN;
	int	k;

	if (!b6_done && b8_point.n == 0)
		return;
	snprintf(path, sizeof(path), "%s/sessions.dat", outdir);
	if ((f = fopen(path, "w")) == NULL)
		fatalx("%s: cannot write", path);
	fprintf(f, "# lodge-bench B6 (one connection) to %d sessions, B8 (PTY, "
	    "%d connections building) at %d; medians over %d and %d runs\n"
	    "# dtach at B8's level: B6's dtach PSS per session times the "
	    "sessions\n"
	    "# sessions  worker_pss_total_MiB  worker_pss_avg_kB  "
	    "create_p50_ms  create_total_s  dtach_pss_total_MiB  "
	    "get_sessions_p99_ms  posix_spawn_p50_ms\n",
	    level_data[B6_LEVELS - 1].sessions, B8_BUILDERS,
	    b8_point.sessions, b6_done ? level_data[0].n : 0, b8_point.n);
	for (k = 0; b6_done && k < B6_LEVELS; k++)
		fprintf(f, "%d %.2f %.1f %.3f %.3f %.2f %.3f %.3f\n",
		    level_data[k].sessions,
		    median(level_data[k].pss_total_mb, level_data[k].n),
		    median(level_data[k].pss_avg_kb, level_data[k].n),
		    median(level_data[k].create_p50, level_data[k].n),
		    median(level_data[k].create_total, level_data[k].n),
		    median(level_data[k].dtach_total_mb, level_data[k].n),
		    median(level_data[k].get_p99, level_data[k].n),
		    median(level_data[k].spawn_p50, level_data[k].n));
	if (b6_done) {
		k = B6_LEVELS - 1;
		dtach_kb = median(level_data[k].dtach_total_mb,
		    level_data[k].n) * 1024.0 / level_data[k].sessions;
	}
	if (b8_point.n > 0 && b8_point.sessions > (b6_done ?
	    level_data[B6_LEVELS - 1].sessions : 0))
		fprintf(f, "%d %.2f %.1f %.3f %.3f %.2f %.3f %.3f\n",
		    b8_point.sessions,
		    median(b8_point.pss_total_mb, b8_point.n),
		    median(b8_point.pss_avg_kb, b8_point.n),
		    median(b8_point.create_p50, b8_point.n),
		    median(b8_point.create_total, b8_point.n),
		    dtach_kb * b8_point.sessions / 1024.0,
		    median(b8_point.get_p99, b8_point.n),
		    median(b8_point.spawn_p50, b8_point.n));
	fclose(f);
}

/* Idle cost: the workers' wakeups and CPU over 2 s of doing nothing. */
static void
b6_idle(double *v, struct figure *fwake, struct figure *fidle)
{
	double	ns, sl, tns = 0, tsl = 0, t0, secs;
	int	k;

	t0 = now_ms();
	for (k = 0; k < nsessions; k++)
		if (proc_sched(sessions[k].worker, &v[2 * k], &v[2 * k + 1]) ==
		    -1)
			fatalx("B6: a worker is gone");
	usleep(2000000);
	for (k = 0; k < nsessions; k++) {
		if (proc_sched(sessions[k].worker, &ns, &sl) == -1)
			fatalx("B6: a worker is gone");
		tns += ns - v[2 * k];
		tsl += sl - v[2 * k + 1];
	}
	secs = (now_ms() - t0) / 1e3;
	fig_run(fwake, tsl / nsessions / secs, NAN);
	fig_run(fidle, tns / 1e9 / secs * 100, NAN);
}

void
bench_b6(void)
{
	const char	*body = "{\"args\":[\"cat\"],\"pty\":true}";
	const int	*lv = bench_quick ? levels_quick : levels_full;
	int		 max = lv[B6_LEVELS - 1], nget = bench_quick ? 30 : 100;
	struct samples	 all = { 0 }, bracket = { 0 }, spawn = { 0 };
	struct samples	 get = { 0 }, health = { 0 }, lspawn = { 0 };
	struct figure	*ftotal, *fc50, *fc99, *fg50, *fg99, *fdel;
	struct figure	*ffront, *ftmpl, *fwork, *fwake, *fidle;
	struct sess	*ns;
	pid_t		 front = bench_front_pid(), tmpl = bench_template_pid();
	double		 cf, ct, cw, f0, m0, *idle0;
	struct figure	*fpss[B6_LEVELS], *ftot[B6_LEVELS];
	struct smaps	 sm;
	struct http	 h;
	json_t		*j;
	char		 name[96], bname[96];
	double		 ms, dpss, drss, ddirty, sum, t0, tpss, tanon, tfile, tdirty;
	double		 trss;
	int		 r, i, k, lvl, got;

	snprintf(name, sizeof(name), "create %d PTY sessions (cat): total",
	    max);
	ftotal = fig_new("B6", name, "s", NULL, NULL, 0, 0);
	snprintf(name, sizeof(name), "create p50 (all %d)", max);
	fc50 = fig_new("B6", name, "ms", "posix_spawn+waitpid /bin/true p50",
	    "<=", 2.5, 0);
	snprintf(name, sizeof(name), "create p99 (all %d)", max);
	fc99 = fig_new("B6", name, "ms", "posix_spawn+waitpid /bin/true p99",
	    NULL, 0, 0);
	snprintf(name, sizeof(name), "GET /v1/sessions p50 at %d", max);
	fg50 = fig_new("B6", name, "ms", "GET /v1/health p50", NULL, 0, 0);
	snprintf(name, sizeof(name), "GET /v1/sessions p99 at %d", max);
	fg99 = fig_new("B6", name, "ms", "GET /v1/health p99", "<=", 20, 1);
	snprintf(bname, sizeof(bname), "dtach master PSS (%d sessions)",
	    B6_DTACH);
	for (k = 0; k < B6_LEVELS; k++) {
		snprintf(name, sizeof(name), "idle worker PSS, avg at %d "
		    "sessions", lv[k]);
		fpss[k] = fig_new("B6", name, "kB", bname, "<=", 2.0, 0);
	}
	for (k = 0; k < B6_LEVELS; k++) {
		snprintf(name, sizeof(name), "idle worker PSS, total at %d "
		    "sessions", lv[k]);
		ftot[k] = fig_new("B6", name, "MiB", NULL, NULL, 0, 0);
		level_data[k].sessions = lv[k];
	}
	snprintf(name, sizeof(name), "context: DELETE %d sessions "
	    "(16 connections)", max);
	fdel = fig_new("B6", name, "s", NULL, NULL, 0, 0);
	ffront = fig_new("B6", "context: front CPU per create", "us", NULL,
	    NULL, 0, 0);
	ftmpl = fig_new("B6", "context: template CPU per create", "us", NULL,
	    NULL, 0, 0);
	fwork = fig_new("B6", "context: worker CPU from fork to created", "us",
	    NULL, NULL, 0, 0);
	snprintf(name, sizeof(name), "context: idle worker wakeups at %d", max);
	fwake = fig_new("B6", name, "1/s", NULL, NULL, 0, 0);
	snprintf(name, sizeof(name), "context: idle CPU of all %d workers",
	    max);
	fidle = fig_new("B6", name, "%cpu", NULL, NULL, 0, 0);
	if ((idle0 = calloc((size_t)max * 2, sizeof(double))) == NULL)
		fatalx("out of memory");

	for (r = 0; bench_more_runs("B6", r, 110); r++) {
		samples_reset(&all);
		samples_reset(&spawn);
		if (floor_dtach_pss(bench_workdir, B6_DTACH, &dpss, &drss,
		    &ddirty) == -1) {
			if (r == 0)
				note("B6: dtach is not installed (apt-get install "
				    "dtach): no PSS floor");
			dpss = drss = ddirty = NAN;
		}
		progress("B6 run %d: dtach master PSS %.0f kB, RSS %.0f kB, "
		    "private dirty %.0f kB", r + 1, dpss, drss, ddirty);
		if (r == 0)
			note("B6: dtach master (%d sessions): PSS %.0f kB, RSS "
			    "%.0f kB, private dirty %.0f kB", B6_DTACH, dpss,
			    drss, ddirty);
		floor_spawn_true(&spawn, 300);
		if (http_open(&h) == -1)
			fatalx("cannot connect to lodged");
		sum = cf = ct = cw = 0;
		for (lvl = 0, i = 0; i < max; i++) {
			f0 = proc_cpu_ns(front);
			m0 = proc_cpu_ns(tmpl);
			ns = sess_create(&h, body, &ms);
			cf += proc_cpu_ns(front) - f0;
			ct += proc_cpu_ns(tmpl) - m0;
			cw += proc_cpu_ns(ns->worker);
			samples_add(&all, ms);
			samples_add(&bracket, ms);
			sum += ms;
			if ((i & 63) == 0)
				check_interrupt();
			if (i + 1 != lv[lvl])
				continue;
			/* A level: let the new workers settle, measure. */
			usleep(200000);
			tpss = tanon = tfile = tdirty = trss = 0;
			for (k = 0; k < nsessions; k++) {
				if (smaps_read(sessions[k].worker, &sm) == -1)
					fatalx("B6: worker %d of session %s is "
					    "gone", (int)sessions[k].worker,
					    sessions[k].id);
				tpss += sm.pss;
				tanon += sm.pss_anon;
				tfile += sm.pss_file;
				tdirty += sm.private_dirty;
				trss += sm.rss;
			}
			fig_run(fpss[lvl], tpss / nsessions, dpss);
			fig_run(ftot[lvl], tpss / 1024.0, NAN);
			samples_reset(&get);
			samples_reset(&health);
			for (k = 0; k < nget; k++) {
				t0 = now_ms();
				if (http_call(&h, "GET", "/v1/sessions", NULL)
				    == -1 || h.status != 200)
					fatalx("GET /v1/sessions failed");
				samples_add(&get, now_ms() - t0);
				if (k == 0) {
					j = json_loadb(h.body, h.body_len, 0,
					    NULL);
					got = (int)json_array_size(
					    json_object_get(j, "sessions"));
					json_decref(j);
					if (got != nsessions)
						fatalx("GET /v1/sessions: %d "
						    "sessions, want %d", got,
						    nsessions);
				}
				t0 = now_ms();
				if (http_call(&h, "GET", "/v1/health", NULL)
				    == -1 || h.status != 200)
					fatalx("GET /v1/health failed");
				samples_add(&health, now_ms() - t0);
			}
			level_data[lvl].pss_total_mb[r] = tpss / 1024.0;
			level_data[lvl].pss_avg_kb[r] = tpss / nsessions;
			level_data[lvl].create_p50[r] = samples_pct(&bracket,
			    50);
			level_data[lvl].create_total[r] = sum / 1e3;
			level_data[lvl].dtach_total_mb[r] = dpss * lv[lvl] /
			    1024.0;
			level_data[lvl].get_p99[r] = samples_pct(&get, 99);
			samples_reset(&lspawn);
			floor_spawn_true(&lspawn, 100);
			for (k = 0; k < (int)lspawn.n; k++)
				samples_add(&spawn, lspawn.v[k]);
			level_data[lvl].spawn_p50[r] = samples_pct(&lspawn, 50);
			level_data[lvl].n = r + 1;
			progress("B6 run %d at %d: worker PSS avg %.0f kB "
			    "(anon %.0f, file %.0f; private dirty %.0f; RSS "
			    "%.0f), total %.1f MiB; create p50 %.2f ms (this "
			    "bracket); GET /v1/sessions p50 %.2f p99 %.2f ms",
			    r + 1, lv[lvl], tpss / nsessions, tanon /
			    nsessions, tfile / nsessions, tdirty / nsessions,
			    trss / nsessions, tpss / 1024.0,
			    samples_pct(&bracket, 50), samples_pct(&get, 50),
			    samples_pct(&get, 99));
			if (lvl == B6_LEVELS - 1) {
				fig_run(fg50, samples_pct(&get, 50),
				    samples_pct(&health, 50));
				fig_run(fg99, samples_pct(&get, 99),
				    samples_pct(&health, 99));
				if (r == 0)
					note("B6 at %d sessions: worker PSS "
					    "avg %.0f kB = anon %.0f + file "
					    "%.0f; private dirty %.0f kB; RSS "
					    "%.0f kB", max, tpss / nsessions,
					    tanon / nsessions, tfile /
					    nsessions, tdirty / nsessions,
					    trss / nsessions);
			}
			if (lvl == B6_LEVELS - 1)
				b6_idle(idle0, fwake, fidle);
			samples_reset(&bracket);
			lvl++;
		}
		fig_run(ffront, cf / max / 1e3, NAN);
		fig_run(ftmpl, ct / max / 1e3, NAN);
		fig_run(fwork, cw / max / 1e3, NAN);
		/* The floor again, now with 1,000 sessions on the machine. */
		floor_spawn_true(&spawn, 300);
		fig_run(ftotal, sum / 1e3, NAN);
		fig_run(fc50, samples_pct(&all, 50), samples_pct(&spawn, 50));
		fig_run(fc99, samples_pct(&all, 99), samples_pct(&spawn, 99));
		http_close(&h);
		fig_run(fdel, sess_delete_all(), NAN);
		progress("B6 run %d: create total %.2f s, p50 %.2f ms (spawn "
		    "p50 %.2f ms); delete %.2f s", r + 1, sum / 1e3,
		    samples_pct(&all, 50), samples_pct(&spawn, 50),
		    fdel->v[r]);
	}
	b6_done = 1;
	free(idle0);
	samples_free(&all);
	samples_free(&bracket);
	samples_free(&spawn);
	samples_free(&get);
	samples_free(&health);
	samples_free(&lspawn);
}

/*
 * B8, 10,000 sessions with nothing getting slower.  For each kind (pipe
 * `cat`, PTY `cat`), on a fresh lodged of its own, sessions are built up to
 * 0, 1,000 and 10,000 (100 and 1,000 with --quick), B8_BUILDERS
 * connections creating at once; at each level, one call at a time: exec,
 * attach to live (a probe session made first, the same at every level),
 * create and DELETE (B8_EXTRA sessions made on top of the level, then
 * deleted one by one), GET /v1/sessions, the front's RSS and the
 * template's.
 *
 * The floor of exec, attach and create is the same call on a second
 * lodged that holds only its own probe, made in turns with the first's:
 * what the machine does at that moment (a stall, the memory the level's
 * sessions take from it) falls on both, and the ratio is what the
 * sessions cost lodge itself.  The same calls against the level-0 figures
 * of the same run are printed as context.  The other figures' floor is the
 * same figure at 0 sessions.  As root, the kernel limits the run needs
 * (kernel.pty.max, kernel.pid_max) are raised for it and put back at exit,
 * however the bench ends.
 */

static const int	b8_full[B8_LEVELS] = { 0, 1000, 10000 };
static const int	b8_quick[B8_LEVELS] = { 0, 100, 1000 };

static struct {
	const char	*path;
	long		 saved;		/* -1: not changed */
} b8_sysctl[] = {
	{ "/proc/sys/kernel/pty/max", -1 },
	{ "/proc/sys/kernel/pid_max", -1 },
};

/* The most sessions B8 holds at once, for lodged's --max-sessions. */
int
bench_b8_sessions(void)
{
	return ((bench_quick ? b8_quick : b8_full)[B8_LEVELS - 1] + B8_EXTRA +
	    1);
}

static long
sysctl_read(const char *path)
{
	char	buf[64];
	FILE	*f;
	long	v = -1;

	if ((f = fopen(path, "re")) == NULL)
		return (-1);
	if (fgets(buf, sizeof(buf), f) != NULL)
		v = strtol(buf, NULL, 10);
	fclose(f);
	return (v);
}

/* Write line (with its newline) to a file of /proc or /sys; 0 or -1. */
static int
knob_write(const char *path, const char *line)
{
	FILE	*f;
	int	 rc;

	if ((f = fopen(path, "we")) == NULL)
		return (-1);
	rc = fputs(line, f) < 0;
	if (fclose(f) != 0)
		rc = 1;
	return (rc ? -1 : 0);
}

static int
sysctl_write(const char *path, long v)
{
	char	buf[32];

	snprintf(buf, sizeof(buf), "%ld\n", v);
	return (knob_write(path, buf));
}

/* Put back what b8_raise changed: at the end, and at exit on failure. */
static void
b8_restore(void)
{
	size_t	i;

	for (i = 0; i < sizeof(b8_sysctl) / sizeof(*b8_sysctl); i++) {
		if (b8_sysctl[i].saved == -1)
			continue;
		if (sysctl_write(b8_sysctl[i].path, b8_sysctl[i].saved) == -1)
			fprintf(stderr, "lodge-bench: cannot restore %s to "
			    "%ld\n", b8_sysctl[i].path, b8_sysctl[i].saved);
		else
			fprintf(stderr, "lodge-bench: %s restored to %ld\n",
			    b8_sysctl[i].path, b8_sysctl[i].saved);
		b8_sysctl[i].saved = -1;
	}
}

/*
 * DAMON's sampling walks the reverse map of each page it checks; with
 * 10,000 sessions a page of libc is mapped 20,000 times, and those walks
 * stall every process start on the machine, lodge's or not (the bench's
 * own posix_spawn up to 330 ms).  As root, B8 turns its kdamonds off for
 * the run and back on at exit, unless --keep-damon.
 */
#define B8_KDAMONDS	"/sys/kernel/mm/damon/admin/kdamonds"
#define B8_MAXDAMONS	8

static int	b8_damon_off[B8_MAXDAMONS];	/* turned off by B8 */

static void
b8_damon_path(char *buf, size_t len, int i)
{
	snprintf(buf, len, "%s/%d/state", B8_KDAMONDS, i);
}

static void
b8_damon_restore(void)
{
	char	path[128];
	int	i;

	for (i = 0; i < B8_MAXDAMONS; i++) {
		if (!b8_damon_off[i])
			continue;
		b8_damon_path(path, sizeof(path), i);
		if (knob_write(path, "on\n") == -1)
			fprintf(stderr, "lodge-bench: cannot turn %s back on\n",
			    path);
		else
			fprintf(stderr, "lodge-bench: %s on again\n", path);
		b8_damon_off[i] = 0;
	}
}

static void
b8_damon_pause(void)
{
	static int	registered;
	char		path[128], state[16];
	FILE		*f;
	int		 i, on;

	for (i = 0; i < B8_MAXDAMONS; i++) {
		b8_damon_path(path, sizeof(path), i);
		if ((f = fopen(path, "re")) == NULL)
			break;
		on = fgets(state, sizeof(state), f) != NULL &&
		    strncmp(state, "on", 2) == 0;
		fclose(f);
		if (!on)
			continue;
		if (bench_keep_damon || geteuid() != 0) {
			note("B8: DAMON's kdamond %d is on and stays on (%s): its "
			    "reverse-map walks stall process starts at 10,000 "
			    "sessions", i, bench_keep_damon ? "--keep-damon" :
			    "not root");
			continue;
		}
		if (!registered++)
			atexit(b8_damon_restore);
		if (knob_write(path, "off\n") == -1) {
			note("B8: cannot turn DAMON's kdamond %d off", i);
			continue;
		}
		b8_damon_off[i] = 1;
		note("B8: DAMON's kdamond %d turned off for the run, on again at "
		    "its end (--keep-damon leaves it)", i);
	}
}

/* sysctl i to at least want, as root; a note if it stays short. */
static void
b8_raise(size_t i, long want)
{
	static int	registered;
	const char	*path = b8_sysctl[i].path;
	long		 cur = sysctl_read(path);

	if (cur == -1 || cur >= want)
		return;
	if (!registered++)
		atexit(b8_restore);
	if (geteuid() != 0 || sysctl_write(path, want) == -1) {
		note("B8: %s is %ld, under the %ld the run needs, and cannot be "
		    "raised (not root?): creates past it fail", path, cur,
		    want);
		return;
	}
	b8_sysctl[i].saved = cur;
	note("B8: %s raised from %ld to %ld for the run", path, cur, want);
}

/* The tasks on the machine now, from /proc/loadavg's "running/total". */
static long
b8_tasks(void)
{
	char	buf[128], *p;
	FILE	*f;
	long	n = 0;

	if ((f = fopen("/proc/loadavg", "re")) == NULL)
		return (0);
	if (fgets(buf, sizeof(buf), f) != NULL && (p = strchr(buf, '/')) != NULL)
		n = strtol(p + 1, NULL, 10);
	fclose(f);
	return (n);
}

static void
b8_pct(struct samples *s, struct figure *p50, struct figure *p99,
    struct samples *zero)
{
	fig_run(p50, samples_pct(s, 50), zero != NULL ?
	    samples_pct(zero, 50) : NAN);
	fig_run(p99, samples_pct(s, 99), zero != NULL ?
	    samples_pct(zero, 99) : NAN);
}

/* DELETE sessions[k] on h: the call's time in ms. */
static double
b8_delete(struct http *h, int k)
{
	char	path[128];
	double	t0 = now_ms(), ms;

	snprintf(path, sizeof(path), "/v1/sessions/%s", sessions[k].id);
	if (http_call(h, "DELETE", path, NULL) == -1 || h->status != 204)
		fatalx("B8: DELETE %s: %d", sessions[k].id, h->status);
	ms = now_ms() - t0;
	pids_untrack(sessions[k].worker);
	sessions[k] = sessions[--nsessions];
	return (ms);
}

/* The figures of one kind at one level above 0. */
struct b8_figs {
	struct figure	*exec50, *exec99, *att50, *att99, *cre50, *cre99;
	struct figure	*get50, *get99, *del50, *del99, *rss, *tmpl;
	struct figure	*spawn50, *spawn99;	/* the machine's, context */
	/* The same calls against the level's own 0-session figures. */
	struct figure	*zexec50, *zexec99, *zatt50, *zatt99, *zcre50, *zcre99;
};

/* What is measured at one level. */
struct b8_level {
	struct samples	 exec, att, cre, get, del;
	/* The same calls on the empty lodged beside it, in turns with them. */
	struct samples	 fexec, fatt, fcre, fdel;
	struct samples	 spawn;		/* the bench's own, beside each exec */
	double		 front_kb, tmpl_kb;
	double		 slab_kb, stack_kb, ptab_kb;	/* the kernel's */
	double		 worker_pss, child_pss;	/* kB, a sample's average */
	long		 lists_built;	/* of the GETs, not from the cache */
	double		 get1_ms, get1_front_ms;	/* the first GET; lodged's share */
	long		 get1_faults;	/* the bench's own, for its reply */
	char		 slow[2000];	/* the slowest 1 % of each phase */
	double		 first_ms;	/* its first exec, CLOCK_MONOTONIC */
};

/*
 * The slowest 1 % of a phase's calls (ms, in the order made) and when
 * each started (at, ms after the level's first call), appended to buf:
 * what they waited on shows in when they came (every 100 ms, every 5 s,
 * together).
 */
static void
b8_slowest(char *buf, size_t len, const char *what, const struct samples *ms,
    const struct samples *at)
{
	size_t	 k, i, j, best, n = ms->n, want = n / 100 ? n / 100 : 1;
	char	*used;
	size_t	 off = strlen(buf);

	if (n == 0 || (used = calloc(n, 1)) == NULL)
		return;
	off += (size_t)snprintf(buf + off, off < len ? len - off : 0,
	    "%s%s:", off > 0 ? "; " : "", what);
	for (k = 0; k < want; k++) {
		best = n;
		for (i = 0; i < n; i++)
			if (!used[i] && (best == n || ms->v[i] > ms->v[best]))
				best = i;
		used[best] = 1;
		j = (size_t)snprintf(buf + (off < len ? off : len), off < len ?
		    len - off : 0, " %.2f@%.0f", ms->v[best], at->v[best]);
		off += j;
	}
	free(used);
}

/* A value of GET /metrics, its line's head given whole; NAN if absent. */
static double
b8_metric(struct http *h, const char *head)
{
	const char	*p;

	if (http_call(h, "GET", "/metrics", NULL) == -1 || h->status != 200 ||
	    (p = strstr(h->body, head)) == NULL)
		return (NAN);
	return (strtod(p + strlen(head), NULL));
}

/* lodged_session_lists_built_total; -1 if absent. */
static long
b8_lists_built(struct http *h)
{
	double	v = b8_metric(h, "\nlodged_session_lists_built_total ");

	return (isnan(v) ? -1 : (long)v);
}

/* The front's own time for the GETs of the list so far, ms. */
static double
b8_list_front_ms(struct http *h)
{
	return (1e3 * b8_metric(h, "\nlodged_http_request_duration_seconds_sum"
	    "{route=\"sessions_list\"} "));
}

static long
self_minor_faults(void)
{
	struct rusage	ru;

	return (getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : -1);
}

static double
meminfo_kb(const char *field)
{
	char	line[256];
	FILE	*f;
	size_t	n = strlen(field);
	double	v = NAN;

	if ((f = fopen("/proc/meminfo", "re")) == NULL)
		return (NAN);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			v = strtod(line + n + 1, NULL);
			break;
		}
	fclose(f);
	return (v);
}

/* The kernel's memory, and the PSS of up to 200 workers and children. */
static void
b8_memory(struct b8_level *m)
{
	struct smaps	sm;
	double		w = 0, c = 0;
	int		k, n = 0, step = nsessions / 200 + 1;

	m->slab_kb = meminfo_kb("Slab");
	m->stack_kb = meminfo_kb("KernelStack");
	m->ptab_kb = meminfo_kb("PageTables");
	for (k = 0; k < nsessions; k += step) {
		if (smaps_read(sessions[k].worker, &sm) == -1)
			continue;
		w += sm.pss;
		if (smaps_read(sessions[k].child, &sm) == -1)
			continue;
		c += sm.pss;
		n++;
	}
	m->worker_pss = n > 0 ? w / n : NAN;
	m->child_pss = n > 0 ? c / n : NAN;
}

static void
b8_figs_new(struct b8_figs *f, const char *kind, int n, int last)
{
	char	name[96];

#define B8_FIG(field, what, base, unit, op, target, abs) do {		\
	snprintf(name, sizeof(name), "%s at %d: %s", kind, n, what);	\
	f->field = fig_new("B8", name, unit, base, last ? op : NULL,	\
	    target, abs);						\
} while (0)
#define B8_FLOOR	"an empty lodged's, in turns"
#define B8_ZERO		"the same at 0 sessions"
	B8_FIG(exec50, "exec p50", B8_FLOOR, "ms", "<=", 1.1, 0);
	B8_FIG(exec99, "exec p99", B8_FLOOR, "ms", "<=", 1.1, 0);
	B8_FIG(att50, "attach to live p50", B8_FLOOR, "ms", "<=", 1.1, 0);
	B8_FIG(att99, "attach to live p99", B8_FLOOR, "ms", "<=", 1.1, 0);
	B8_FIG(cre50, "create p50", B8_FLOOR, "ms", "<=", 1.1, 0);
	B8_FIG(cre99, "create p99", B8_FLOOR, "ms", "<=", 1.1, 0);
	B8_FIG(zexec50, "context: exec p50", B8_ZERO, "ms", NULL, 0, 0);
	B8_FIG(zexec99, "context: exec p99", B8_ZERO, "ms", NULL, 0, 0);
	B8_FIG(zatt50, "context: attach p50", B8_ZERO, "ms", NULL, 0, 0);
	B8_FIG(zatt99, "context: attach p99", B8_ZERO, "ms", NULL, 0, 0);
	B8_FIG(zcre50, "context: create p50", B8_ZERO, "ms", NULL, 0, 0);
	B8_FIG(zcre99, "context: create p99", B8_ZERO, "ms", NULL, 0, 0);
	B8_FIG(get50, "GET /v1/sessions p50", B8_ZERO, "ms", NULL, 0, 0);
	B8_FIG(get99, "GET /v1/sessions p99", B8_ZERO, "ms", "<=", 10, 1);
	B8_FIG(del50, "DELETE p50", B8_ZERO, "ms", "<=", 2, 1);
	B8_FIG(del99, "DELETE p99", B8_ZERO, "ms", NULL, 0, 0);
	B8_FIG(tmpl, "template RSS", B8_ZERO, "kB", NULL, 0, 0);
	B8_FIG(spawn50, "context: the bench's posix_spawn p50", B8_ZERO, "ms",
	    NULL, 0, 0);
	B8_FIG(spawn99, "context: the bench's posix_spawn p99", B8_ZERO, "ms",
	    NULL, 0, 0);
#undef B8_ZERO
#undef B8_FLOOR
#undef B8_FIG
	snprintf(name, sizeof(name), "%s at %d: front RSS growth per "
	    "session", kind, n);
	f->rss = fig_new("B8", name, "kB", NULL, last ? "<=" : NULL, 4, 1);
}

/*
 * Call k of a phase goes to both lodgeds, the one under test first when k
 * is even and the empty one first when it is odd: a stall of the machine
 * falls on either as often.  b8_turn gives which one the i-th call (0 or
 * 1) of turn k goes to, and makes that one current.
 */
static int
b8_turn(int k, int i)
{
	int	floor = (k & 1) ^ i;

	if (floor)
		bench_side_swap();
	return (floor);
}

/* After the call on floor (b8_turn's): the bench's own lodged again. */
static void
b8_turn_end(int floor)
{
	if (floor)
		bench_side_swap();
}

static void
b8_exec(struct http *h, struct samples *s)
{
	double	t0 = now_ms();

	if (http_call(h, "POST", "/v1/exec", "{\"args\":[\"/bin/true\"]}")
	    == -1 || h->status != 200)
		fatalx("B8: POST /v1/exec: %d", h->status);
	samples_add(s, now_ms() - t0);
}

/*
 * Measure everything at the current level into m.  hf is a connection to
 * the empty lodged, whose sessions[0] is its own probe: exec, attach,
 * create and DELETE go to both in turns.
 */
static void
b8_measure(struct http *h, struct http *hf, const char *body, int level,
    struct b8_level *m)
{
	struct ws	 w;
	json_t		*j;
	struct samples	 at = { 0 }, fat = { 0 };	/* starts: its, the floor's */
	double		 t0, ms, tl;
	/* The middle level is context only: a third of the calls. */
	int		 top = (bench_quick ? b8_quick : b8_full)[B8_LEVELS - 1];
	int		 part = level > 0 && level < top ? 3 : 1;
	int		 k, i, fl, got, nexec = (bench_quick ? 100 : B8_EXECS) /
			    part;
	int		 natt = (bench_quick ? 200 : B8_ATTACHES) / part;
	int		 ncre = B8_EXTRA / part;
	int		 nget = level >= 10000 ? 50 : 100;
	int		 first, ffirst;
	long		 built, faults;
	double		 front;

	samples_reset(&m->exec);
	samples_reset(&m->att);
	samples_reset(&m->cre);
	samples_reset(&m->get);
	samples_reset(&m->del);
	samples_reset(&m->spawn);
	samples_reset(&m->fexec);
	samples_reset(&m->fatt);
	samples_reset(&m->fcre);
	samples_reset(&m->fdel);
	usleep(200000);		/* the new workers settle */
	m->front_kb = (double)proc_field_kb(bench_front_pid(), "status",
	    "VmRSS");
	m->tmpl_kb = (double)proc_field_kb(bench_template_pid(), "status",
	    "VmRSS");
	b8_memory(m);
	m->slow[0] = '\0';
	tl = m->first_ms = now_ms();
	for (k = 0; k < nexec; k++) {
		for (i = 0; i < 2; i++) {
			fl = b8_turn(k, i);
			t0 = now_ms();
			b8_exec(fl ? hf : h, fl ? &m->fexec : &m->exec);
			samples_add(fl ? &fat : &at, t0 - tl);
			b8_turn_end(fl);
		}
		/*
		 * What a fork and exec cost the machine at this level, by a
		 * process that is not lodge's, between lodge's execs: the
		 * kernel's share of a slow exec shows here too.
		 */
		floor_spawn_true(&m->spawn, 1);
	}
	b8_slowest(m->slow, sizeof(m->slow), "exec", &m->exec, &at);
	b8_slowest(m->slow, sizeof(m->slow), "the empty lodged's exec",
	    &m->fexec, &fat);
	b8_slowest(m->slow, sizeof(m->slow), "the bench's spawn", &m->spawn,
	    &at);
	samples_reset(&at);
	samples_reset(&fat);
	for (k = 0; k < natt; k++)
		for (i = 0; i < 2; i++) {
			/* Each lodged's probe is its sessions[0]. */
			fl = b8_turn(k, i);
			t0 = now_ms();
			(void)sess_attach(&w, &sessions[0], NULL);
			samples_add(fl ? &m->fatt : &m->att, now_ms() - t0);
			if (!fl)
				samples_add(&at, t0 - tl);
			ws_close(&w);
			b8_turn_end(fl);
		}
	b8_slowest(m->slow, sizeof(m->slow), "attach", &m->att, &at);
	samples_reset(&at);
	built = b8_lists_built(h);
	front = b8_list_front_ms(h);
	/*
	 * Room for the list (about 300 bytes a session) before the GETs,
	 * as a client has once it has listed: growing the buffer at the
	 * first GET of a level was 729 page faults of the bench's own at
	 * 10,000 sessions, 10 ms of that call's 13 on a VM.
	 */
	http_reserve(h, (size_t)nsessions * 512 + 65536);
	for (k = 0; k < nget; k++) {
		faults = self_minor_faults();
		t0 = now_ms();
		if (http_call(h, "GET", "/v1/sessions", NULL) == -1 ||
		    h->status != 200)
			fatalx("B8: GET /v1/sessions: %d", h->status);
		samples_add(&m->get, now_ms() - t0);
		samples_add(&at, t0 - tl);
		if (k == 0) {
			/*
			 * The first GET of a level builds the list: what of
			 * its time was the front's, and the page faults the
			 * bench took for the reply (none when its buffer
			 * was ready).
			 */
			m->get1_faults = self_minor_faults() - faults;
			m->get1_ms = now_ms() - t0;
			j = json_loadb(h->body, h->body_len, 0, NULL);
			got = (int)json_array_size(json_object_get(j,
			    "sessions"));
			json_decref(j);
			if (got != nsessions)
				fatalx("B8: GET /v1/sessions: %d sessions, "
				    "want %d", got, nsessions);
			m->get1_front_ms = b8_list_front_ms(h) - front;
		}
	}
	m->lists_built = built == -1 ? -1 : b8_lists_built(h) - built;
	b8_slowest(m->slow, sizeof(m->slow), "GET", &m->get, &at);
	samples_reset(&at);
	first = nsessions;
	bench_side_swap();
	ffirst = nsessions;
	bench_side_swap();
	for (k = 0; k < ncre; k++)
		for (i = 0; i < 2; i++) {
			fl = b8_turn(k, i);
			t0 = now_ms();
			(void)sess_create(fl ? hf : h, body, &ms);
			samples_add(fl ? &m->fcre : &m->cre, ms);
			samples_add(fl ? &fat : &at, t0 - tl);
			b8_turn_end(fl);
		}
	b8_slowest(m->slow, sizeof(m->slow), "create", &m->cre, &at);
	b8_slowest(m->slow, sizeof(m->slow), "the empty lodged's create",
	    &m->fcre, &fat);
	samples_reset(&at);
	for (k = 0; k < ncre; k++)
		for (i = 0; i < 2; i++) {
			fl = b8_turn(k, i);
			if (nsessions > (fl ? ffirst : first)) {
				t0 = now_ms();
				samples_add(fl ? &m->fdel : &m->del,
				    b8_delete(fl ? hf : h, nsessions - 1));
				if (!fl)
					samples_add(&at, t0 - tl);
			}
			b8_turn_end(fl);
		}
	b8_slowest(m->slow, sizeof(m->slow), "DELETE", &m->del, &at);
	samples_free(&at);
	samples_free(&fat);
	check_interrupt();
}

static int
body_is_pty(const char *body)
{
	return (strstr(body, "\"pty\":true") != NULL);
}

static void
b8_kind(int r, const char *kind, const char *body, struct b8_figs *figs,
    struct figure *ftotal)
{
	const int	*lv = bench_quick ? b8_quick : b8_full;
	struct b8_level	 m[B8_LEVELS];
	struct sess	*probe;
	struct http	 h, hf;
	double		 build = 0;
	int		 k, n;

	memset(m, 0, sizeof(m));
	/* Its own lodged: the front's RSS growth is this kind's alone. */
	bench_lodged_restart();
	if (http_open(&h) == -1)
		fatalx("cannot connect to lodged");
	probe = sess_create(&h, body, NULL);
	if (probe != &sessions[0])
		fatalx("B8: sessions left from an earlier benchmark");
	/* The floor: an empty lodged of its own, with a probe as well. */
	bench_side_start();
	bench_side_swap();
	if (http_open(&hf) == -1)
		fatalx("cannot connect to the second lodged");
	(void)sess_create(&hf, body, NULL);
	bench_side_swap();
	for (k = 0; k < B8_LEVELS; k++) {
		/* sessions[0] is the probe; the level counts the others. */
		if ((n = lv[k] - (nsessions - 1)) > 0) {
			build += sess_create_many(body, n, B8_BUILDERS);
			/*
			 * The build may outlast lodged's --idle-timeout (120
			 * s) on a loaded machine, which closes an idle
			 * connection: measure on new ones.
			 */
			http_close(&h);
			if (http_open(&h) == -1)
				fatalx("cannot connect to lodged");
			http_close(&hf);
			bench_side_swap();
			if (http_open(&hf) == -1)
				fatalx("cannot connect to the second lodged");
			bench_side_swap();
		}
		b8_measure(&h, &hf, body, lv[k], &m[k]);
		progress("B8 run %d, %s at %d: exec p50 %.3f ms, attach p50 "
		    "%.3f, create p50 %.3f p99 %.3f, GET p50 %.2f p99 %.2f "
		    "(%ld of %zu built, the rest cached), DELETE p50 %.2f p99 "
		    "%.2f; front RSS %.0f kB, template %.0f kB", r + 1, kind,
		    lv[k], samples_pct(&m[k].exec, 50),
		    samples_pct(&m[k].att, 50), samples_pct(&m[k].cre, 50),
		    samples_pct(&m[k].cre, 99), samples_pct(&m[k].get, 50),
		    samples_pct(&m[k].get, 99), m[k].lists_built, m[k].get.n,
		    samples_pct(&m[k].del, 50),
		    samples_pct(&m[k].del, 99), m[k].front_kb, m[k].tmpl_kb);
	}
	/* At 0 both lodgeds are empty: how equal a floor the second is. */
	note("B8 run %d, %s at 0: the bench's lodged against the empty one "
	    "beside it: exec p50 %.2f p99 %.2f, attach p50 %.2f p99 %.2f, "
	    "create p50 %.2f p99 %.2f", r + 1, kind,
	    samples_pct(&m[0].exec, 50) / samples_pct(&m[0].fexec, 50),
	    samples_pct(&m[0].exec, 99) / samples_pct(&m[0].fexec, 99),
	    samples_pct(&m[0].att, 50) / samples_pct(&m[0].fatt, 50),
	    samples_pct(&m[0].att, 99) / samples_pct(&m[0].fatt, 99),
	    samples_pct(&m[0].cre, 50) / samples_pct(&m[0].fcre, 50),
	    samples_pct(&m[0].cre, 99) / samples_pct(&m[0].fcre, 99));
	for (k = 1; k < B8_LEVELS; k++) {
		struct b8_figs	*f = &figs[k - 1];

		b8_pct(&m[k].exec, f->exec50, f->exec99, &m[k].fexec);
		b8_pct(&m[k].att, f->att50, f->att99, &m[k].fatt);
		b8_pct(&m[k].cre, f->cre50, f->cre99, &m[k].fcre);
		b8_pct(&m[k].exec, f->zexec50, f->zexec99, &m[0].exec);
		b8_pct(&m[k].att, f->zatt50, f->zatt99, &m[0].att);
		b8_pct(&m[k].cre, f->zcre50, f->zcre99, &m[0].cre);
		b8_pct(&m[k].get, f->get50, f->get99, &m[0].get);
		b8_pct(&m[k].del, f->del50, f->del99, &m[0].del);
		b8_pct(&m[k].spawn, f->spawn50, f->spawn99, &m[0].spawn);
		fig_run(f->rss, (m[k].front_kb - m[0].front_kb) / lv[k], NAN);
		fig_run(f->tmpl, m[k].tmpl_kb, m[0].tmpl_kb);
	}
	k = B8_LEVELS - 1;
	if (body_is_pty(body) && r < BENCH_MAXRUNS) {
		b8_point.sessions = lv[k];
		b8_point.pss_avg_kb[r] = m[k].worker_pss;
		b8_point.pss_total_mb[r] = m[k].worker_pss * lv[k] / 1024.0;
		b8_point.create_p50[r] = samples_pct(&m[k].cre, 50);
		b8_point.create_total[r] = build;
		b8_point.get_p99[r] = samples_pct(&m[k].get, 99);
		b8_point.spawn_p50[r] = samples_pct(&m[k].spawn, 50);
		b8_point.n = r + 1;
	}
	if (r == 0)
		note("B8 %s at %d, per session: front RSS %.2f kB, worker PSS "
		    "%.0f kB, its cat's PSS %.0f kB; kernel slab %.1f kB, "
		    "kernel stacks %.1f kB, page tables %.1f kB (machine-wide "
		    "growth over 0 sessions)", kind, lv[k], (m[k].front_kb -
		    m[0].front_kb) / lv[k], m[k].worker_pss, m[k].child_pss,
		    (m[k].slab_kb - m[0].slab_kb) / lv[k], (m[k].stack_kb -
		    m[0].stack_kb) / lv[k], (m[k].ptab_kb - m[0].ptab_kb) /
		    lv[k]);
	if (r == 0)
		for (n = 0; n < B8_LEVELS; n += B8_LEVELS - 1)
			note("B8 %s at %d, the slowest 1 %% of each phase, "
			    "ms@start (ms after the level's first exec, "
			    "CLOCK_MONOTONIC %.3f s): %s", kind, lv[n],
			    m[n].first_ms / 1e3, m[n].slow);
	if (r == 0)
		note("B8 %s at %d: of %zu GET /v1/sessions, %ld built the list, "
		    "the others were sent from its cache; the first took "
		    "%.2f ms, %.2f ms of it in lodged (its histogram), and "
		    "the bench %ld page faults of its own for the reply",
		    kind, lv[k], m[k].get.n, m[k].lists_built,
		    m[k].get1_ms, m[k].get1_front_ms, m[k].get1_faults);
	/* Creating the sessions of the last level, B8_BUILDERS at once. */
	fig_run(ftotal, build, NAN);
	http_close(&h);
	http_close(&hf);
	bench_side_stop();
	progress("B8 run %d, %s: built %d sessions in %.1f s (%d connections); "
	    "deleting them", r + 1, kind, lv[B8_LEVELS - 1], build,
	    B8_BUILDERS);
	n = nsessions;
	progress("B8 run %d, %s: deleted %d sessions in %.1f s (16 "
	    "connections)", r + 1, kind, n, sess_delete_all());
	for (k = 0; k < B8_LEVELS; k++) {
		samples_free(&m[k].exec);
		samples_free(&m[k].att);
		samples_free(&m[k].cre);
		samples_free(&m[k].get);
		samples_free(&m[k].del);
		samples_free(&m[k].spawn);
		samples_free(&m[k].fexec);
		samples_free(&m[k].fatt);
		samples_free(&m[k].fcre);
		samples_free(&m[k].fdel);
	}
}

void
bench_b8(void)
{
	static const struct {
		const char	*kind, *body;
	} kinds[] = {
		{ "pipe", "{\"args\":[\"cat\"]}" },
		{ "PTY", "{\"args\":[\"cat\"],\"pty\":true}" },
	};
	const int	*lv = bench_quick ? b8_quick : b8_full;
	struct b8_figs	 figs[2][B8_LEVELS - 1];
	struct figure	*ftotal[2];
	char		 name[96];
	double		 t0;
	int		 r, k, i;

	/* Every session is a worker and its cat: two pids, one PTY. */
	b8_raise(0, sysctl_read("/proc/sys/kernel/pty/nr") +
	    sysctl_read("/proc/sys/kernel/pty/reserve") + bench_b8_sessions() +
	    1024);
	b8_raise(1, b8_tasks() + 2L * bench_b8_sessions() + 4096);
	b8_damon_pause();
	for (k = 0; k < 2; k++) {
		for (i = 1; i < B8_LEVELS; i++)
			b8_figs_new(&figs[k][i - 1], kinds[k].kind, lv[i],
			    i == B8_LEVELS - 1);
		snprintf(name, sizeof(name), "%s: create %d sessions, total",
		    kinds[k].kind, lv[B8_LEVELS - 1]);
		ftotal[k] = fig_new("B8", name, "s", NULL, k == 1 ? "<=" :
		    NULL, 15, 1);
	}
	for (r = 0; bench_more_runs("B8", r, 170); r++) {
		t0 = now_ms();
		for (k = 0; k < 2; k++)
			b8_kind(r, kinds[k].kind, kinds[k].body, figs[k],
			    ftotal[k]);
		progress("B8 run %d took %.1f s", r + 1, (now_ms() - t0) /
		    1e3);
		if (r == 0)
			note("B8: its first run, both kinds to %d sessions, "
			    "took %.1f s", lv[B8_LEVELS - 1], (now_ms() - t0) /
			    1e3);
	}
	b8_restore();
	b8_damon_restore();
}
