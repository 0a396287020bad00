/*
 * ctl.c: control frames and descriptor passing (see ctl.h).
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <arpa/inet.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "mpack.h"

void
ctl_init(struct ctl *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->qtail = &c->qhead;
}

static void
ctl_close_fds(const int *fds, int nfds)
{
	int	i;

	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

void
ctl_close(struct ctl *c)
{
	struct ctl_frame	*f;

	while ((f = c->qhead) != NULL) {
		c->qhead = f->next;
		ctl_close_fds(f->fds, f->nfds);
		free(f->buf);
		free(f);
	}
	c->qtail = &c->qhead;
	c->qbytes = 0;
	ctl_close_fds(c->fds, c->nfds);
	c->nfds = 0;
	c->rlen = 0;
	ctl_shrink(c);
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
}

/*
 * Give back the receive buffer and the last frame while no partial frame
 * waits: a peer that speaks seldom (an idle session's worker, to the
 * front) then costs no buffer between its messages.
 */
void
ctl_shrink(struct ctl *c)
{
	if (c->rlen != 0)
		return;
	free(c->rbuf);
	c->rbuf = NULL;
	c->rcap = 0;
	free(c->frame);
	c->frame = NULL;
}

int
ctl_pending(const struct ctl *c)
{
	return (c->qhead != NULL);
}

int
ctl_send(struct ctl *c, const msgpack_sbuffer *sb, int fd)
{
	struct ctl_frame	*f = NULL;
	uint32_t		 n;
	int			 nfds = fd != -1;

	if (c->fd == -1 || sb->size > CTL_FRAME_MAX ||
	    c->qbytes + sb->size > CTL_QUEUE_MAX ||
	    (f = calloc(1, sizeof(*f))) == NULL ||
	    (f->buf = malloc(4 + sb->size)) == NULL) {
		free(f);
		ctl_close_fds(&fd, nfds);
		return (-1);
	}
	n = htonl((uint32_t)sb->size);
	memcpy(f->buf, &n, 4);
	memcpy(f->buf + 4, sb->data, sb->size);
	f->len = 4 + sb->size;
	f->fds[0] = fd;
	f->nfds = nfds;
	*c->qtail = f;
	c->qtail = &f->next;
	c->qbytes += f->len;
	return (ctl_flush(c) == -1 ? -1 : 0);
}

int
ctl_flush(struct ctl *c)
{
	struct ctl_frame	*f;
	struct msghdr		 msg;
	struct iovec		 iov;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * CTL_FRAME_FDS)];
	} cm;
	struct cmsghdr		*cmsg;
	ssize_t			 n;

	while ((f = c->qhead) != NULL) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = f->buf + f->off;
		iov.iov_len = f->len - f->off;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		if (f->nfds > 0) {
			memset(&cm, 0, sizeof(cm));
			msg.msg_control = cm.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * f->nfds);
			cmsg = CMSG_FIRSTHDR(&msg);
			cmsg->cmsg_level = SOL_SOCKET;
			cmsg->cmsg_type = SCM_RIGHTS;
			cmsg->cmsg_len = CMSG_LEN(sizeof(int) * f->nfds);
			memcpy(CMSG_DATA(cmsg), f->fds, sizeof(int) * f->nfds);
		}
		n = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return (1);
			return (-1);
		}
		if (f->nfds > 0) {
			/* The descriptors went with the first byte. */
			ctl_close_fds(f->fds, f->nfds);
			f->nfds = 0;
		}
		f->off += (size_t)n;
		if (f->off < f->len)
			continue;
		c->qhead = f->next;
		if (c->qhead == NULL)
			c->qtail = &c->qhead;
		c->qbytes -= f->len;
		free(f->buf);
		free(f);
	}
	return (0);
}

