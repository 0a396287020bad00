/*
 * fuzz_wsmsg.c: libFuzzer target for the msgpack message decoders.
 *
 * Every input goes two ways.  As one WebSocket message to wsmsg_decode():
 * a decoded message must hold what its type promises (stdin data inside
 * the input, resize within 1-SPAWNREQ_SIZE_MAX, a signal 1-64, a start
 * that spawnreq_decode() then checks as an exec stream would), and the map
 * must convert to JSON with jsonmp_to_json() or be refused.  And as the
 * byte stream of a control channel: written to one end of a socketpair,
 * with one descriptor attached to the first byte, then read with
 * ctl_read() and taken apart with ctl_next() until it runs out or a frame
 * is malformed.  Every frame ctl_next() returns must be a map, carry a
 * descriptor (close-on-exec) exactly when it says "fd":true, and arrive
 * unchanged when sent on with ctl_send().  No descriptor may leak.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <msgpack.h>

#include "ctl.h"
#include "jsonmp.h"
#include "signame.h"
#include "spawnreq.h"
#include "wsmsg.h"
#include "fuzz.h"

#define FUZZ_CTL_MAX	(64 * 1024)	/* fits in a socket's buffer */

/* The first value of key in map o, or NULL. */
static const msgpack_object *
fuzz_get(const msgpack_object *o, const char *key)
{
	const msgpack_object	*k;
	size_t			 len = strlen(key);
	uint32_t		 i;

	for (i = 0; i < o->via.map.size; i++) {
		k = &o->via.map.ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == len &&
		    memcmp(k->via.str.ptr, key, len) == 0)
			return (&o->via.map.ptr[i].val);
	}
	return (NULL);
}

/* JSON for a decoded object, if it converts, packed again for coverage. */
static void
fuzz_json(const msgpack_object *o)
{
	msgpack_sbuffer	 sb;
	msgpack_packer	 pk;
	json_t		*j;

	if ((j = jsonmp_to_json(o)) == NULL)
		return;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	FUZZ_CHECK(jsonmp_pack(&pk, j) == 0);
	msgpack_sbuffer_destroy(&sb);
	json_decref(j);
}

static void
fuzz_ws(const uint8_t *data, size_t size)
{
	struct wsmsg		 m;
	const msgpack_object	*o, *type;
	const char		*names[] = { "start", "stdin", "eof",
	    "resize", "signal" };
	static const char *const stdin_keys[] = { "type", "data", NULL };
	static const char *const eof_keys[] = { "type", NULL };
	static const char *const resize_keys[] = { "type", "cols", "rows",
	    NULL };
	static const char *const signal_keys[] = { "type", "signal", NULL };
	const char *const	*keys[] = { NULL, stdin_keys, eof_keys,
	    resize_keys, signal_keys };
	char			*buf, why[256];

	if ((buf = malloc(size > 0 ? size : 1)) == NULL)
		return;
	memcpy(buf, data, size);
	memset(why, 'x', sizeof(why));
	if (wsmsg_decode(buf, size, &m, why, sizeof(why)) == -1) {
		FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL);
		FUZZ_CHECK(why[0] != '\0');
		FUZZ_CHECK(fuzz_utf8_valid(why, strlen(why)));
		FUZZ_CHECK(m.up.zone == NULL);
		free(buf);
		return;
	}

	o = &m.up.data;
	FUZZ_CHECK(o->type == MSGPACK_OBJECT_MAP);
	FUZZ_CHECK(m.type >= WSMSG_START && m.type <= WSMSG_SIGNAL);
	type = fuzz_get(o, "type");
	FUZZ_CHECK(type != NULL && type->type == MSGPACK_OBJECT_STR);
	FUZZ_CHECK(type->via.str.size == strlen(names[m.type]) &&
	    memcmp(type->via.str.ptr, names[m.type],
	    type->via.str.size) == 0);
	/* Only the fields each message defines (a start's: spawnreq's). */
	FUZZ_CHECK(m.type == WSMSG_START || fuzz_keys_in(o, keys[m.type]));
	switch (m.type) {
	case WSMSG_STDIN:
		if (m.len > 0)
			FUZZ_CHECK(m.data >= buf &&
			    m.len <= size - (size_t)(m.data - buf));
		break;
	case WSMSG_RESIZE:
		FUZZ_CHECK(m.cols >= 1 && m.cols <= SPAWNREQ_SIZE_MAX);
		FUZZ_CHECK(m.rows >= 1 && m.rows <= SPAWNREQ_SIZE_MAX);
		break;
	case WSMSG_SIGNAL:
		FUZZ_CHECK(m.signo >= 1 && m.signo <= 64);
		break;
	case WSMSG_START:
		fuzz_spawnreq(o, SPAWN_STREAM, 0);
		break;
	default:
		break;
	}
	fuzz_json(o);
	wsmsg_free(&m);
	free(buf);
}

