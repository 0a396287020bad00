/*
 * client.c: the bench's HTTP/1.1 and WebSocket clients, over loopback TCP.
 *
 * HTTP: one request at a time on a keep-alive connection; replies must carry
 * Content-Length (lodged's always do).  WebSocket (RFC 6455): the handshake
 * checks Sec-WebSocket-Accept; client frames are masked; server frames are
 * parsed in place in a receive buffer (no copy but the kernel's), pings are
 * answered, fragmented messages are reassembled, a close is echoed.
 * Messages are msgpack maps, decoded with msgpack-c (bin data referenced in
 * place, not copied).
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define WS_TAIL_ROOM	(288 * KIB)	/* > one exec-stream frame */

size_t	ws_bufsize = 4 * MIB;		/* receive buffer of new clients */

int
tcp_connect(int port)
{
	struct sockaddr_in	sin;
	struct timeval		tv = { 120, 0 };
	int			fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return (-1);
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* A hung daemon ends the bench with an error, not a hang. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return (fd);
}

static int
write_all(int fd, const void *buf, size_t len)
{
	const char	*p = buf;
	struct pollfd	 pfd;
	ssize_t		 n;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR) {
				check_interrupt();
				continue;
			}
			if (errno == EAGAIN) {
				pfd.fd = fd;
				pfd.events = POLLOUT;
				(void)poll(&pfd, 1, 1000);
				continue;
			}
			return (-1);
		}
		p += n;
		len -= (size_t)n;
	}
	return (0);
}

/* ---- HTTP ---- */

int
http_open(struct http *h)
{
	memset(h, 0, sizeof(*h));
	if ((h->fd = tcp_connect(bench_port)) == -1)
		return (-1);
	h->cap = 64 * KIB;
	if ((h->buf = malloc(h->cap + 1)) == NULL)
		fatalx("out of memory");
	return (0);
}

/*
 * Grow h's receive buffer to size and touch its pages, outside a timed
 * call: the bench's own page faults for a large reply are not the
 * daemon's time.
 */
void
http_reserve(struct http *h, size_t size)
{
	if (size <= h->cap)
		return;
	if ((h->buf = realloc(h->buf, size + 1)) == NULL)
		fatalx("out of memory");
	memset(h->buf + h->cap, 0, size + 1 - h->cap);
	h->cap = size;
}

void
http_close(struct http *h)
{
	if (h->fd != -1)
		close(h->fd);
	free(h->buf);
	memset(h, 0, sizeof(*h));
	h->fd = -1;
}

int
http_send(struct http *h, const char *method, const char *path,
    const char *body)
{
	char	head[1024];
	size_t	blen = body != NULL ? strlen(body) : 0;
	int	n;

	n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
	    "%sContent-Length: %zu\r\n\r\n", method, path, bench_port,
	    bench_token, body != NULL ? "Content-Type: application/json\r\n" :
	    "", blen);
	if (body == NULL || (size_t)n + blen > sizeof(head))
		return (write_all(h->fd, head, (size_t)n) == -1 ||
		    (blen > 0 && write_all(h->fd, body, blen) == -1) ? -1 : 0);
	/* One segment for the whole request. */
	memcpy(head + n, body, blen);
	return (write_all(h->fd, head, (size_t)n + blen));
}

