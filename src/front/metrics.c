/*
 * metrics.c: GET /metrics, the front's counters in Prometheus' text format.
 *
 * Counters are plain integers bumped where things happen; the sessions'
 * gauges are sums the registry keeps as sessions change, and the process's
 * are read from /proc/self when scraped.  A scrape walks no session and no
 * descriptor table: with 10,000 sessions it stays a few lines of text.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "front.h"
#include "metrics.h"

/* Upper bounds of the latency buckets, in microseconds. */
static const uint64_t	 bucket_us[] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
	250000, 500000, 1000000, 2500000, 5000000, 10000000,
};
#define NBUCKETS	(sizeof(bucket_us) / sizeof(bucket_us[0]))
#define NROUTES		ROUTE_COUNT

static const char *const route_name[NROUTES] = {
	[ROUTE_NONE] = "none",
	[ROUTE_BAD_METHOD] = "bad_method",
	[ROUTE_HEALTH] = "health",
	[ROUTE_EXEC] = "exec",
	[ROUTE_EXEC_STREAM] = "exec_stream",
	[ROUTE_SESSIONS_LIST] = "sessions_list",
	[ROUTE_SESSIONS_CREATE] = "sessions_create",
	[ROUTE_SESSION_GET] = "session_get",
	[ROUTE_SESSION_DELETE] = "session_delete",
	[ROUTE_SESSION_SIGNAL] = "session_signal",
	[ROUTE_SESSION_INPUT] = "session_input",
	[ROUTE_SESSION_RESIZE] = "session_resize",
	[ROUTE_SESSION_LOG] = "session_log",
	[ROUTE_SESSION_ATTACH] = "session_attach",
	[ROUTE_SESSION_WAIT] = "session_wait",
	[ROUTE_METRICS] = "metrics",
};

/* The status classes a reply is counted under. */
static const int	 statuses[] = {
	101, 200, 201, 204, 400, 401, 403, 404, 405, 408, 409, 411, 413,
	415, 422, 429, 431, 500, 503,
};
#define NSTATUSES	(sizeof(statuses) / sizeof(statuses[0]))

/* Each counter's name and help, in one place. */
static const struct {
	const char	*name;
	const char	*help;
} counters[METRIC_NCOUNTERS] = {
	[M_EXECS_STARTED] = { "lodged_execs_started_total",
	    "POST /v1/exec calls handed to the template" },
	[M_EXEC_STREAMS_STARTED] = { "lodged_exec_streams_started_total",
	    "exec streams handed to a worker" },
	[M_SESSIONS_CREATED] = { "lodged_sessions_created_total",
	    "sessions created" },
	[M_SESSIONS_REDISCOVERED] = { "lodged_sessions_rediscovered_total",
	    "sessions found again from the runtime directory at start" },
	[M_ATTACHES] = { "lodged_attaches_total",
	    "attach connections handed to a worker" },
	[M_LOGS] = { "lodged_session_logs_total",
	    "log requests handed to a worker" },
	[M_CONNECTIONS] = { "lodged_connections_accepted_total",
	    "connections accepted" },
	[M_LISTS_BUILT] = { "lodged_session_lists_built_total",
	    "GET /v1/sessions replies built, not sent from the cached list" },
};

static const char *const limit_name[METRIC_NLIMITS] = {
	[L_MAX_SESSIONS] = "max_sessions",
	[L_MAX_BODY] = "max_body",
	[L_MAX_HEAD] = "max_head",
	[L_REQUEST_TIMEOUT] = "request_timeout",
	[L_WRITE_TIMEOUT] = "write_timeout",
	[L_MAX_CONNECTIONS] = "max_connections",
	[L_MAX_PEER_CONNECTIONS] = "max_peer_connections",
	[L_MAX_OUTPUT] = "max_output",
	[L_MAX_CLIENTS] = "max_clients",
	[L_DESCRIPTORS] = "descriptors",
};

static struct {
	uint64_t	 counter[METRIC_NCOUNTERS];
	uint64_t	 limit[METRIC_NLIMITS];
	uint64_t	 replies[NROUTES][NSTATUSES + 1];	/* + other */
	uint64_t	 failed[2][NSTATUSES + 1];	/* exec, exec stream */
	uint64_t	 bucket[NROUTES][NBUCKETS];	/* not cumulative */
	uint64_t	 count[NROUTES];
	uint64_t	 sum_us[NROUTES];
} m;

static size_t
status_index(int status)
{
	size_t	i;

	for (i = 0; i < NSTATUSES; i++)
		if (statuses[i] == status)
			return (i);
	return (NSTATUSES);
}

/* Microseconds on the monotonic clock. */
uint64_t
metrics_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000);
}

void
metrics_count(enum metric_counter c)
{
	m.counter[c]++;
}

void
metrics_limit(enum metric_limit l)
{
	m.limit[l]++;
}

void
metrics_reply(enum httphead_route route, int status, uint64_t usec)
{
	size_t	i, si;

	if ((unsigned)route >= NROUTES)
		route = ROUTE_NONE;
	si = status_index(status);
	m.replies[route][si]++;
	if (status >= 400 && route == ROUTE_EXEC)
		m.failed[0][si]++;
	if (status >= 400 && route == ROUTE_EXEC_STREAM)
		m.failed[1][si]++;
	m.count[route]++;
	m.sum_us[route] += usec;
	for (i = 0; i < NBUCKETS; i++)
		if (usec <= bucket_us[i]) {
			m.bucket[route][i]++;
			break;
		}
}

