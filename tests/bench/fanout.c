/*
 * fanout.c: B7, 50 clients attached to one session that emits 1 GiB.
 *
 * The session (pipes) waits for one byte of input, then runs `head -c
 * 1073741824 /dev/zero`.  50 WebSocket clients attach and reach `live`; one
 * of them sends the byte; all are then read by one epoll loop until each
 * got `exit`.  Aggregate throughput = output bytes delivered to the reading
 * clients / (first byte sent .. last exit).  Bytes a slow client misses
 * show as offset jumps (gaps) and are counted apart.  The stalled variant
 * leaves one client attached but never reads it again.
 */
#include <sys/types.h>
#include <sys/epoll.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define B7_CLIENTS	50

struct fan {
	struct ws	ws;
	uint64_t	expect;
	uint64_t	got;
	uint64_t	gap;
	int		done;
};

/*
 * One run with nclients attached, the last `stalled` of them never read:
 * aggregate GB/s of the reading clients; delivered fraction; seconds.
 */
static double
fanout_run(uint64_t total, int nclients, int stalled, double *delivered,
    double *secs)
{
	struct fan		*c;
	struct epoll_event	 ev, evs[64];
	struct http		 h;
	msgpack_sbuffer		 sb;
	const unsigned char	*p;
	const msgpack_object	*o;
	const char		*d;
	char			 body[256];
	size_t			 n, dn, saved = ws_bufsize;
	uint64_t		 bytes = 0, gaps = 0;
	double			 t0, tlast = 0;
	int64_t			 off;
	int			 nact = nclients - stalled, ndone = 0, ep, i;
	int			 k, nev, rc, lost = 0;
	ssize_t			 got;
	struct sess		*s;

	snprintf(body, sizeof(body), "{\"command\":\"head -c 1 >/dev/null; "
	    "exec head -c %llu /dev/zero\"}", (unsigned long long)total);
	if (http_open(&h) == -1)
		fatalx("cannot connect to lodged");
	s = sess_create(&h, body, NULL);
	if ((c = calloc((size_t)nclients, sizeof(*c))) == NULL)
		fatalx("out of memory");
	ws_bufsize = 1 * MIB;
	for (i = 0; i < nclients; i++)
		if (sess_attach(&c[i].ws, s, NULL) != 0)
			fatalx("B7: output before the start");
	ws_bufsize = saved;
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		fatalx("epoll: %s", strerror(errno));
	for (i = 0; i < nact; i++) {
		(void)fcntl(c[i].ws.fd, F_SETFL, O_NONBLOCK);
		ev.events = EPOLLIN;
		ev.data.u32 = (uint32_t)i;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c[i].ws.fd, &ev) == -1)
			fatalx("epoll_ctl: %s", strerror(errno));
	}
	msgpack_sbuffer_init(&sb);
	pack_stdin(&sb, "x", 1);
	t0 = now_ms();
	if (ws_send(&c[0].ws, sb.data, sb.size) == -1)
		fatalx("B7: send failed");
	msgpack_sbuffer_destroy(&sb);
	while (ndone < nact) {
		if ((nev = epoll_wait(ep, evs, 64, 60000)) <= 0) {
			if (nev == -1 && errno == EINTR) {
				check_interrupt();
				continue;
			}
			fatalx("B7: no output for 60 s");
		}
		for (k = 0; k < nev; k++) {
			struct fan	*f = &c[evs[k].data.u32];

			/* One read per event keeps the clients fair. */
			got = ws_fill(&f->ws);
			if (got == 0 || (got == -1 && errno != EAGAIN &&
			    errno != EINTR))
				fatalx("B7: a client lost its connection");
			while ((rc = ws_next(&f->ws, &p, &n)) == 1) {
				if ((o = ws_decode(&f->ws, p, n)) == NULL)
					fatalx("B7: not a msgpack map");
				if (mp_type_is(o, "stdout")) {
					if (mp_bin(o, "data", &d, &dn) == -1 ||
					    (off = mp_int(o, "offset", -1)) <
					    0 || (uint64_t)off < f->expect)
						fatalx("B7: bad output");
					f->gap += (uint64_t)off - f->expect;
					f->expect = (uint64_t)off + dn;
					f->got += dn;
				} else if (mp_type_is(o, "exit")) {
					f->done = 1;
					ndone++;
					tlast = now_ms();
					(void)epoll_ctl(ep, EPOLL_CTL_DEL,
					    f->ws.fd, NULL);
					break;
				}
			}
			if (rc == -1)
				fatalx("B7: closed before exit (code %d)",
				    f->ws.close_code);
		}
	}
	close(ep);
	for (i = 0; i < nact; i++) {
		bytes += c[i].got;
		gaps += c[i].gap;
		if (c[i].got + c[i].gap != total)
			lost++;
	}
	if (lost > 0)
		note("B7%s: %d clients got exit before offset %llu (the "
		    "output's end)", stalled ? " stalled" : "", lost,
		    (unsigned long long)total);
	for (i = 0; i < nclients; i++)
		ws_close(&c[i].ws);
	free(c);
	http_close(&h);
	(void)sess_delete_all();
	*secs = (tlast - t0) / 1e3;
	*delivered = (double)bytes / ((double)total * nact);
	(void)gaps;
	return ((double)bytes / *secs / 1e9);
}

void
bench_b7(void)
{
	uint64_t	 total = bench_quick ? 128 * MIB : GIB;
	struct figure	*fagg, *fstall, *fdel0, *fdel1, *fone, *fdone;
	double		 a0, a1, a2, d0, d1, d2, s0, s1, s2;
	char		 name[96];
	int		 r;

	snprintf(name, sizeof(name), "fan-out %d clients, %llu MiB: aggregate",
	    B7_CLIENTS, (unsigned long long)(total / MIB));
	fagg = fig_new("B7", name, "GB/s", NULL, NULL, 0, 0);
	snprintf(name, sizeof(name), "fan-out, one client stalled: aggregate "
	    "of %d", B7_CLIENTS - 1);
	fstall = fig_new("B7", name, "GB/s", "the unstalled aggregate", ">=",
	    0.9, 0);
	fdel0 = fig_new("B7", "context: share of output delivered, unstalled",
	    "%", NULL, NULL, 0, 0);
	fdel1 = fig_new("B7", "context: share of output delivered, stalled",
	    "%", NULL, NULL, 0, 0);
	fone = fig_new("B7", "context: the same session, 1 client", "GB/s",
	    NULL, NULL, 0, 0);
	fdone = fig_new("B7", "context: share of output delivered, 1 client",
	    "%", NULL, NULL, 0, 0);
	for (r = 0; bench_more_runs("B7", r, 90); r++) {
		a0 = fanout_run(total, B7_CLIENTS, 0, &d0, &s0);
		a1 = fanout_run(total, B7_CLIENTS, 1, &d1, &s1);
		a2 = fanout_run(total, 1, 0, &d2, &s2);
		fig_run(fagg, a0, NAN);
		fig_run(fstall, a1, a0);
		fig_run(fdel0, d0 * 100, NAN);
		fig_run(fdel1, d1 * 100, NAN);
		fig_run(fone, a2, NAN);
		fig_run(fdone, d2 * 100, NAN);
		progress("B7 run %d: unstalled %.2f GB/s in %.2f s (%.1f%% "
		    "delivered); stalled %.2f GB/s in %.2f s (%.1f%%); 1 client "
		    "%.2f GB/s in %.2f s (%.1f%%)", r + 1, a0, s0, d0 * 100, a1,
		    s1, d1 * 100, a2, s2, d2 * 100);
		check_interrupt();
	}
}
