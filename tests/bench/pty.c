/*
 * pty.c: B3 (PTY throughput), B4 (keystroke round trip), B5 (attach).
 *
 * B3: a PTY session waits for one line of input, then runs `head -c
 * 536870912 /dev/zero`; one attached client reads it to the exit message.
 * Floor: the same head on a raw PTY read by the bench.
 * B4: one-byte stdin messages echoed by `stty raw -echo; cat` in a PTY
 * session, in an exec stream in PTY mode, and keystrokes on the terminal
 * of `lodge attach`.  Floor: the same echo through relay.c, a minimal
 * epoll relay with the same WebSocket framing and messages (for the CLI's
 * terminal, typed into relay.c's minimal terminal client), measured in the
 * same run; the relay, the session and the exec stream in turns.  Context:
 * that terminal client typing into a session, the session's share of what
 * `lodge attach` takes beyond its floor.
 * B5: connect to `live` on a session whose 1 MiB ring is full.  Floor:
 * connect and fetch 1 MiB over loopback TCP.
 */
#include <sys/types.h>

#include <errno.h>
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
 * nrt one-byte stdin messages on w (a keystroke session), each timed to its
 * echo in us, after warm untimed ones.
 */
void
keystrokes(struct ws *w, struct samples *lat, int nrt, int warm)
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
	for (i = -warm; i < nrt; i++) {
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

#define B4_CMD	"stty raw -echo && printf R && exec cat"
#define B4_TURN	200	/* keystrokes per turn */
#define B4_SETTLE_MS	500	/* from the last typist's start to the first key */

/* Skip to the first output: the ready mark R. */
static void
b4_ready(struct ws *w, const char *what)
{
	const unsigned char	*p;
	const msgpack_object	*o;
	size_t			 n;

	do {
		if (ws_recv(w, &p, &n) != 1 || (o = ws_decode(w, p, n)) == NULL)
			fatalx("B4 %s: no ready mark", what);
		if (mp_type_is(o, "error"))
			fatalx("B4 %s: error message", what);
	} while (!mp_type_is(o, "stdout"));
}

static pid_t
b4_relay_open(struct ws *w, pid_t *cmd)
{
	pid_t	relay;
	int	port;

	relay = relay_start(B4_CMD, &port, cmd);
	if (ws_open_port(w, port, "/") == -1)
		fatalx("B4 relay: handshake failed");
	b4_ready(w, "relay");
	return (relay);
}

static void
b4_stream_open(struct ws *w)
{
	msgpack_sbuffer	 sb;
	msgpack_packer	 pk;

	if (ws_open(w, "/v1/exec/stream") == -1)
		fatalx("B4 exec stream: handshake failed");
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "type", 4);
	msgpack_pack_str_with_body(&pk, "start", 5);
	msgpack_pack_str_with_body(&pk, "command", 7);
	msgpack_pack_str_with_body(&pk, B4_CMD, strlen(B4_CMD));
	msgpack_pack_str_with_body(&pk, "tty", 3);
	msgpack_pack_true(&pk);
	if (ws_send(w, sb.data, sb.size) == -1)
		fatalx("B4 exec stream: send failed");
	msgpack_sbuffer_destroy(&sb);
	b4_ready(w, "exec stream");
}

/* The path of lodge, the CLI, beside the front's executable. */
static int
b4_cli_path(char *buf, size_t len)
{
	char	exe[64], path[4096], *slash;
	ssize_t	n;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)bench_front_pid());
	if ((n = readlink(exe, path, sizeof(path) - 1)) <= 0)
		return (-1);
	path[n] = '\0';
	if ((slash = strrchr(path, '/')) == NULL)
		return (-1);
	slash[1] = '\0';
	if ((size_t)snprintf(buf, len, "%slodge", path) >= len ||
	    access(buf, X_OK) == -1)
		return (-1);
	return (0);
}

/*
 * One of B4's clients: a WebSocket (w) to lodge or the relay, or to ttyd,
 * or a terminal (t), and its samples.
 */
struct b4_typist {
	struct ws	*w;
	struct pty_term	*t;
	struct samples	*lat;
	int		 ttyd;
};