int
ctl_read(struct ctl *c)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * CTL_FDS_MAX) +
				    CMSG_SPACE(sizeof(struct ucred))];
	} cm;
	struct cmsghdr	*cmsg;
	struct ucred	 cred;
	char		*nb;
	size_t		 want, nfd, i;
	ssize_t		 n;
	int		 fd;

	if (c->rcap - c->rlen < 65536) {
		want = c->rcap == 0 ? 65536 : c->rcap * 2;
		if (want > CTL_FRAME_MAX + 65536 + 4)
			want = CTL_FRAME_MAX + 65536 + 4;
		if (want <= c->rcap)
			return (-1);
		if ((nb = realloc(c->rbuf, want)) == NULL)
			return (-1);
		c->rbuf = nb;
		c->rcap = want;
	}
	memset(&msg, 0, sizeof(msg));
	iov.iov_base = c->rbuf + c->rlen;
	iov.iov_len = c->rcap - c->rlen;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	do {
		n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	} while (n == -1 && errno == EINTR);
	if (n == -1)
		return (errno == EAGAIN || errno == EWOULDBLOCK ? 2 : -1);
	for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
	    cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		if (cmsg->cmsg_level == SOL_SOCKET &&
		    cmsg->cmsg_type == SCM_CREDENTIALS &&
		    cmsg->cmsg_len == CMSG_LEN(sizeof(cred))) {
			/* The kernel's word, not the sender's (SO_PASSCRED). */
			memcpy(&cred, CMSG_DATA(cmsg), sizeof(cred));
			c->peer_pid = cred.pid;
			continue;
		}
		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int),
			    sizeof(int));
			if (c->nfds == CTL_FDS_MAX)
				close(fd);
			else
				c->fds[c->nfds++] = fd;
		}
	}
	if (msg.msg_flags & MSG_CTRUNC)
		return (-1);
	if (n == 0)
		return (0);
	c->rlen += (size_t)n;
	return (1);
}

int
ctl_nextv(struct ctl *c, msgpack_unpacked *up, int *fds, int *nfds)
{
	uint32_t		 n;
	size_t			 off = 0;
	const msgpack_object	*o;
	int64_t			 want = 0;

	*nfds = 0;
	if (c->rlen < 4)
		return (0);
	memcpy(&n, c->rbuf, 4);
	n = ntohl(n);
	if (n > CTL_FRAME_MAX || n == 0)
		return (-1);
	if (c->rlen < 4 + (size_t)n)
		return (0);
	/*
	 * Unpacked strings point into the bytes they came from, so the frame
	 * gets a buffer of its own, kept until the next call.
	 */
	free(c->frame);
	if ((c->frame = malloc(n)) == NULL)
		return (-1);
	memcpy(c->frame, c->rbuf + 4, n);
	c->frame_len = n;
	memmove(c->rbuf, c->rbuf + 4 + n, c->rlen - 4 - n);
	c->rlen -= 4 + n;
	msgpack_unpacked_destroy(up);
	msgpack_unpacked_init(up);
	if (mpack_validate(c->frame, n) == -1 ||
	    msgpack_unpack_next(up, c->frame, n, &off) !=
	    MSGPACK_UNPACK_SUCCESS || off != n ||
	    up->data.type != MSGPACK_OBJECT_MAP)
		return (-1);
	if ((o = mpack_get(&up->data, "fd")) != NULL &&
	    o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean)
		want = 1;
	else if (mpack_get(&up->data, "fds") != NULL &&
	    mpack_get_int(&up->data, "fds", 1, CTL_FRAME_FDS, &want) != 1)
		return (-1);
	if (want > c->nfds)
		return (-1);
	memcpy(fds, c->fds, want * sizeof(int));
	memmove(c->fds, c->fds + want, (c->nfds - want) * sizeof(int));
	c->nfds -= (int)want;
	*nfds = (int)want;
	return (1);
}

int
ctl_next(struct ctl *c, msgpack_unpacked *up, int *fd)
{
	int	fds[CTL_FRAME_FDS], nfds, r;

	*fd = -1;
	if ((r = ctl_nextv(c, up, fds, &nfds)) != 1)
		return (r);
	if (nfds > 1) {
		ctl_close_fds(fds, nfds);
		return (-1);
	}
	if (nfds == 1)
		*fd = fds[0];
	return (1);
}

char *
ctl_take_frame(struct ctl *c)
{
	char	*f = c->frame;

	c->frame = NULL;
	return (f);
}

int
ctl_send_wait(struct ctl *c, const msgpack_sbuffer *sb, int fd)
{
	struct pollfd	pfd;
	int		r;

	if (ctl_send(c, sb, fd) == -1)
		return (-1);
	while ((r = ctl_flush(c)) == 1) {
		pfd.fd = c->fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, 5000) <= 0)
			return (-1);
	}
	return (r);
}

static int64_t
ctl_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

int
ctl_recv_wait(struct ctl *c, msgpack_unpacked *up, int *fd, int timeout_ms)
{
	struct pollfd	pfd;
	int64_t		deadline = ctl_now_ms() + timeout_ms, left;
	int		r;

	for (;;) {
		if ((r = ctl_next(c, up, fd)) != 0)
			return (r);
		left = timeout_ms < 0 ? -1 : deadline - ctl_now_ms();
		if (timeout_ms >= 0 && left <= 0)
			return (-1);
		pfd.fd = c->fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)left) == -1 && errno != EINTR)
			return (-1);
		if ((r = ctl_read(c)) == 0 || r == -1)
			return (-1);
	}
}
