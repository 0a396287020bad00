/*
 * pty.c: B3 (PTY throughput), B4 (keystroke round trip), B5 (attach).
 *
 * B3: a PTY session waits for one line of input, then runs `head -c
 * 536870912 /dev/zero`; one attached client reads it to the exit message.
 * Floor: the same head on a raw PTY read by the bench.
 * B4: one-byte stdin messages echoed by `stty raw -echo; cat` in a PTY
 * session.  Floor: a raw PTY echo round trip plus a loopback TCP one-byte
 * echo, the two hops of a keystroke at their floors.
 * B5: connect to `live` on a session whose 1 MiB ring is full.  Floor:
 * connect and fetch 1 MiB over loopback TCP.
 */
#include <sys/types.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

void
bench_b3(void)
{
	uint64_t		 total = bench_quick ? 64 * MIB : 512 * MIB;
	uint64_t		 expect, gap, got;
	struct http		 h;
	struct ws		 w;
	struct sess		*s;
	struct figure		*f;
	msgpack_sbuffer		 sb;
	const unsigned char	*p;
	const msgpack_object	*o;
	const char		*d;
	char			 body[512], fcmd[256], name[96];
	size_t			 n, dn;
	double			 t0, t1, sf;
	int64_t			 off;
	int			 r;

	snprintf(fcmd, sizeof(fcmd), "exec head -c %llu /dev/zero",
	    (unsigned long long)total);
	/* R: stty has run, so the line that starts head is not echoed. */
	snprintf(body, sizeof(body), "{\"command\":\"stty -echo; printf R; "
	    "head -c 1 >/dev/null; exec head -c %llu /dev/zero\","
	    "\"pty\":true}", (unsigned long long)total);
	snprintf(name, sizeof(name), "PTY session, %llu MiB of head -c "
	    "/dev/zero", (unsigned long long)(total / MIB));
	f = fig_new("B3", name, "MB/s", "raw PTY read loop (64 KiB reads)",
	    ">=", 0.9, 0);
	if (http_open(&h) == -1)
		fatalx("cannot connect to lodged");
	msgpack_sbuffer_init(&sb);
	for (r = 0; bench_more_runs("B3", r, 70); r++) {
		sf = floor_pty_cmd(fcmd, total);
		s = sess_create(&h, body, NULL);
		expect = sess_attach(&w, s, NULL);
		while (expect == 0) {
			if (ws_recv(&w, &p, &n) != 1 ||
			    (o = ws_decode(&w, p, n)) == NULL)
				fatalx("B3: no ready mark");
			if (mp_type_is(o, "stdout") &&
			    mp_bin(o, "data", &d, &dn) == 0)
				expect += dn;
		}
		if (expect != 1)
			fatalx("B3: %llu bytes before the start",
			    (unsigned long long)expect);
		pack_stdin(&sb, "\n", 1);
		t0 = now_ms();
		if (ws_send(&w, sb.data, sb.size) == -1)
			fatalx("B3: send failed");
		gap = got = 0;
		for (;;) {
			if (ws_recv(&w, &p, &n) != 1)
				fatalx("B3: closed before exit");
			if ((o = ws_decode(&w, p, n)) == NULL)
				fatalx("B3: not a msgpack map");
			if (mp_type_is(o, "stdout")) {
				if (mp_bin(o, "data", &d, &dn) == -1 ||
				    (off = mp_int(o, "offset", -1)) < 0 ||
				    (uint64_t)off < expect)
					fatalx("B3: bad output message");
				gap += (uint64_t)off - expect;
				expect = (uint64_t)off + dn;
				got += dn;
			} else if (mp_type_is(o, "exit"))
				break;
		}
		t1 = now_ms();
		ws_close(&w);
		if (got + gap != total)
			note("B3 run %d: %llu bytes and %llu in gaps reached the "
			    "client before exit, of %llu", r + 1,
			    (unsigned long long)got, (unsigned long long)gap,
			    (unsigned long long)total);
		if (gap > 0)
			note("B3 run %d: the client missed %llu bytes (gap)",
			    r + 1, (unsigned long long)gap);
		fig_run(f, got / ((t1 - t0) / 1e3) / 1e6, total / sf / 1e6);
		progress("B3 run %d: session %.0f MB/s, raw PTY %.0f MB/s",
		    r + 1, f->v[r], f->b[r]);
		(void)sess_delete_all();
		check_interrupt();
	}
	msgpack_sbuffer_destroy(&sb);
	http_close(&h);
}

