/*
 * ctl.h: the control channel between lodge's processes.
 *
 * Front, template and session workers talk over Unix stream sockets in
 * frames: a 4-byte big-endian length, then one msgpack map.  A frame may carry
 * up to CTL_FRAME_FDS file descriptors (SCM_RIGHTS), sent with the frame's
 * first byte; the receiver queues received descriptors in arrival order and
 * a frame whose map has "fd":true takes the oldest one, "fds":N the oldest N.
 *
 * The first byte a front sends on a connection it opened to a worker socket
 * is CTL_MAGIC, so the worker can tell it from an HTTP client.
 */
#ifndef CTL_H
#define CTL_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#define CTL_MAGIC		'\0'
#define CTL_FRAME_MAX		(64U * 1024 * 1024)
#define CTL_FDS_MAX		16
#define CTL_FRAME_FDS		3
#define CTL_QUEUE_MAX		(128U * 1024 * 1024)

struct ctl_frame {
	struct ctl_frame	*next;
	char			*buf;
	size_t			 len;
	size_t			 off;
	int			 fds[CTL_FRAME_FDS];	/* owned until sent */
	int			 nfds;
};

struct ctl {
	int			 fd;
	/* receiving */
	char			*rbuf;
	size_t			 rlen;
	size_t			 rcap;
	char			*frame;		/* the last frame ctl_next took */
	size_t			 frame_len;
	int			 fds[CTL_FDS_MAX];
	int			 nfds;
	pid_t			 peer_pid;	/* sender of the last bytes read,
						   with SO_PASSCRED; else 0 */
	/* sending */
	struct ctl_frame	*qhead;
	struct ctl_frame	**qtail;
	size_t			 qbytes;
};

void	ctl_init(struct ctl *, int fd);
/* Close the socket and every queued or received descriptor. */
void	ctl_close(struct ctl *);

/*
 * Queue one frame (the packed map in sb) and fd (or -1, ownership passes
 * to the queue) and try to send.  Returns 0, or -1 when the peer is gone or
 * the queue is over its limit (the caller drops the peer).
 */
int	ctl_send(struct ctl *, const msgpack_sbuffer *, int fd);
/* Send what is queued; 1 if something is still queued, 0 if empty, -1 error. */
int	ctl_flush(struct ctl *);
int	ctl_pending(const struct ctl *);
/* Free the receive buffers when nothing is half read (frames taken: done). */
void	ctl_shrink(struct ctl *);

/* Read what the socket has; returns 1 data read, 0 EOF, -1 error, 2 again. */
int	ctl_read(struct ctl *);

/*
 * Take the next complete frame: 1 and *obj set (valid until the next
 * ctl_next or ctl_close, with *fd set to the frame's descriptor or -1,
 * which the caller then owns), 0 when no full frame is buffered, -1 on a
 * malformed frame (the caller drops the peer).
 */
int	ctl_next(struct ctl *, msgpack_unpacked *, int *fd);
/* The same for frames with "fds":N; *nfds set to how many fds[] holds. */
int	ctl_nextv(struct ctl *, msgpack_unpacked *, int *fds, int *nfds);

/* Keep the bytes of the last frame (objects point into them); free() them. */
char	*ctl_take_frame(struct ctl *);

/* Blocking helpers for start-up paths: send one frame, wait for one
   (timeout_ms < 0: for as long as it takes). */
int	ctl_send_wait(struct ctl *, const msgpack_sbuffer *, int fd);
int	ctl_recv_wait(struct ctl *, msgpack_unpacked *, int *fd, int timeout_ms);

#endif
