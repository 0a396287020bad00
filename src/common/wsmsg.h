/*
 * wsmsg.h: decoding the messages clients send over a WebSocket.
 *
 * One binary frame holds one msgpack map with a string "type": start (exec
 * streams), stdin, eof, resize, signal.  Everything is checked here, before
 * a worker acts on it; a message that fails gets an error reply with the
 * reason, and the connection stays open.
 */
#ifndef WSMSG_H
#define WSMSG_H

#include <stddef.h>

#include <msgpack.h>

/*
 * The protocol's version (lodge-protocol.7): GET /v1/health says it.  It
 * changes only when a change would break a client written for the last.
 */
#define WSMSG_PROTOCOL_VERSION	1

enum wsmsg_type {
	WSMSG_START,
	WSMSG_STDIN,
	WSMSG_EOF,
	WSMSG_RESIZE,
	WSMSG_SIGNAL,
};

struct wsmsg {
	enum wsmsg_type		 type;
	msgpack_unpacked	 up;	/* the whole map (start's fields) */
	const char		*data;	/* stdin: points into up */
	size_t			 len;
	int			 cols;	/* resize */
	int			 rows;
	int			 signo;	/* signal */
};

/*
 * Decode len bytes at buf.  0 on success (free with wsmsg_free), -1 with
 * the reason in why.  buf must stay valid while m is used.
 */
int	wsmsg_decode(const void *buf, size_t len, struct wsmsg *m, char *why,
	    size_t whylen);
void	wsmsg_free(struct wsmsg *);

/* Pack the server's {"type":"error","code":..,"message":..} into sb. */
void	wsmsg_pack_error(msgpack_sbuffer *sb, const char *code,
	    const char *message);

/*
 * Pack "exitCode" and "signal" (two pairs of a map) from a waitpid
 * status; both nil while the process has not exited.
 */
void	wsmsg_pack_status(msgpack_packer *, int exited, int status);

#endif