static void
b4_type(struct b4_typist *ty, int n, int warm)
{
	if (ty->ttyd)
		ttyd_keystrokes(ty->w, ty->lat, n, warm);
	else if (ty->w != NULL)
		keystrokes(ty->w, ty->lat, n, warm);
	else
		pty_term_keys(ty->t, ty->lat, n, warm);
}

/*
 * nrt keystrokes from each of n typists, all open at once, in turns of
 * B4_TURN, the order rotated each turn: what the machine does meanwhile
 * falls on a figure and its floor alike.  The typists are opened one after
 * the other, and a process's first tenth of a second or so on this kernel
 * has more slow wakeups than its later life, so the youngest would pay for
 * its age: typing starts once the last one opened has settled.
 */
static void
b4_turns(struct b4_typist *ty, int n, int nrt)
{
	int	i, k, turn;

	usleep(B4_SETTLE_MS * 1000);
	for (k = 0; k < n; k++)
		b4_type(&ty[k], 0, 100);
	for (turn = 0, i = 0; i < nrt; turn++, i += B4_TURN)
		for (k = 0; k < n; k++)
			b4_type(&ty[(turn + k) % n],
			    nrt - i < B4_TURN ? nrt - i : B4_TURN, 0);
}

/* The relay, a session, an exec stream, and ttyd if given one (us). */
static void
b4_websockets(struct http *h, struct samples *relay, struct samples *sess,
    struct samples *strm, const char *ttyd, struct samples *peer, int nrt)
{
	struct ws		w[4];
	struct b4_typist	ty[4] = {
		{ &w[0], NULL, relay, 0 }, { &w[1], NULL, sess, 0 },
		{ &w[2], NULL, strm, 0 }, { &w[3], NULL, peer, 1 }
	};
	pid_t			rpid, cmd, tpid = -1;
	int			k, n = ttyd != NULL ? 4 : 3, port;

	rpid = b4_relay_open(&w[0], &cmd);
	keystroke_session(h, &w[1]);
	b4_stream_open(&w[2]);
	if (ttyd != NULL) {
		tpid = ttyd_start(ttyd, B4_CMD, &port);
		ttyd_open(&w[3], port);
	}
	b4_turns(ty, n, nrt);
	for (k = 0; k < n; k++)
		ws_close(&w[k]);
	relay_stop(rpid, cmd);
	if (tpid != -1)
		ttyd_stop(tpid);
}

/*
 * `lodge attach` on a PTY of the bench's, as a terminal runs it, and its
 * floor, `lodge-bench --relay-client` typed into on another: a byte
 * written to each terminal is timed to its echo there (ms).  On a third,
 * the same floor client types into another session (split, ms): what it
 * takes beyond the floor is the session's share of lodge attach's, and
 * what lodge attach takes beyond it the CLI's.
 */
static void
b4_cli(struct http *h, const char *cli, struct samples *lat,
    struct samples *floor, struct samples *split, int nrt)
{
	struct pty_term		t[3];
	struct b4_typist	ty[3] = {
		{ NULL, &t[0], floor, 0 }, { NULL, &t[1], lat, 0 },
		{ NULL, &t[2], split, 0 }
	};
	struct sess		*ss;
	char			 self[4096], cmd[8192];
	ssize_t			 len;
	pid_t			 relay, rcmd;
	int			 port, k;

	if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		fatalx("B4: /proc/self/exe: %s", strerror(errno));
	self[len] = '\0';
	relay = relay_start(B4_CMD, &port, &rcmd);
	snprintf(cmd, sizeof(cmd), "exec '%s' --relay-client %d", self, port);
	pty_term_open(&t[0], cmd);
	ss = sess_create(h, "{\"command\":\"" B4_CMD "\",\"pty\":true}", NULL);
	snprintf(cmd, sizeof(cmd), "LODGE_TOKEN=%s exec %s --url "
	    "http://127.0.0.1:%d attach %s", bench_token, cli, bench_port,
	    ss->id);
	pty_term_open(&t[1], cmd);
	ss = sess_create(h, "{\"command\":\"" B4_CMD "\",\"pty\":true}", NULL);
	snprintf(cmd, sizeof(cmd), "LODGE_TOKEN=%s exec '%s' --relay-client "
	    "%d /v1/sessions/%s/attach", bench_token, self, bench_port, ss->id);
	pty_term_open(&t[2], cmd);
	b4_turns(ty, 3, nrt);
	for (k = 0; k < 3; k++)
		pty_term_close(&t[k]);
	relay_stop(relay, rcmd);
}

