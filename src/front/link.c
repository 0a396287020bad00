/*
 * link.c: the front's end of a session worker's control connection, on
 * the front's libuv loop directly rather than as a libwebsockets raw file.
 *
 * libwebsockets 4.1.6 as Debian builds it (with _DEBUG) checks, each time
 * it closes a descriptor, that no other wsi still holds it: a walk of its
 * whole fd table, reading every wsi in it.  With a wsi per session that
 * walk was at every client connection's close (each attach, each stream),
 * 86 us at 10,000 sessions.  The links are most of the front's
 * descriptors and need nothing of lws (the front frames them itself), so
 * they are kept out of its table: lws holds only clients, listeners and
 * the template's channel.  The walk is over the table's size, not its
 * entries, so the links' descriptors are also numbered above it
 * (link_fd), and the table is sized for the clients alone.
 */
#include <sys/types.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <uv.h>

#include "front.h"

struct link {
	uv_poll_t	 poll;
	int		 fd;
	int		 events;	/* UV_READABLE, and UV_WRITABLE if asked */
	int		 closing;
	struct session	*s;
};

static void
link_poll_cb(uv_poll_t *h, int status, int events)
{
	struct link	*l = h->data;

	if (l->closing)
		return;
	/* An error: the read says what it is (EOF or an errno), and closes. */
	if (status < 0 || (events & (UV_READABLE | UV_DISCONNECT)))
		registry_readable(l->s);
	if (l->closing || !(events & UV_WRITABLE))
		return;
	l->events &= ~UV_WRITABLE;
	(void)uv_poll_start(&l->poll, l->events, link_poll_cb);
	registry_writeable(l->s);
}

/*
 * fd, or a copy of it numbered above lws's table (main.c), which then
 * needs to cover only the clients' descriptors.
 */
int
link_fd(int fd)
{
	int	up;

	if (fd >= front->link_fd_base ||
	    (up = fcntl(fd, F_DUPFD_CLOEXEC, front->link_fd_base)) == -1)
		return (fd);
	close(fd);
	return (up);
}

/* Watch fd, which the link then owns; NULL if the loop refuses it. */
struct link *
link_open(struct session *s, int fd)
{
	struct link	*l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return (NULL);
	if (uv_poll_init(front->loop, &l->poll, fd) != 0) {
		free(l);
		return (NULL);
	}
	l->poll.data = l;
	l->fd = fd;
	l->s = s;
	l->events = UV_READABLE;
	if (uv_poll_start(&l->poll, l->events, link_poll_cb) != 0) {
		l->closing = 1;
		uv_close((uv_handle_t *)&l->poll, (uv_close_cb)free);
		return (NULL);
	}
	return (l);
}

/* Call registry_writeable once the socket takes more. */
void
link_writable(struct link *l)
{
	if (l->closing || (l->events & UV_WRITABLE))
		return;
	l->events |= UV_WRITABLE;
	(void)uv_poll_start(&l->poll, l->events, link_poll_cb);
}

static void
link_closed_cb(uv_handle_t *h)
{
	struct link	*l = h->data;

	close(l->fd);
	registry_closed(l->s);
	free(l);
}

/*
 * Close it from the loop, not from inside the caller, which may go on
 * using the session: registry_closed follows on the next turn, as it did
 * after lws's asynchronous close.
 */
void
link_close(struct link *l)
{
	if (l->closing)
		return;
	l->closing = 1;
	(void)uv_poll_stop(&l->poll);
	uv_close((uv_handle_t *)&l->poll, link_closed_cb);
}