/*
 * A PTY session running `stty raw -echo && printf R && exec cat`, attached
 * on w once its R has come: the raw mode is on and cat echoes every byte.
 */
void
keystroke_session(struct http *h, struct ws *w)
{
	const char		*body = "{\"command\":\"stty raw -echo && "
				    "printf R && exec cat\",\"pty\":true}";
	const unsigned char	*p;
	const msgpack_object	*o;
	struct sess		*s;
	size_t			 n;
	int			 ready;

	s = sess_create(h, body, NULL);
	ready = sess_attach(w, s, NULL) > 0;	/* "R" replayed */
	while (!ready) {
		if (ws_recv(w, &p, &n) != 1 ||
		    (o = ws_decode(w, p, n)) == NULL)
			fatalx("keystroke session: no ready mark");
		ready = mp_type_is(o, "stdout");
	}
}

/*
 * n one-byte stdin messages on w (a keystroke session), each timed to its
 * echo in us, after 100 untimed ones.
 */
void
keystrokes(struct ws *w, struct samples *lat, int nrt)
{
	msgpack_sbuffer		 sb;
	const unsigned char	*p;
	const msgpack_object	*o;
	const char		*d;
	unsigned char		 c;
	size_t			 n, dn;
	double			 t0;
	int			 i;

	msgpack_sbuffer_init(&sb);
	for (i = -100; i < nrt; i++) {
		c = (unsigned char)('a' + (i & 15));
		pack_stdin(&sb, &c, 1);
		t0 = now_ms();
		if (ws_send(w, sb.data, sb.size) == -1)
			fatalx("keystroke: send failed");
		for (;;) {
			if (ws_recv(w, &p, &n) != 1 ||
			    (o = ws_decode(w, p, n)) == NULL)
				fatalx("keystroke: closed");
			if (mp_type_is(o, "stdout"))
				break;
		}
		if (i >= 0)
			samples_add(lat, (now_ms() - t0) * 1e3);
		if (mp_bin(o, "data", &d, &dn) == -1 || dn != 1 ||
		    (unsigned char)d[0] != c)
			fatalx("keystroke: echo of %c is %zu bytes", c, dn);
		if ((i & 1023) == 0)
			check_interrupt();
	}
	msgpack_sbuffer_destroy(&sb);
}

