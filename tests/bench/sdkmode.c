/*
 * sdkmode.c: lodge-bench --sdk-figures, the C client's side of
 * tests/sdk/bench.sh.
 *
 * Against a daemon already running (LODGE_URL and LODGE_TOKEN, or --url and
 * --token), the three figures every SDK's bench command prints, measured
 * the way B1, B2 and B4 measure them, as the same one JSON line:
 *
 *   {"sdk":"c","exec_p50_us":..,"exec_p99_us":..,"stream_gbps":..,
 *    "key_p50_us":..,"key_p99_us":..}
 *
 * exec: sequential POST /v1/exec of /bin/true on one keep-alive connection
 * (2,000 after 50 untimed); stream: GB/s (10^9 bytes) of an exec stream of
 * `head -c 1073741824 /dev/zero` read to its exit, from the connect to the
 * exit message; key: one-byte round trips on a PTY session running
 * `stty raw -echo && printf R && exec cat` (2,000 after 100 untimed).
 * No floors, no private daemon: the session it makes is deleted at the end.
 */
#include <sys/types.h>

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void
sdk_usage(void)
{
	fprintf(stderr, "usage: lodge-bench --sdk-figures [--url URL] "
	    "[--token TOKEN] [--execs N (2000)]\n"
	    "                   [--keys N (2000)] [--bytes N (1073741824)]\n");
	exit(2);
}

/* http://127.0.0.1:PORT or http://localhost:PORT: the client is loopback. */
static int
url_port(const char *url)
{
	const char	*p;
	char		*end;
	long		 port;

	if (strncmp(url, "http://", 7) != 0)
		return (-1);
	p = url + 7;
	if (strncmp(p, "127.0.0.1:", 10) == 0)
		p += 10;
	else if (strncmp(p, "localhost:", 10) == 0)
		p += 10;
	else
		return (-1);
	port = strtol(p, &end, 10);
	if (end == p || port < 1 || port > 65535 ||
	    (*end != '\0' && strcmp(end, "/") != 0))
		return (-1);
	return ((int)port);
}

static long
count_arg(const char *s, long max)
{
	char	*end;
	long	 v = strtol(s, &end, 10);

	if (end == s || *end != '\0' || v < 1 || v > max)
		sdk_usage();
	return (v);
}

int
sdk_figures(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "token", required_argument, NULL, 't' },
		{ "execs", required_argument, NULL, 'e' },
		{ "keys", required_argument, NULL, 'k' },
		{ "bytes", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*url = getenv("LODGE_URL"), *token = getenv("LODGE_TOKEN");
	struct samples	 exec = { 0 }, key = { 0 };
	struct http	 h;
	struct ws	 w;
	char		 hc[32];
	char		*head[] = { "head", "-c", hc, "/dev/zero", NULL };
	uint64_t	 nbytes = GIB, got;
	double		 t0, secs;
	long		 hwm;
	int		 ch, nexec = 2000, nkey = 2000;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'u': url = optarg; break;
		case 't': token = optarg; break;
		case 'e': nexec = (int)count_arg(optarg, 10000000); break;
		case 'k': nkey = (int)count_arg(optarg, 10000000); break;
		case 'b': nbytes = (uint64_t)count_arg(optarg, 1L << 40); break;
		default: sdk_usage();
		}
	}
	if (optind != argc)
		sdk_usage();
	if (url == NULL || token == NULL || *token == '\0') {
		fprintf(stderr, "lodge-bench: --sdk-figures needs LODGE_URL and "
		    "LODGE_TOKEN (or --url and --token)\n");
		exit(2);
	}
	if ((bench_port = url_port(url)) == -1) {
		fprintf(stderr, "lodge-bench: %s: not http://127.0.0.1:PORT or "
		    "http://localhost:PORT\n", url);
		exit(2);
	}
	if (strlen(token) >= sizeof(bench_token)) {
		fprintf(stderr, "lodge-bench: the token is too long\n");
		exit(2);
	}
	snprintf(bench_token, sizeof(bench_token), "%s", token);
	signal(SIGPIPE, SIG_IGN);

	if (http_open(&h) == -1)
		fatalx("cannot connect to %s", url);
	exec_latency(&h, &exec, 50);	/* untimed: warms both sides */
	samples_reset(&exec);
	exec_latency(&h, &exec, nexec);

	snprintf(hc, sizeof(hc), "%llu", (unsigned long long)nbytes);
	t0 = now_ms();
	(void)exec_stream(head, &got, &hwm);
	secs = (now_ms() - t0) / 1e3;
	if (got != nbytes)
		fatalx("exec stream: %llu bytes of %llu before exit",
		    (unsigned long long)got, (unsigned long long)nbytes);

	keystroke_session(&h, &w);
	keystrokes(&w, &key, nkey, 100);
	ws_close(&w);
	(void)sess_delete_all();
	http_close(&h);

	printf("{\"sdk\":\"c\",\"exec_p50_us\":%.1f,\"exec_p99_us\":%.1f,"
	    "\"stream_gbps\":%.3f,\"key_p50_us\":%.1f,\"key_p99_us\":%.1f}\n",
	    samples_pct(&exec, 50) * 1e3, samples_pct(&exec, 99) * 1e3,
	    (double)got / secs / 1e9, samples_pct(&key, 50),
	    samples_pct(&key, 99));
	samples_free(&exec);
	samples_free(&key);
	return (0);
}
