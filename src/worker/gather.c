/*
 * gather.c: small output a process writes on its own, such as a line at a
 * time on a terminal, is held until GATHER_US after the last send, so a
 * client gets one message where it would get hundreds, and a terminal in a
 * browser spends its time per message, not per byte.  Output after input
 * (an echo) goes at once, with what was held, and so does the first after
 * a pause.  Sessions and exec streams alike.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <libwebsockets.h>
#include <msgpack.h>

#include "worker.h"

/* 1: hold it, cb runs when the time is up; 0: send it now. */
int
gather_hold(struct gather *g, struct lws_context *ctx, sul_cb_t cb)
{
	lws_usec_t	now = lws_now_usecs();

	if (g->answering || (now - g->sent_at >= GATHER_US &&
	    lws_dll2_is_detached(&g->sul.list))) {
		lws_sul_cancel(&g->sul);
		g->answering = 0;
		g->sent_at = now;
		return (0);
	}
	if (lws_dll2_is_detached(&g->sul.list))
		lws_sul_schedule(ctx, 0, &g->sul, cb,
		    g->sent_at + GATHER_US - now);
	return (1);
}