/* Read one reply: status, body (NUL-terminated, in h->buf). */
int
http_recv(struct http *h)
{
	char	*eoh = NULL, *p, *line;
	size_t	 hlen, clen = 0, need;
	ssize_t	 n;

	/* A previous reply's bytes were consumed; any extra was kept. */
	for (;;) {
		h->buf[h->len] = '\0';
		if ((eoh = strstr(h->buf, "\r\n\r\n")) != NULL)
			break;
		if (h->len == h->cap) {
			h->cap *= 2;
			if ((h->buf = realloc(h->buf, h->cap + 1)) == NULL)
				fatalx("out of memory");
		}
		n = recv(h->fd, h->buf + h->len, h->cap - h->len, 0);
		if (n == -1 && errno == EINTR) {
			check_interrupt();
			continue;
		}
		if (n <= 0)
			return (-1);
		h->len += (size_t)n;
	}
	hlen = (size_t)(eoh - h->buf) + 4;
	if (sscanf(h->buf, "HTTP/1.%*c %d", &h->status) != 1)
		return (-1);
	for (line = strstr(h->buf, "\r\n"); line != NULL && line < eoh;
	    line = strstr(line + 2, "\r\n")) {
		p = line + 2;
		if (strncasecmp(p, "Content-Length:", 15) == 0)
			clen = strtoull(p + 15, NULL, 10);
	}
	need = hlen + clen;
	if (need > h->cap) {
		h->cap = need;
		if ((h->buf = realloc(h->buf, h->cap + 1)) == NULL)
			fatalx("out of memory");
	}
	while (h->len < need) {
		n = recv(h->fd, h->buf + h->len, h->cap - h->len, 0);
		if (n == -1 && errno == EINTR) {
			check_interrupt();
			continue;
		}
		if (n <= 0)
			return (-1);
		h->len += (size_t)n;
	}
	/* The caller reads the body before the next call. */
	h->body = h->buf + hlen;
	h->body_len = clen;
	if (h->len > need)
		fatalx("unexpected bytes after an HTTP reply");
	h->len = 0;
	h->buf[need] = '\0';
	return (0);
}

int
http_call(struct http *h, const char *method, const char *path,
    const char *body)
{
	if (http_send(h, method, path, body) == -1)
		return (-1);
	return (http_recv(h));
}

/* ---- SHA-1 and base64, for Sec-WebSocket-Accept ---- */

#define ROL(x, n)	(((x) << (n)) | ((x) >> (32 - (n))))

static void
sha1_block(uint32_t h[5], const unsigned char *b)
{
	uint32_t	w[80], a, bb, c, d, e, f, k, t;
	int		i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
		    (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (i = 16; i < 80; i++)
		w[i] = ROL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0]; bb = h[1]; c = h[2]; d = h[3]; e = h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20) {
			f = (bb & c) | (~bb & d);
			k = 0x5A827999;
		} else if (i < 40) {
			f = bb ^ c ^ d;
			k = 0x6ED9EBA1;
		} else if (i < 60) {
			f = (bb & c) | (bb & d) | (c & d);
			k = 0x8F1BBCDC;
		} else {
			f = bb ^ c ^ d;
			k = 0xCA62C1D6;
		}
		t = ROL(a, 5) + f + e + k + w[i];
		e = d; d = c; c = ROL(bb, 30); bb = a; a = t;
	}
	h[0] += a; h[1] += bb; h[2] += c; h[3] += d; h[4] += e;
}

void
sha1(const void *data, size_t len, unsigned char out[20])
{
	uint32_t		 h[5] = { 0x67452301, 0xEFCDAB89, 0x98BADCFE,
				    0x10325476, 0xC3D2E1F0 };
	const unsigned char	*p = data;
	unsigned char		 tail[128];
	size_t			 rest, tl, i;
	uint64_t		 bits = (uint64_t)len * 8;

	for (; len >= 64; p += 64, len -= 64)
		sha1_block(h, p);
	rest = len;
	memset(tail, 0, sizeof(tail));
	memcpy(tail, p, rest);
	tail[rest] = 0x80;
	tl = rest + 1 + 8 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[tl - 1 - i] = (unsigned char)(bits >> (8 * i));
	sha1_block(h, tail);
	if (tl == 128)
		sha1_block(h, tail + 64);
	for (i = 0; i < 5; i++) {
		out[4 * i] = (unsigned char)(h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(h[i] >> 8);
		out[4 * i + 3] = (unsigned char)h[i];
	}
}

void
base64(const unsigned char *in, size_t len, char *out)
{
	static const char	 tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t			 i;
	uint32_t		 v;

	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = tab[(v >> 6) & 63];
		*out++ = tab[v & 63];
	}
	if (len - i == 1) {
		v = (uint32_t)in[i] << 16;
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = '=';
		*out++ = '=';
	} else if (len - i == 2) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = tab[(v >> 6) & 63];
		*out++ = '=';
	}
	*out = '\0';
}

/* ---- WebSocket ---- */

static uint32_t
ws_rand(struct ws *w)
{
	uint32_t	x = w->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return (w->rng = x);
}

