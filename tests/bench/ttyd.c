/*
 * ttyd.c: B4's peer.  With LODGE_BENCH_TTYD naming a ttyd executable (built
 * by hand from ttyd's source; nothing of ttyd's is in this tree), B4 types
 * into it as a fourth WebSocket typist in the same turns, running the same
 * command: ttyd's "tty" subprotocol, its JSON hello, each key sent as
 * "0" + the byte and its echo read back as "0" + the byte.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "bench.h"

/* A loopback port that was free a moment ago. */
static int
ttyd_port(void)
{
	int	fd, port;

	fd = floor_listen(&port);
	close(fd);
	return (port);
}

/* ttyd serving cmd, writable, on loopback: its pid and *port. */
pid_t
ttyd_start(const char *ttyd, const char *cmd, int *port)
{
	char	 pstr[16];
	char	*argv[] = { (char *)ttyd, "-W", "-i", "lo", "-p", pstr,
		    "sh", "-c", (char *)cmd, NULL };
	pid_t	 pid;
	int	 fd, tries;

	*port = ttyd_port();
	snprintf(pstr, sizeof(pstr), "%d", *port);
	pid = spawn_cmd(argv, -1, -1, -1);
	for (tries = 0; (fd = tcp_connect(*port)) == -1; tries++) {
		if (tries == 250)
			fatalx("ttyd (%s) is not listening on %d", ttyd,
			    *port);
		usleep(20000);
	}
	close(fd);
	return (pid);
}

void
ttyd_stop(pid_t pid)
{
	(void)kill(pid, SIGTERM);
	wait_pid(pid, NULL);
}

/* The next message of ttyd's that is output ('0'): its data. */
static void
ttyd_output(struct ws *w, const unsigned char **d, size_t *dn)
{
	const unsigned char	*p;
	size_t			 n;

	do {
		if (ws_recv(w, &p, &n) != 1)
			fatalx("ttyd: closed");
	} while (n == 0 || p[0] != '0');
	*d = p + 1;
	*dn = n - 1;
}

/* Connect, say hello (which starts the command), skip to its ready mark. */
void
ttyd_open(struct ws *w, int port)
{
	static const char	 hello[] = "{\"AuthToken\":\"\",\"columns\":80,"
				    "\"rows\":24}";
	const unsigned char	*d;
	size_t			 dn;

	if (ws_open_proto(w, port, "/ws", "tty") == -1)
		fatalx("ttyd: handshake failed");
	if (ws_send(w, hello, sizeof(hello) - 1) == -1)
		fatalx("ttyd: send failed");
	ttyd_output(w, &d, &dn);
}

/* As keystrokes(), in ttyd's framing. */
void
ttyd_keystrokes(struct ws *w, struct samples *lat, int nrt, int warm)
{
	const unsigned char	*d;
	unsigned char		 msg[2] = { '0', 0 };
	size_t			 dn;
	double			 t0;
	int			 i;

	for (i = -warm; i < nrt; i++) {
		msg[1] = (unsigned char)('a' + (i & 15));
		t0 = now_ms();
		if (ws_send(w, msg, 2) == -1)
			fatalx("ttyd: send failed");
		ttyd_output(w, &d, &dn);
		if (i >= 0)
			samples_add(lat, (now_ms() - t0) * 1e3);
		if (dn != 1 || d[0] != msg[1])
			fatalx("ttyd: echo of %c is %zu bytes", msg[1], dn);
		if ((i & 1023) == 0)
			check_interrupt();
	}
}