/* The lowest free descriptor number. */
static int
fuzz_lowest_fd(void)
{
	int	fd;

	FUZZ_CHECK((fd = dup(0)) != -1);
	close(fd);
	return (fd);
}

/* Write size bytes to fd, with desc attached to the first byte. */
static void
fuzz_send_fd(int fd, const uint8_t *data, size_t size, int desc)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct cmsghdr	*cmsg;
	ssize_t		 n;

	memset(&msg, 0, sizeof(msg));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = (void *)data;
	iov.iov_len = size;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &desc, sizeof(int));
	n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	FUZZ_CHECK(n >= 0 && (size_t)n == size);
}

/*
 * Send o (with a copy of fd, if not -1) over the echo pair and expect it
 * back: the same bytes when packed again (not msgpack_object_equal(),
 * for which a NaN differs from itself).
 */
static void
fuzz_echo(struct ctl *out, struct ctl *in, const msgpack_object *o, int fd)
{
	msgpack_sbuffer		 sb, sb2;
	msgpack_packer		 pk;
	msgpack_unpacked	 up;
	int			 back, n;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	FUZZ_CHECK(msgpack_pack_object(&pk, *o) == 0);
	FUZZ_CHECK(ctl_send(out, &sb, fd == -1 ? -1 :
	    fcntl(fd, F_DUPFD_CLOEXEC, 0)) == 0);
	FUZZ_CHECK(ctl_flush(out) == 0);

	msgpack_unpacked_init(&up);
	while ((n = ctl_next(in, &up, &back)) == 0)
		FUZZ_CHECK(ctl_read(in) == 1);
	FUZZ_CHECK(n == 1);
	msgpack_sbuffer_init(&sb2);
	msgpack_packer_init(&pk, &sb2, msgpack_sbuffer_write);
	FUZZ_CHECK(msgpack_pack_object(&pk, up.data) == 0);
	FUZZ_CHECK(sb2.size == sb.size &&
	    memcmp(sb2.data, sb.data, sb.size) == 0);
	FUZZ_CHECK((fd == -1) == (back == -1));
	if (back != -1)
		close(back);
	msgpack_sbuffer_destroy(&sb2);
	msgpack_sbuffer_destroy(&sb);
	msgpack_unpacked_destroy(&up);
}

static void
fuzz_ctl(const uint8_t *data, size_t size)
{
	struct ctl		 c, out, in;
	msgpack_unpacked	 up;
	const msgpack_object	*want, *wantn;
	int			 sv[2], ev[2], p[2], lowest, fd, r, n;
	char			*frame;

	if (size == 0)
		return;
	if (size > FUZZ_CTL_MAX)
		size = FUZZ_CTL_MAX;
	lowest = fuzz_lowest_fd();

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sv) == 0);
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    ev) == 0);
	FUZZ_CHECK(pipe2(p, O_CLOEXEC) == 0);
	fuzz_send_fd(sv[0], data, size, p[0]);
	close(p[0]);
	close(p[1]);
	FUZZ_CHECK(shutdown(sv[0], SHUT_WR) == 0);

	ctl_init(&c, sv[1]);
	ctl_init(&out, ev[0]);
	ctl_init(&in, ev[1]);
	msgpack_unpacked_init(&up);
	n = 0;
	do {
		if ((r = ctl_read(&c)) == -1)
			break;
		FUZZ_CHECK(r == 0 || r == 1);
		while ((n = ctl_next(&c, &up, &fd)) == 1) {
			FUZZ_CHECK(up.data.type == MSGPACK_OBJECT_MAP);
			/* "fd":true takes one; so does "fds":1 (ctl_next
			 * refuses frames that ask for more). */
			want = fuzz_get(&up.data, "fd");
			wantn = fuzz_get(&up.data, "fds");
			FUZZ_CHECK((fd != -1) == ((want != NULL &&
			    want->type == MSGPACK_OBJECT_BOOLEAN &&
			    want->via.boolean) || (wantn != NULL &&
			    wantn->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
			    wantn->via.u64 == 1)));
			if (fd != -1)
				FUZZ_CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC);
			fuzz_echo(&out, &in, &up.data, fd);
			fuzz_json(&up.data);
			/* The frame's bytes outlive the next frame if taken. */
			frame = ctl_take_frame(&c);
			FUZZ_CHECK(frame != NULL);
			if (fd != -1)
				close(fd);
			msgpack_unpacked_destroy(&up);
			msgpack_unpacked_init(&up);
			free(frame);
		}
		FUZZ_CHECK(n == 0 || n == -1);
	} while (r == 1 && n == 0);
	msgpack_unpacked_destroy(&up);

	ctl_close(&c);
	ctl_close(&out);
	ctl_close(&in);
	close(sv[0]);
	FUZZ_CHECK(fuzz_lowest_fd() == lowest);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_ws(data, size);
	fuzz_ctl(data, size);
	return (0);
}