/* Connect and send the upgrade; key receives the Sec-WebSocket-Key. */
int
ws_handshake_send(struct ws *w, const char *path, char *key, size_t keylen)
{
	unsigned char	raw[16];
	char		req[1024];
	int		i, n;

	if (keylen < 25)
		return (-1);
	for (i = 0; i < 16; i++)
		raw[i] = (unsigned char)ws_rand(w);
	base64(raw, 16, key);
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
	    "Sec-WebSocket-Version: 13\r\n%s%s%sAuthorization: Bearer %s"
	    "\r\n\r\n", path, bench_port, key,
	    w->proto != NULL ? "Sec-WebSocket-Protocol: " : "",
	    w->proto != NULL ? w->proto : "", w->proto != NULL ? "\r\n" : "",
	    bench_token);
	return (write_all(w->fd, req, (size_t)n));
}

/* Read the 101 and check the accept key; frame bytes stay buffered. */
int
ws_handshake_recv(struct ws *w, const char *key)
{
	static const char	 guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	char			 cat[128], want[64], *eoh, *p, *line;
	unsigned char		 dig[20];
	ssize_t			 n;
	int			 status = 0, ok = 0;

	for (;;) {
		w->buf[w->end] = '\0';
		if ((eoh = strstr((char *)w->buf, "\r\n\r\n")) != NULL)
			break;
		if (w->end >= 16384)
			return (-1);
		n = recv(w->fd, w->buf + w->end, 16384 - w->end, 0);
		if (n == -1 && errno == EINTR) {
			check_interrupt();
			continue;
		}
		if (n <= 0) {
			fprintf(stderr, "lodge-bench: upgrade: %s after %zu "
			    "bytes\n", n == 0 ? "connection closed" :
			    strerror(errno), w->end);
			return (-1);
		}
		w->end += (size_t)n;
	}
	if (sscanf((char *)w->buf, "HTTP/1.1 %d", &status) != 1 ||
	    status != 101) {
		fprintf(stderr, "lodge-bench: upgrade refused: %.200s\n",
		    (char *)w->buf);
		return (-1);
	}
	snprintf(cat, sizeof(cat), "%s%s", key, guid);
	sha1(cat, strlen(cat), dig);
	base64(dig, 20, want);
	for (line = strstr((char *)w->buf, "\r\n"); line != NULL &&
	    line < eoh; line = strstr(line + 2, "\r\n")) {
		p = line + 2;
		if (strncasecmp(p, "Sec-WebSocket-Accept:", 21) == 0) {
			p += 21;
			while (*p == ' ')
				p++;
			ok = strncmp(p, want, strlen(want)) == 0;
		}
	}
	if (!ok) {
		fprintf(stderr, "lodge-bench: bad Sec-WebSocket-Accept\n");
		return (-1);
	}
	w->start = (size_t)(eoh - (char *)w->buf) + 4;
	return (0);
}

int
ws_open(struct ws *w, const char *path)
{
	return (ws_open_port(w, bench_port, path));
}

int
ws_open_port(struct ws *w, int port, const char *path)
{
	return (ws_open_proto(w, port, path, NULL));
}

/* The same, asking for a subprotocol (NULL: none). */
int
ws_open_proto(struct ws *w, int port, const char *path, const char *proto)
{
	char	key[32];

	memset(w, 0, sizeof(*w));
	w->fd = -1;
	w->proto = proto;
	w->rng = (uint32_t)(now_ms() * 1000.0) | 1;
	w->rng ^= (uint32_t)getpid() << 16;
	msgpack_unpacked_init(&w->up);
	w->cap = ws_bufsize < WS_TAIL_ROOM * 2 ? WS_TAIL_ROOM * 2 : ws_bufsize;
	if ((w->buf = malloc(w->cap + 1)) == NULL)
		fatalx("out of memory");
	if ((w->fd = tcp_connect(port)) == -1)
		return (-1);
	if (ws_handshake_send(w, path, key, sizeof(key)) == -1)
		return (-1);
	return (ws_handshake_recv(w, key));
}

