/*
 * pace.c: a client that attached with pace holds the process back rather
 * than fall behind, as a terminal holds a program that writes faster than
 * it can draw.
 *
 * The output is read while any attached client is within a quarter of the
 * ring of its end.  Once every client is further behind, and one of them
 * asked to pace and is still taking output, the worker stops reading the
 * PTY or the pipes, and the process blocks in its next write.  So the
 * process goes at the pace of its fastest client: a client never waits for
 * a slower one, and a paced client that has taken nothing for
 * PACE_STALL_US (a stuck peer, a hidden tab) holds the process no longer,
 * until it reads again.
 *
 * Taking output is a send of ours, or the socket's queue of unsent bytes
 * going down: a slow reader behind megabytes of socket buffers reads on for
 * seconds before the socket has room for another send.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/queue.h>

#include <linux/sockios.h>

#include <libwebsockets.h>
#include <msgpack.h>

#include "ring.h"
#include "worker.h"

#define PACE_STALL_US	(2000 * LWS_US_PER_MS)

/* A quarter of the ring: a paced client never falls out of it. */
static uint64_t
pace_window(void)
{
	return (ring_capacity(worker->ring) / 4);
}

static void
pace_set(int hold)
{
	if (hold == worker->pace_held)
		return;
	worker->pace_held = hold;
	if (!hold)
		lws_sul_cancel(&worker->sul_pace);
	if (worker->out != NULL)
		lws_rx_flow_control(worker->out->wsi, !hold);
	if (worker->err != NULL)
		lws_rx_flow_control(worker->err->wsi, !hold);
}

static void
pace_stalled_cb(lws_sorted_usec_list_t *sul)
{
	struct client	*cl;
	lws_usec_t	 now = lws_now_usecs();
	int		 queued;

	LIST_FOREACH(cl, &worker->clients, entry) {
		if (!cl->pace || cl->wsi == NULL ||
		    ioctl(lws_get_socket_fd(cl->wsi), SIOCOUTQ, &queued) == -1)
			continue;
		if (queued < cl->queued)
			cl->moved_at = now;
		cl->queued = queued;
	}
	pace_check();
}

/* Whether the output may be read on: after output, a send, a detach. */
void
pace_check(void)
{
	struct client	*cl;
	uint64_t	 end, win;
	lws_usec_t	 now, last = 0;

	if (worker->npaced == 0 || worker->final) {
		pace_set(0);
		return;
	}
	end = ring_end(worker->ring);
	win = pace_window();
	now = lws_now_usecs();
	LIST_FOREACH(cl, &worker->clients, entry) {
		if (!cl->sent_attached || cl->closing || cl->sent_exit)
			continue;
		if (end - cl->off < win) {
			pace_set(0);
			return;
		}
		if (cl->pace && now - cl->moved_at < PACE_STALL_US &&
		    cl->moved_at > last)
			last = cl->moved_at;
	}
	if (last == 0) {
		pace_set(0);
		return;
	}
	pace_set(1);
	/* Look again when the latest mover would count as stalled. */
	lws_sul_schedule(worker->ctx, 0, &worker->sul_pace, pace_stalled_cb,
	    last + PACE_STALL_US - now);
}

/* A client's output moved on (sent, or a gap). */
void
pace_moved(struct client *cl)
{
	if (cl->pace)
		cl->moved_at = lws_now_usecs();
	if (worker->npaced > 0 || worker->pace_held)
		pace_check();
}
