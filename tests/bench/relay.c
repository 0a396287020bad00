/*
 * relay.c: B4's floor, the least a keystroke relay can do.
 *
 * A forked child serves one WebSocket connection on a loopback TCP socket
 * and one PTY master from one epoll loop: the RFC 6455 handshake, then each
 * masked client frame unmasked and decoded as lodge's msgpack {"type":
 * "stdin","data":bin}, its data written to the PTY; what the PTY gives is
 * read and sent back as one binary frame of {"type":"stdout","offset":N,
 * "data":bin}, the shape and size of lodge's messages.  No ring, no other
 * client, no limits: what lodge takes beyond this is lodge's own cost.
 */
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <unistd.h>

#include "bench.h"

#define RELAY_BUF	(64 * 1024)

struct relay_out {
	unsigned char	*p;
	size_t		 len, cap;
};

static int
relay_out_write(void *data, const char *buf, size_t len)
{
	struct relay_out	*o = data;

	if (o->len + len > o->cap)
		return (-1);
	memcpy(o->p + o->len, buf, len);
	o->len += len;
	return (0);
}

/* Everything, on a non-blocking socket. */
static int
relay_send_all(int fd, const unsigned char *p, size_t len)
{
	struct pollfd	pfd = { fd, POLLOUT, 0 };
	ssize_t		n;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n == -1 && errno == EAGAIN)
			(void)poll(&pfd, 1, -1);
		else if (n == -1 && errno != EINTR)
			return (-1);
	}
	return (0);
}

/* The request head, answered with 101 and Sec-WebSocket-Accept. */
static int
relay_handshake(int fd)
{
	static const char	 guid[] =
				    "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	char			 head[8192], cat[128], accept[64], *line, *eoh;
	char			 reply[256], *key = NULL, *end;
	unsigned char		 dig[20];
	size_t			 len = 0;
	ssize_t			 n;
	int			 rn;

	for (;;) {
		if (len == sizeof(head) - 1)
			return (-1);
		if ((n = recv(fd, head + len, sizeof(head) - 1 - len, 0)) <= 0)
			return (-1);
		len += (size_t)n;
		head[len] = '\0';
		if ((eoh = strstr(head, "\r\n\r\n")) != NULL)
			break;
	}
	for (line = strstr(head, "\r\n"); line != NULL && line < eoh;
	    line = strstr(line + 2, "\r\n"))
		if (strncasecmp(line + 2, "Sec-WebSocket-Key:", 18) == 0)
			key = line + 20;
	if (key == NULL || eoh != head + len - 4)
		return (-1);
	while (*key == ' ')
		key++;
	if ((end = strstr(key, "\r\n")) == NULL || end - key > 64)
		return (-1);
	snprintf(cat, sizeof(cat), "%.*s%s", (int)(end - key), key, guid);
	sha1(cat, strlen(cat), dig);
	base64(dig, 20, accept);
	rn = snprintf(reply, sizeof(reply), "HTTP/1.1 101 Switching Protocols"
	    "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
	return (relay_send_all(fd, (unsigned char *)reply, (size_t)rn));
}

/* One decoded client message: its stdin goes to the PTY. */
static int
relay_input(int master, msgpack_unpacked *up, const unsigned char *p,
    size_t n)
{
	const char	*d;
	size_t		 dn;
	ssize_t		 k;

	if (msgpack_unpack_next(up, (const char *)p, n, NULL) !=
	    MSGPACK_UNPACK_SUCCESS)
		return (-1);
	if (!mp_type_is(&up->data, "stdin") ||
	    mp_bin(&up->data, "data", &d, &dn) == -1)
		return (0);
	while (dn > 0) {
		if ((k = write(master, d, dn)) > 0) {
			d += k;
			dn -= (size_t)k;
		} else if (k == -1 && errno != EAGAIN && errno != EINTR)
			return (-1);
	}
	return (0);
}

/*
 * Every whole frame in buf[0..*len), consumed; 1 on a close frame, -1 on
 * a broken one.
 */
static int
relay_frames(int master, msgpack_unpacked *up, unsigned char *buf,
    size_t *len)
{
	unsigned char	*p = buf, *mask;
	size_t		 left = *len, hl, pl, i;
	int		 op;

	for (;;) {
		if (left < 2)
			break;
		op = p[0] & 0x0f;
		pl = p[1] & 0x7f;
		hl = 2;
		if (pl == 126) {
			if (left < 4)
				break;
			pl = (size_t)p[2] << 8 | p[3];
			hl = 4;
		} else if (pl == 127)
			return (-1);		/* no keystroke is that big */
		if (!(p[1] & 0x80) || !(p[0] & 0x80))
			return (-1);		/* clients mask, and we do not
						   reassemble fragments */
		if (left < hl + 4 + pl)
			break;
		mask = p + hl;
		for (i = 0; i < pl; i++)
			mask[4 + i] ^= mask[i & 3];
		if (op == 0x8)
			return (1);
		if (op == 0x2 && relay_input(master, up, mask + 4, pl) == -1)
			return (-1);
		p += hl + 4 + pl;
		left -= hl + 4 + pl;
	}
	memmove(buf, p, left);
	*len = left;
	return (0);
}

/* What the PTY gives, as one stdout frame. */
static int
relay_output(int fd, int master, uint64_t *off, unsigned char *out,
    size_t outcap)
{
	static unsigned char	 data[RELAY_BUF];
	struct relay_out	 o;
	msgpack_packer		 pk;
	ssize_t			 n;
	size_t			 hl;

	if ((n = read(master, data, sizeof(data))) <= 0)
		return (n == -1 && (errno == EAGAIN || errno == EINTR) ?
		    0 : -1);
	o.p = out + 4;
	o.len = 0;
	o.cap = outcap - 4;
	msgpack_packer_init(&pk, &o, relay_out_write);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "type", 4);
	msgpack_pack_str_with_body(&pk, "stdout", 6);
	msgpack_pack_str_with_body(&pk, "offset", 6);
	msgpack_pack_uint64(&pk, *off);
	msgpack_pack_str_with_body(&pk, "data", 4);
	msgpack_pack_bin_with_body(&pk, data, (size_t)n);
	*off += (uint64_t)n;
	if (o.len < 126) {
		hl = 2;
		out[2] = 0x82;
		out[3] = (unsigned char)o.len;
	} else {
		hl = 4;
		out[0] = 0x82;
		out[1] = 126;
		out[2] = (unsigned char)(o.len >> 8);
		out[3] = (unsigned char)o.len;
	}
	return (relay_send_all(fd, out + 4 - hl, o.len + hl));
}