static void
b4_fig_pair(struct figure **f, const char *what, int nrt, const char *plus)
{
	char	name[96], base[96];

	snprintf(name, sizeof(name), "keystroke p50, %s (%d)", what, nrt);
	snprintf(base, sizeof(base), "relay p50%s", plus);
	f[0] = fig_new("B4", name, "us", base, "<=", 1.15, 0);
	snprintf(name, sizeof(name), "keystroke p99, %s (%d)", what, nrt);
	snprintf(base, sizeof(base), "relay p99%s", plus);
	f[1] = fig_new("B4", name, "us", base, "<=", 1.15, 0);
}

/* LODGE_BENCH_B4_SAMPLES=DIR: each run's samples, in typing order. */
static void
b4_dump(const char *what, int run, const struct samples *s)
{
	const char	*dir = getenv("LODGE_BENCH_B4_SAMPLES");
	char		 path[4096];
	FILE		*f;
	size_t		 i;

	if (dir == NULL)
		return;
	snprintf(path, sizeof(path), "%s/%s.%d", dir, what, run);
	if ((f = fopen(path, "w")) == NULL)
		fatalx("%s: %s", path, strerror(errno));
	for (i = 0; i < s->n; i++)
		fprintf(f, "%.2f\n", s->v[i]);
	fclose(f);
}

static void
b4_fig_run(struct figure **f, struct samples *lat, double p50, double p99)
{
	fig_run(f[0], samples_pct(lat, 50), p50);
	fig_run(f[1], samples_pct(lat, 99), p99);
}

/* LODGE_BENCH_TTYD: ttyd against the relay, and lodge against ttyd. */
static void
b4_peer_figures(struct figure **f, const char *ttyd)
{
	static const char	*who[3][2] = { { "ttyd", "relay" },
				    { "session", "ttyd" },
				    { "exec stream", "ttyd" } };
	char			 name[96], base[96];
	int			 i, k, pct[2] = { 50, 99 };

	for (i = 0; i < 3; i++)
		for (k = 0; k < 2; k++) {
			snprintf(name, sizeof(name), "context: %s keystroke "
			    "p%d", who[i][0], pct[k]);
			snprintf(base, sizeof(base), "%s p%d", who[i][1],
			    pct[k]);
			f[i * 2 + k] = fig_new("B4", name, "us", base, NULL,
			    0, 0);
		}
	note("B4: ttyd (%s) typed in the same turns", ttyd);
}

static void
b4_peer_run(struct figure **f, struct samples *relay, struct samples *sess,
    struct samples *strm, struct samples *peer)
{
	b4_fig_run(f, peer, samples_pct(relay, 50), samples_pct(relay, 99));
	b4_fig_run(f + 2, sess, samples_pct(peer, 50), samples_pct(peer, 99));
	b4_fig_run(f + 4, strm, samples_pct(peer, 50), samples_pct(peer, 99));
}