static void
text_family(FILE *t, const char *name, const char *type, const char *help)
{
	fprintf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
render_process(FILE *t)
{
	FILE		*f;
	char		 line[256];
	unsigned long	 kb = 0;
	DIR		*d;
	struct dirent	*de;
	struct stat	 st;
	unsigned	 nfd = 0;

	if ((f = fopen("/proc/self/status", "re")) != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
				break;
		fclose(f);
	}
	/*
	 * Linux 6.2 and later give the count as the directory's size, from
	 * the descriptor bitmap; reading the directory costs about a
	 * microsecond a descriptor, 10 ms with 10,000 sessions.
	 */
	if (stat("/proc/self/fd", &st) == 0 && st.st_size > 0)
		nfd = (unsigned)st.st_size;
	else if ((d = opendir("/proc/self/fd")) != NULL) {
		while ((de = readdir(d)) != NULL)
			nfd += de->d_name[0] != '.';
		closedir(d);
		nfd--;		/* the directory's own descriptor */
	}
	text_family(t, "process_resident_memory_bytes", "gauge",
	    "resident memory of the front");
	fprintf(t, "process_resident_memory_bytes %lu\n", kb * 1024);
	text_family(t, "process_open_fds", "gauge",
	    "descriptors the front holds");
	fprintf(t, "process_open_fds %u\n", nfd);
}

/* The lines of name{labels,status="..."} for each status counted. */
static void
render_statuses(FILE *t, const char *name, const char *labels,
    const uint64_t *n)
{
	size_t	i;

	for (i = 0; i < NSTATUSES; i++)
		if (n[i] > 0)
			fprintf(t, "%s{%sstatus=\"%d\"} %llu\n", name, labels,
			    statuses[i], (unsigned long long)n[i]);
	if (n[NSTATUSES] > 0)
		fprintf(t, "%s{%sstatus=\"other\"} %llu\n", name, labels,
		    (unsigned long long)n[NSTATUSES]);
}

static void
render_failed(FILE *t, const char *name, const char *help, int which)
{
	text_family(t, name, "counter", help);
	render_statuses(t, name, "", m.failed[which]);
}

char *
metrics_render(size_t *lenp)
{
	const struct session_gauges *g = registry_gauges();
	char		*buf, label[64];
	size_t		 r, i;
	uint64_t	 cum;
	FILE		*t;
	int		 failed;

	if ((t = open_memstream(&buf, lenp)) == NULL)
		return (NULL);
	text_family(t, "lodged_build_info", "gauge",
	    "the running front's version");
	fprintf(t, "lodged_build_info{version=\"%s\"} 1\n", PACKAGE_VERSION);

	text_family(t, "lodged_sessions", "gauge", "sessions by state");
	fprintf(t, "lodged_sessions{state=\"running\"} %llu\n"
	    "lodged_sessions{state=\"exited\"} %llu\n",
	    (unsigned long long)g->running, (unsigned long long)g->exited);
	text_family(t, "lodged_session_clients", "gauge",
	    "clients attached to sessions (as last reported by the workers)");
	fprintf(t, "lodged_session_clients %llu\n",
	    (unsigned long long)g->clients);
	text_family(t, "lodged_session_output_bytes", "gauge",
	    "output bytes written by the sessions that exist now");
	fprintf(t, "lodged_session_output_bytes %llu\n",
	    (unsigned long long)g->output);

	for (i = 0; i < METRIC_NCOUNTERS; i++) {
		text_family(t, counters[i].name, "counter", counters[i].help);
		fprintf(t, "%s %llu\n", counters[i].name,
		    (unsigned long long)m.counter[i]);
	}
	render_failed(t, "lodged_execs_failed_total",
	    "POST /v1/exec calls answered with an error, by status", 0);
	render_failed(t, "lodged_exec_streams_failed_total",
	    "exec streams refused by the front, by status", 1);

	text_family(t, "lodged_limits_hit_total", "counter",
	    "requests or connections refused by a limit");
	for (i = 0; i < METRIC_NLIMITS; i++)
		fprintf(t, "lodged_limits_hit_total{limit=\"%s\"} %llu\n",
		    limit_name[i], (unsigned long long)m.limit[i]);

	text_family(t, "lodged_http_replies_total", "counter",
	    "replies by route and status (101: handed to a worker)");
	for (r = 0; r < NROUTES; r++) {
		snprintf(label, sizeof(label), "route=\"%s\",", route_name[r]);
		render_statuses(t, "lodged_http_replies_total", label,
		    m.replies[r]);
	}

	text_family(t, "lodged_http_request_duration_seconds", "histogram",
	    "from a complete request head to its reply queued, or to its "
	    "hand-off");
	for (r = 0; r < NROUTES; r++) {
		if (m.count[r] == 0)
			continue;
		for (i = 0, cum = 0; i < NBUCKETS; i++) {
			cum += m.bucket[r][i];
			fprintf(t, "lodged_http_request_duration_seconds_bucket"
			    "{route=\"%s\",le=\"%g\"} %llu\n", route_name[r],
			    bucket_us[i] / 1e6, (unsigned long long)cum);
		}
		fprintf(t, "lodged_http_request_duration_seconds_bucket"
		    "{route=\"%s\",le=\"+Inf\"} %llu\n", route_name[r],
		    (unsigned long long)m.count[r]);
		fprintf(t, "lodged_http_request_duration_seconds_sum"
		    "{route=\"%s\"} %.6f\n", route_name[r], m.sum_us[r] / 1e6);
		fprintf(t, "lodged_http_request_duration_seconds_count"
		    "{route=\"%s\"} %llu\n", route_name[r],
		    (unsigned long long)m.count[r]);
	}
	render_process(t);
	/* Memory that ran out on the way fails the stream. */
	failed = ferror(t);
	if (fclose(t) != 0 || failed) {
		free(buf);
		return (NULL);
	}
	return (buf);
}