/* One epoll set reading a and b, or -1. */
static int
relay_epoll(int a, int b)
{
	struct epoll_event	ev;
	int			ep;

	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return (-1);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = a;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev) == -1)
		goto fail;
	ev.data.fd = b;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, b, &ev) == -1)
		goto fail;
	return (ep);
fail:
	close(ep);
	return (-1);
}

static void __attribute__((noreturn))
relay_serve(int lfd, int master)
{
	static unsigned char	 in[RELAY_BUF], out[RELAY_BUF + 64];
	struct epoll_event	 evs[2];
	msgpack_unpacked	 up;
	uint64_t		 off = 0;
	size_t			 inlen = 0;
	ssize_t			 n;
	int			 fd, ep, one = 1, i, k;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		_exit(1);
	close(lfd);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (relay_handshake(fd) == -1)
		_exit(1);
	(void)fcntl(fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(master, F_SETFL, O_NONBLOCK);
	msgpack_unpacked_init(&up);
	if ((ep = relay_epoll(fd, master)) == -1)
		_exit(1);
	for (;;) {
		if ((k = epoll_wait(ep, evs, 2, -1)) == -1) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		for (i = 0; i < k; i++) {
			if (evs[i].data.fd == master) {
				if (relay_output(fd, master, &off, out,
				    sizeof(out)) == -1)
					_exit(0);
				continue;
			}
			n = recv(fd, in + inlen, sizeof(in) - inlen, 0);
			if (n == -1 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n <= 0)
				_exit(0);
			inlen += (size_t)n;
			if (relay_frames(master, &up, in, &inlen) != 0)
				_exit(0);
		}
	}
}

/*
 * Start the relay of `cmd`: a PTY running it and a child serving it on a
 * loopback port; the relay's pid, the command's in *cmd_pid.
 */
pid_t
relay_start(const char *cmd, int *port, pid_t *cmd_pid)
{
	int	lfd, master;
	pid_t	pid;

	lfd = floor_listen(port);
	*cmd_pid = floor_pty_start(cmd, &master, NULL);
	if ((pid = fork()) == -1)
		fatalx("fork: %s", strerror(errno));
	if (pid == 0)
		relay_serve(lfd, master);
	pids_track(pid);
	close(lfd);
	close(master);
	return (pid);
}

void
relay_stop(pid_t relay, pid_t cmd)
{
	(void)kill(cmd, SIGKILL);
	wait_pid(cmd, NULL);
	wait_pid(relay, NULL);
}

/* Each whole message in the client's buffer: stdout data to the terminal. */
static int
relay_client_output(struct ws *w)
{
	const msgpack_object	*o;
	const unsigned char	*p;
	const char		*d;
	size_t			 n, dn;
	ssize_t			 k;
	int			 r;

	while ((r = ws_next(w, &p, &n)) == 1) {
		if ((o = ws_decode(w, p, n)) == NULL ||
		    !mp_type_is(o, "stdout") ||
		    mp_bin(o, "data", &d, &dn) == -1)
			continue;
		for (; dn > 0; d += k, dn -= (size_t)k)
			if ((k = write(1, d, dn)) <= 0)
				return (-1);
	}
	return (r);
}

/*
 * `lodge-bench --relay-client PORT [PATH]`: the terminal's end of the
 * floor, the least `lodge attach` can do.  On the terminal it is started
 * on, in raw mode, one epoll loop relays what is typed to the relay on PORT
 * as stdin messages (masked frames, the bench client's generator for the
 * keys) and writes each stdout message's data to the terminal.  So the
 * floor of a keystroke through `lodge attach` has the same processes and
 * hops: the terminal, a client, the relay, the PTY's cat.  Given PATH (and
 * the token in LODGE_TOKEN), it types into lodged's attach stream there
 * instead: the same client on a session, which splits what `lodge attach`
 * takes beyond the floor into the session's share and the CLI's.
 */
int
relay_client(int argc, char **argv)
{
	static unsigned char	 in[RELAY_BUF];
	struct epoll_event	 evs[2];
	struct termios		 tio;
	struct ws		 w;
	msgpack_sbuffer		 sb;
	const char		*token = getenv("LODGE_TOKEN");
	ssize_t			 k;
	int			 ep, i, nev;

	if (argc != 2 && argc != 3)
		return (2);
	/* the Host and Authorization of the upgrade */
	bench_port = atoi(argv[1]);
	if (token != NULL)
		snprintf(bench_token, sizeof(bench_token), "%s", token);
	if (ws_open_port(&w, bench_port, argc == 3 ? argv[2] : "/") == -1)
		return (2);
	if (tcgetattr(0, &tio) == 0) {
		cfmakeraw(&tio);
		(void)tcsetattr(0, TCSANOW, &tio);
	}
	msgpack_sbuffer_init(&sb);
	if ((ep = relay_epoll(0, w.fd)) == -1)
		return (1);
	/* the handshake's read may have taken the first messages too */
	if (relay_client_output(&w) == -1)
		return (0);
	for (;;) {
		if ((nev = epoll_wait(ep, evs, 2, -1)) == -1) {
			if (errno == EINTR)
				continue;
			return (1);
		}
		for (i = 0; i < nev; i++) {
			if (evs[i].data.fd == 0) {
				if ((k = read(0, in, sizeof(in))) <= 0)
					return (0);
				msgpack_sbuffer_clear(&sb);
				pack_stdin(&sb, in, (size_t)k);
				if (ws_send(&w, sb.data, sb.size) == -1)
					return (0);
			} else if (ws_fill(&w) <= 0 ||
			    relay_client_output(&w) == -1)
				return (0);
		}
	}
}