void
bench_b4(void)
{
	struct samples	 relay = { 0 }, sess = { 0 }, strm = { 0 };
	struct samples	 cli = { 0 }, term = { 0 }, split = { 0 };
	struct samples	 pty = { 0 }, tcp = { 0 };
	struct figure	*fs[2], *fx[2], *fc[2] = { NULL, NULL };
	struct figure	*fsp[2] = { NULL, NULL };
	struct figure	*fpty, *ftcp;
	struct samples	 peer = { 0 };
	struct figure	*fpeer[6] = { NULL };
	struct http	 h;
	const char	*ttyd = getenv("LODGE_BENCH_TTYD");
	char		 clipath[4096];
	int		 nrt = bench_quick ? 1000 : 10000, r, have_cli;

	b4_fig_pair(fs, "session, PTY cat", nrt, " (epoll, WebSocket, PTY)");
	b4_fig_pair(fx, "exec stream, tty", nrt, "");
	have_cli = b4_cli_path(clipath, sizeof(clipath)) == 0;
	if (have_cli) {
		b4_fig_pair(fc, "lodge attach's tty", nrt,
		    " via a terminal client");
		fsp[0] = fig_new("B4", "context: floor client on a session p50",
		    "us", "relay p50 via a terminal client", NULL, 0, 0);
		fsp[1] = fig_new("B4", "context: floor client on a session p99",
		    "us", "relay p99 via a terminal client", NULL, 0, 0);
	} else
		note("B4: no lodge beside lodged: lodge attach not measured");
	if (ttyd != NULL && *ttyd == '\0')
		ttyd = NULL;
	if (ttyd != NULL)
		b4_peer_figures(fpeer, ttyd);
	fpty = fig_new("B4", "context: raw PTY echo round trip p50", "us",
	    NULL, NULL, 0, 0);
	ftcp = fig_new("B4", "context: loopback TCP 1-byte echo p50", "us",
	    NULL, NULL, 0, 0);
	if (http_open(&h) == -1)
		fatalx("cannot connect to lodged");
	for (r = 0; bench_more_runs("B4", r, 60); r++) {
		samples_reset(&relay);
		samples_reset(&sess);
		samples_reset(&strm);
		samples_reset(&cli);
		samples_reset(&pty);
		samples_reset(&tcp);
		samples_reset(&peer);
		b4_websockets(&h, &relay, &sess, &strm, ttyd, &peer, nrt);
		if (have_cli) {
			samples_reset(&term);
			samples_reset(&split);
			b4_cli(&h, clipath, &cli, &term, &split, nrt);
		}
		floor_pty_keys(B4_CMD, &pty, nrt);
		floor_tcp_echo(&tcp, nrt);
		b4_dump("relay", r, &relay);
		b4_dump("session", r, &sess);
		b4_dump("stream", r, &strm);
		if (ttyd != NULL) {
			b4_dump("ttyd", r, &peer);
			b4_peer_run(fpeer, &relay, &sess, &strm, &peer);
		}
		b4_fig_run(fs, &sess, samples_pct(&relay, 50),
		    samples_pct(&relay, 99));
		b4_fig_run(fx, &strm, samples_pct(&relay, 50),
		    samples_pct(&relay, 99));
		/* the raw PTY and TCP floors are in ms */
		if (have_cli) {
			fig_run(fc[0], samples_pct(&cli, 50) * 1e3,
			    samples_pct(&term, 50) * 1e3);
			fig_run(fc[1], samples_pct(&cli, 99) * 1e3,
			    samples_pct(&term, 99) * 1e3);
			fig_run(fsp[0], samples_pct(&split, 50) * 1e3,
			    samples_pct(&term, 50) * 1e3);
			fig_run(fsp[1], samples_pct(&split, 99) * 1e3,
			    samples_pct(&term, 99) * 1e3);
		}
		fig_run(fpty, samples_pct(&pty, 50) * 1e3, NAN);
		fig_run(ftcp, samples_pct(&tcp, 50) * 1e3, NAN);
		progress("B4 run %d: p50/p99 us: relay %.1f/%.1f, session "
		    "%.1f/%.1f, exec stream %.1f/%.1f", r + 1,
		    samples_pct(&relay, 50), samples_pct(&relay, 99),
		    samples_pct(&sess, 50), samples_pct(&sess, 99),
		    samples_pct(&strm, 50), samples_pct(&strm, 99));
		if (have_cli)
			progress("B4 run %d: p50/p99 us: terminal floor "
			    "%.1f/%.1f, its client on a session %.1f/%.1f, "
			    "lodge attach %.1f/%.1f", r + 1,
			    samples_pct(&term, 50) * 1e3,
			    samples_pct(&term, 99) * 1e3,
			    samples_pct(&split, 50) * 1e3,
			    samples_pct(&split, 99) * 1e3,
			    samples_pct(&cli, 50) * 1e3,
			    samples_pct(&cli, 99) * 1e3);
		(void)sess_delete_all();
	}
	http_close(&h);
	samples_free(&relay);
	samples_free(&sess);
	samples_free(&strm);
	samples_free(&cli);
	samples_free(&term);
	samples_free(&split);
	samples_free(&pty);
	samples_free(&tcp);
	samples_free(&peer);
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
