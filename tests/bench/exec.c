/*
 * exec.c: B1 (POST /v1/exec latency) and B2 (exec stream throughput).
 *
 * B1: sequential POST /v1/exec {"args":["/bin/true"]} on one keep-alive
 * connection, against posix_spawn + waitpid of /bin/true by the bench.
 * B2: an exec stream (GET /v1/exec/stream) of `head -c 4294967296
 * /dev/zero`, read to its exit message, against the same head writing into
 * a raw pipe read by the bench; dd bs=64K both ways, a C-to-C pipe and
 * loopback TCP for context; the peak RSS of the exec-stream worker (the
 * command's parent) from /proc/PID/status.
 */
#include <sys/types.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* n sequential POST /v1/exec of /bin/true on h, each timed in ms. */
void
exec_latency(struct http *h, struct samples *lat, int n)
{
	const char	*body = "{\"args\":[\"/bin/true\"]}";
	double		 t0;
	int		 i;

	for (i = 0; i < n; i++) {
		t0 = now_ms();
		if (http_call(h, "POST", "/v1/exec", body) == -1)
			fatalx("POST /v1/exec: connection failed");
		samples_add(lat, now_ms() - t0);
		if (h->status != 200 ||
		    strstr(h->body, "\"exitCode\":0") == NULL)
			fatalx("POST /v1/exec: %d %s", h->status, h->body);
		if ((i & 255) == 0)
			check_interrupt();
	}
}

void
bench_b1(void)
{
	struct samples	 lat = { 0 }, base = { 0 };
	struct figure	*p50, *p99, *ffront, *ftmpl;
	struct http	 h;
	char		 name[96];
	double		 f0, m0;
	pid_t		 front = bench_front_pid(), tmpl = bench_template_pid();
	int		 n = bench_quick ? 300 : 2000, r;

	snprintf(name, sizeof(name), "exec p50 (%d seq. POST /v1/exec "
	    "/bin/true)", n);
	p50 = fig_new("B1", name, "ms", "posix_spawn+waitpid /bin/true p50",
	    "<=", 1.25, 0);
	snprintf(name, sizeof(name), "exec p99 (%d seq. POST /v1/exec "
	    "/bin/true)", n);
	p99 = fig_new("B1", name, "ms", "posix_spawn+waitpid /bin/true p99",
	    "<=", 1.25, 0);
	ffront = fig_new("B1", "context: lodged front CPU per exec", "us", NULL,
	    NULL, 0, 0);
	ftmpl = fig_new("B1", "context: lodged template CPU per exec", "us",
	    NULL, NULL, 0, 0);
	if (http_open(&h) == -1)
		fatalx("cannot connect to lodged");
	for (r = -1; r < 0 || bench_more_runs("B1", r, 40); r++) {
		samples_reset(&lat);
		samples_reset(&base);
		/* run -1 warms both up and is not counted */
		floor_spawn_true(&base, r < 0 ? 50 : n);
		f0 = proc_cpu_ns(front);
		m0 = proc_cpu_ns(tmpl);
		exec_latency(&h, &lat, r < 0 ? 50 : n);
		if (r < 0)
			continue;
		fig_run(ffront, (proc_cpu_ns(front) - f0) / n / 1e3, NAN);
		fig_run(ftmpl, (proc_cpu_ns(tmpl) - m0) / n / 1e3, NAN);
		fig_run(p50, samples_pct(&lat, 50), samples_pct(&base, 50));
		fig_run(p99, samples_pct(&lat, 99), samples_pct(&base, 99));
		progress("B1 run %d: exec p50 %.3f p99 %.3f ms; spawn p50 %.3f "
		    "p99 %.3f ms", r + 1, samples_pct(&lat, 50),
		    samples_pct(&lat, 99), samples_pct(&base, 50),
		    samples_pct(&base, 99));
	}
	http_close(&h);
	samples_free(&lat);
	samples_free(&base);
}

/*
 * One exec stream of argv, read to "exit": seconds from the start message
 * to the exit message; output bytes; the worker's VmHWM in kB.
 */