void
ws_close(struct ws *w)
{
	unsigned char	frame[8];
	uint32_t	m;

	if (w->fd != -1) {
		if (!w->closed) {
			/* Close 1000, masked, then drop the connection. */
			m = ws_rand(w);
			frame[0] = 0x88;
			frame[1] = 0x80 | 2;
			memcpy(frame + 2, &m, 4);
			frame[6] = 0x03 ^ frame[2];
			frame[7] = 0xe8 ^ frame[3];
			(void)send(w->fd, frame, 8, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		close(w->fd);
	}
	free(w->buf);
	free(w->frag);
	msgpack_unpacked_destroy(&w->up);
	memset(w, 0, sizeof(*w));
	w->fd = -1;
}

static int
ws_send_frame(struct ws *w, int opcode, const void *data, size_t len)
{
	unsigned char	 stackbuf[4096], *f, mask[4];
	const unsigned char *d = data;
	size_t		 hl, i;
	uint32_t	 m = ws_rand(w);
	int		 rc;

	f = len + 14 <= sizeof(stackbuf) ? stackbuf : malloc(len + 14);
	if (f == NULL)
		fatalx("out of memory");
	f[0] = (unsigned char)(0x80 | opcode);
	if (len < 126) {
		f[1] = (unsigned char)(0x80 | len);
		hl = 2;
	} else if (len < 65536) {
		f[1] = 0x80 | 126;
		f[2] = (unsigned char)(len >> 8);
		f[3] = (unsigned char)len;
		hl = 4;
	} else {
		f[1] = 0x80 | 127;
		for (i = 0; i < 8; i++)
			f[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
		hl = 10;
	}
	memcpy(mask, &m, 4);
	memcpy(f + hl, mask, 4);
	hl += 4;
	for (i = 0; i < len; i++)
		f[hl + i] = d[i] ^ mask[i & 3];
	rc = write_all(w->fd, f, hl + len);
	if (f != stackbuf)
		free(f);
	return (rc);
}

int
ws_send(struct ws *w, const void *data, size_t len)
{
	return (ws_send_frame(w, 2, data, len));
}

static void
ws_frag_add(struct ws *w, const unsigned char *p, size_t n)
{
	if (w->fraglen + n > w->fragcap) {
		w->fragcap = (w->fraglen + n) * 2;
		if ((w->frag = realloc(w->frag, w->fragcap)) == NULL)
			fatalx("out of memory");
	}
	memcpy(w->frag + w->fraglen, p, n);
	w->fraglen += n;
}

/*
 * The next complete message in the buffer: 1 and its payload (valid until
 * the next ws_fill), 0 when more bytes are needed, -1 once closed or on a
 * protocol error.
 */
int
ws_next(struct ws *w, const unsigned char **pp, size_t *np)
{
	unsigned char	*b;
	size_t		 avail, hl, i;
	uint64_t	 len;
	int		 fin, op;

	for (;;) {
		if (w->closed)
			return (-1);
		b = w->buf + w->start;
		avail = w->end - w->start;
		if (avail < 2)
			return (0);
		fin = b[0] & 0x80;
		op = b[0] & 0x0f;
		if (b[1] & 0x80) {
			fprintf(stderr, "lodge-bench: masked server frame\n");
			return (-1);
		}
		len = b[1] & 0x7f;
		hl = 2;
		if (len == 126) {
			if (avail < 4)
				return (0);
			len = (uint64_t)b[2] << 8 | b[3];
			hl = 4;
		} else if (len == 127) {
			if (avail < 10)
				return (0);
			for (len = 0, i = 0; i < 8; i++)
				len = len << 8 | b[2 + i];
			hl = 10;
		}
		if (avail < hl + len) {
			/* Make room for the whole frame. */
			if (hl + len + WS_TAIL_ROOM > w->cap) {
				w->cap = hl + len + WS_TAIL_ROOM;
				if ((w->buf = realloc(w->buf, w->cap + 1)) ==
				    NULL)
					fatalx("out of memory");
			}
			return (0);
		}
		w->start += hl + len;
		b += hl;
		switch (op) {
		case 0x9:	/* ping */
			if (ws_send_frame(w, 0xA, b, len) == -1)
				return (-1);
			continue;
		case 0xA:
			continue;
		case 0x8:
			w->close_code = len >= 2 ? (b[0] << 8 | b[1]) : 1005;
			(void)ws_send_frame(w, 0x8, b, len >= 2 ? 2 : 0);
			w->closed = 1;
			return (-1);
		case 0x1:
		case 0x2:
			if (w->fragging) {
				fprintf(stderr, "lodge-bench: interleaved "
				    "message\n");
				return (-1);
			}
			if (fin) {
				*pp = b;
				*np = len;
				return (1);
			}
			w->fragging = 1;
			w->fraglen = 0;
			ws_frag_add(w, b, len);
			continue;
		case 0x0:
			if (!w->fragging)
				return (-1);
			ws_frag_add(w, b, len);
			if (!fin)
				continue;
			w->fragging = 0;
			*pp = w->frag;
			*np = w->fraglen;
			return (1);
		default:
			fprintf(stderr, "lodge-bench: opcode %d\n", op);
			return (-1);
		}
	}
}

/* One recv into the buffer: bytes read, 0 at EOF, -1 on error/EAGAIN. */
ssize_t
ws_fill(struct ws *w)
{
	ssize_t	n;

	if (w->start == w->end)
		w->start = w->end = 0;
	else if (w->cap - w->end < WS_TAIL_ROOM) {
		memmove(w->buf, w->buf + w->start, w->end - w->start);
		w->end -= w->start;
		w->start = 0;
	}
	n = recv(w->fd, w->buf + w->end, w->cap - w->end, 0);
	if (n > 0)
		w->end += (size_t)n;
	return (n);
}

/* Block until a message: 1, or -1 when closed, at EOF or on error. */
int
ws_recv(struct ws *w, const unsigned char **pp, size_t *np)
{
	ssize_t	n;
	int	r;

	for (;;) {
		if ((r = ws_next(w, pp, np)) != 0)
			return (r);
		n = ws_fill(w);
		if (n == -1 && errno == EINTR) {
			check_interrupt();
			continue;
		}
		if (n <= 0)
			return (-1);
	}
}

/* The message as a msgpack map, or NULL. */
const msgpack_object *
ws_decode(struct ws *w, const unsigned char *p, size_t n)
{
	size_t	off = 0;

	if (msgpack_unpack_next(&w->up, (const char *)p, n, &off) !=
	    MSGPACK_UNPACK_SUCCESS || w->up.data.type != MSGPACK_OBJECT_MAP)
		return (NULL);
	return (&w->up.data);
}

const msgpack_object *
mp_get(const msgpack_object *o, const char *key)
{
	size_t		 kl = strlen(key);
	uint32_t	 i;
	const msgpack_object_kv *kv;

	if (o == NULL || o->type != MSGPACK_OBJECT_MAP)
		return (NULL);
	for (i = 0; i < o->via.map.size; i++) {
		kv = &o->via.map.ptr[i];
		if (kv->key.type == MSGPACK_OBJECT_STR &&
		    kv->key.via.str.size == kl &&
		    memcmp(kv->key.via.str.ptr, key, kl) == 0)
			return (&kv->val);
	}
	return (NULL);
}

int
mp_type_is(const msgpack_object *o, const char *type)
{
	const msgpack_object	*t = mp_get(o, "type");
	size_t			 tl = strlen(type);

	return (t != NULL && t->type == MSGPACK_OBJECT_STR &&
	    t->via.str.size == tl && memcmp(t->via.str.ptr, type, tl) == 0);
}

int64_t
mp_int(const msgpack_object *o, const char *key, int64_t dflt)
{
	const msgpack_object	*v = mp_get(o, key);

	if (v == NULL)
		return (dflt);
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		return ((int64_t)v->via.u64);
	if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return (v->via.i64);
	return (dflt);
}

int
mp_bin(const msgpack_object *o, const char *key, const char **p, size_t *n)
{
	const msgpack_object	*v = mp_get(o, key);

	if (v == NULL)
		return (-1);
	if (v->type == MSGPACK_OBJECT_BIN) {
		*p = v->via.bin.ptr;
		*n = v->via.bin.size;
		return (0);
	}
	if (v->type == MSGPACK_OBJECT_STR) {
		*p = v->via.str.ptr;
		*n = v->via.str.size;
		return (0);
	}
	return (-1);
}