void
bench_b4(void)
{
	struct samples		 lat = { 0 }, pty = { 0 }, tcp = { 0 };
	struct figure		*p50, *p99, *fpty, *ftcp;
	struct http		 h;
	struct ws		 w;
	char			 name[96];
	int			 nrt = bench_quick ? 1000 : 10000, r;

	snprintf(name, sizeof(name), "keystroke round trip p50 (%d, PTY cat)",
	    nrt);
	p50 = fig_new("B4", name, "us", "raw PTY echo p50 + TCP echo p50",
	    "<=", 1.3, 0);
	snprintf(name, sizeof(name), "keystroke round trip p99 (%d, PTY cat)",
	    nrt);
	p99 = fig_new("B4", name, "us", "raw PTY echo p99 + TCP echo p99",
	    "<=", 1.3, 0);
	fpty = fig_new("B4", "context: raw PTY echo round trip p50", "us",
	    NULL, NULL, 0, 0);
	ftcp = fig_new("B4", "context: loopback TCP 1-byte echo p50", "us",
	    NULL, NULL, 0, 0);
	if (http_open(&h) == -1)
		fatalx("cannot connect to lodged");
	for (r = 0; bench_more_runs("B4", r, 25); r++) {
		samples_reset(&lat);
		samples_reset(&pty);
		samples_reset(&tcp);
		floor_pty_echo(&pty, nrt);
		floor_tcp_echo(&tcp, nrt);
		keystroke_session(&h, &w);
		keystrokes(&w, &lat, nrt);
		ws_close(&w);
		/* the floors are in ms */
		fig_run(p50, samples_pct(&lat, 50), (samples_pct(&pty, 50) +
		    samples_pct(&tcp, 50)) * 1e3);
		fig_run(p99, samples_pct(&lat, 99), (samples_pct(&pty, 99) +
		    samples_pct(&tcp, 99)) * 1e3);
		fig_run(fpty, samples_pct(&pty, 50) * 1e3, NAN);
		fig_run(ftcp, samples_pct(&tcp, 50) * 1e3, NAN);
		progress("B4 run %d: session p50 %.1f p99 %.1f us; pty p50 "
		    "%.4f p99 %.4f ms; tcp p50 %.4f p99 %.4f ms", r + 1,
		    samples_pct(&lat, 50), samples_pct(&lat, 99),
		    samples_pct(&pty, 50), samples_pct(&pty, 99),
		    samples_pct(&tcp, 50), samples_pct(&tcp, 99));
		(void)sess_delete_all();
	}
	http_close(&h);
	samples_free(&lat);
	samples_free(&pty);
	samples_free(&tcp);
}

void
bench_b5(void)
{
	const char	*body = "{\"command\":\"head -c 2097152 /dev/zero; "
			    "exec cat\"}";
	struct samples	 lat = { 0 }, base = { 0 };
	struct figure	*f, *f99;
	struct http	 h;
	struct ws	 w;
	struct sess	*s;
	json_t		*j;
	uint64_t	 replay;
	double		 t0;
	int		 n = bench_quick ? 20 : 100, r, i, tries;

	f = fig_new("B5", "attach connect->live, full 1 MiB ring, p50", "ms",
	    "loopback TCP connect + 1 MiB fetch p50", NULL, 0, 0);
	f99 = fig_new("B5", "attach connect->live, full 1 MiB ring, p99", "ms",
	    "loopback TCP connect + 1 MiB fetch p99", NULL, 0, 0);
	if (http_open(&h) == -1)
		fatalx("cannot connect to lodged");
	s = sess_create(&h, body, NULL);
	for (tries = 0; ; tries++) {
		j = sess_get(&h, s);
		if (json_integer_value(json_object_get(j, "outputBytes")) >=
		    2097152) {
			json_decref(j);
			break;
		}
		json_decref(j);
		if (tries == 500)
			fatalx("B5: the session's output did not arrive");
		usleep(20000);
	}
	for (r = 0; bench_more_runs("B5", r, 15); r++) {
		samples_reset(&lat);
		samples_reset(&base);
		floor_tcp_fetch(&base, n, MIB);
		for (i = -5; i < n; i++) {
			t0 = now_ms();
			replay = sess_attach(&w, s, NULL);
			if (i >= 0)
				samples_add(&lat, now_ms() - t0);
			ws_close(&w);
			if (replay < MIB - 64 * KIB || replay > MIB)
				fatalx("B5: replayed %llu bytes",
				    (unsigned long long)replay);
		}
		fig_run(f, samples_pct(&lat, 50), samples_pct(&base, 50));
		fig_run(f99, samples_pct(&lat, 99), samples_pct(&base, 99));
		progress("B5 run %d: attach p50 %.3f p99 %.3f ms; tcp fetch "
		    "p50 %.3f ms", r + 1, samples_pct(&lat, 50),
		    samples_pct(&lat, 99), samples_pct(&base, 50));
		check_interrupt();
	}
	(void)sess_delete_all();
	http_close(&h);
	samples_free(&lat);
	samples_free(&base);
}