double
exec_stream(char *const argv[], uint64_t *bytes, long *hwm_kb)
{
	struct ws		 w;
	msgpack_sbuffer		 sb;
	msgpack_packer		 pk;
	const unsigned char	*p;
	const msgpack_object	*o;
	const char		*d;
	size_t			 n, dn;
	uint64_t		 next_sample = 16 * MIB;
	pid_t			 worker = -1;
	double			 t0, t1;
	long			 v;
	int			 argc, i;

	*bytes = 0;
	*hwm_kb = -1;
	for (argc = 0; argv[argc] != NULL; argc++)
		;
	if (ws_open(&w, "/v1/exec/stream") == -1)
		fatalx("exec stream: handshake failed");
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "type", 4);
	msgpack_pack_str_with_body(&pk, "start", 5);
	msgpack_pack_str_with_body(&pk, "args", 4);
	msgpack_pack_array(&pk, (size_t)argc);
	for (i = 0; i < argc; i++)
		msgpack_pack_str_with_body(&pk, argv[i], strlen(argv[i]));
	t0 = now_ms();
	if (ws_send(&w, sb.data, sb.size) == -1)
		fatalx("exec stream: send failed");
	msgpack_sbuffer_destroy(&sb);
	for (;;) {
		if (ws_recv(&w, &p, &n) != 1)
			fatalx("exec stream closed before exit (code %d)",
			    w.close_code);
		if ((o = ws_decode(&w, p, n)) == NULL)
			fatalx("exec stream: not a msgpack map");
		if (mp_type_is(o, "stdout") || mp_type_is(o, "stderr")) {
			if (mp_bin(o, "data", &d, &dn) == -1 ||
			    (uint64_t)mp_int(o, "offset", -1) != *bytes)
				fatalx("exec stream: bad output message");
			*bytes += dn;
			if (*bytes >= next_sample && worker > 0) {
				if ((v = proc_field_kb(worker, "status",
				    "VmHWM")) > *hwm_kb)
					*hwm_kb = v;
				next_sample += 64 * MIB;
				check_interrupt();
			}
		} else if (mp_type_is(o, "started")) {
			worker = proc_ppid((pid_t)mp_int(o, "pid", -1));
		} else if (mp_type_is(o, "exit")) {
			t1 = now_ms();
			if (worker > 0 && (v = proc_field_kb(worker, "status",
			    "VmHWM")) > *hwm_kb)
				*hwm_kb = v;
			if (mp_int(o, "exitCode", -1) != 0)
				fatalx("exec stream: exit code %lld",
				    (long long)mp_int(o, "exitCode", -1));
			break;
		} else if (mp_type_is(o, "error"))
			fatalx("exec stream: error message");
	}
	ws_close(&w);
	return ((t1 - t0) / 1e3);
}

void
bench_b2(void)
{
	uint64_t	 total = bench_quick ? 256 * MIB : 4 * GIB, bytes;
	char		 count[32], hc[32], name[96], sz[16];
	char		*head[] = { "head", "-c", hc, "/dev/zero", NULL };
	char		*dd[] = { "dd", "if=/dev/zero", "bs=64K", count,
			    "status=none", NULL };
	struct figure	*fhead, *fdd, *fpipe, *ftcp, *frss;
	double		 s, sb;
	long		 hwm;
	int		 r;

	snprintf(hc, sizeof(hc), "%llu", (unsigned long long)total);
	snprintf(count, sizeof(count), "count=%llu",
	    (unsigned long long)(total / (64 * KIB)));
	snprintf(sz, sizeof(sz), "%llu %s", (unsigned long long)(total >= GIB ?
	    total / GIB : total / MIB), total >= GIB ? "GiB" : "MiB");
	snprintf(name, sizeof(name), "exec stream head -c %s", sz);
	fhead = fig_new("B2", name, "GB/s", "head -c into a raw pipe", ">=",
	    0.6, 0);
	snprintf(name, sizeof(name), "exec stream dd bs=64K %s", sz);
	fdd = fig_new("B2", name, "GB/s", "dd bs=64K into a raw pipe", NULL,
	    0, 0);
	fpipe = fig_new("B2", "context: C-to-C pipe, 64 KiB writes", "GB/s",
	    NULL, NULL, 0, 0);
	ftcp = fig_new("B2", "context: C-to-C loopback TCP, 64 KiB writes",
	    "GB/s", NULL, NULL, 0, 0);
	frss = fig_new("B2", "exec stream worker peak RSS (VmHWM)", "MiB",
	    NULL, NULL, 0, 0);
	for (r = 0; bench_more_runs("B2", r, 110); r++) {
		sb = floor_pipe_cmd(head, &bytes);
		if (bytes != total)
			fatalx("head into a pipe: %llu bytes",
			    (unsigned long long)bytes);
		s = exec_stream(head, &bytes, &hwm);
		if (bytes != total)
			note("B2 run %d: the exec stream of head lost the last "
			    "%llu bytes (exit arrived after %llu of %llu)",
			    r + 1, (unsigned long long)(total - bytes),
			    (unsigned long long)bytes,
			    (unsigned long long)total);
		fig_run(fhead, bytes / s / 1e9, total / sb / 1e9);
		fig_run(frss, hwm / 1024.0, NAN);
		progress("B2 run %d: head: stream %.2f GB/s, pipe %.2f GB/s; "
		    "worker VmHWM %ld kB", r + 1, bytes / s / 1e9,
		    total / sb / 1e9, hwm);
		sb = floor_pipe_cmd(dd, &bytes);
		if (bytes != total)
			fatalx("dd into a pipe: %llu bytes",
			    (unsigned long long)bytes);
		s = exec_stream(dd, &bytes, &hwm);
		if (bytes != total)
			note("B2 run %d: the exec stream of dd lost the last "
			    "%llu bytes (exit arrived after %llu of %llu)",
			    r + 1, (unsigned long long)(total - bytes),
			    (unsigned long long)bytes,
			    (unsigned long long)total);
		fig_run(fdd, bytes / s / 1e9, total / sb / 1e9);
		progress("B2 run %d: dd: stream %.2f GB/s, pipe %.2f GB/s",
		    r + 1, bytes / s / 1e9, total / sb / 1e9);
		s = floor_pipe_c2c(total, 64 * KIB);
		fig_run(fpipe, total / s / 1e9, NAN);
		s = floor_tcp_c2c(total, 64 * KIB);
		fig_run(ftcp, total / s / 1e9, NAN);
		progress("B2 run %d: C pipe %.2f GB/s, TCP %.2f GB/s", r + 1,
		    fpipe->v[r], ftcp->v[r]);
		check_interrupt();
	}
}
