/*
 * txhold.c: a connection is never read while libwebsockets holds part of
 * a frame we sent it.
 *
 * When a write does not fit in the socket, lws keeps the rest and sends it
 * once the socket is writable.  If lws then reads the peer's EOF (or the
 * error after its reset), lws 4.1.6 starts a close that waits for that rest
 * to be flushed, reports the connection closed to its own service loop,
 * and that loop serves the same descriptor again with the same events: a
 * busy loop of recv() = 0 that never returns to poll, so no timer, child
 * or signal is served again.  So while lws holds unsent output for a
 * connection, lws does not read it (rx flow control); the worker peeks at
 * the socket itself instead: bytes waiting let lws read once (a read of
 * waiting bytes returns them, never the EOF behind them), an EOF or an
 * error closes the connection through lws's timeout path, which never
 * waits for a flush.  Peeks run after every service pass and every
 * TXHOLD_PEEK_MS while something is held.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>

#include <libwebsockets.h>
#include <msgpack.h>

#include "worker.h"

#define TXHOLD_PEEK_MS		50

static LIST_HEAD(, txhold)	txhold_held = LIST_HEAD_INITIALIZER(txhold_held);
static struct lws_context	*txhold_ctx;
static lws_sorted_usec_list_t	 txhold_sul;

static void
txhold_rx(struct txhold *h, int allow)
{
	lws_rx_flow_control(h->wsi, (allow ? LWS_RXFLOW_REASON_APPLIES_ENABLE :
	    LWS_RXFLOW_REASON_APPLIES_DISABLE) | TXHOLD_RXFLOW_BIT |
	    LWS_RXFLOW_REASON_FLAG_PROCESS_NOW);
}

/* Writeable: what lws held went out, so the peer may be read again. */
void
txhold_writeable(struct txhold *h)
{
	if (!h->held)
		return;
	h->held = 0;
	LIST_REMOVE(h, entry);
	txhold_rx(h, 1);
}

void
txhold_init(struct txhold *h, struct lws *wsi)
{
	h->wsi = wsi;
	h->held = 0;
	h->dead = 0;
	txhold_ctx = lws_get_context(wsi);
}

/* The connection is closing: forget it. */
void
txhold_forget(struct txhold *h)
{
	if (h->held) {
		h->held = 0;
		LIST_REMOVE(h, entry);
	}
	h->wsi = NULL;
}

/* Whether the connection may be read during the next service pass. */
static void
txhold_peek(struct txhold *h)
{
	char	b;
	ssize_t	n;

	if (!lws_partial_buffered(h->wsi)) {
		txhold_writeable(h);
		return;
	}
	n = recv(lws_get_socket_fd(h->wsi), &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0) {
		txhold_rx(h, 1);
		return;
	}
	txhold_rx(h, 0);
	if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		/* Gone: close without waiting for a flush. */
		h->dead = 1;
		h->held = 0;
		LIST_REMOVE(h, entry);
		lws_set_timeout(h->wsi, PENDING_TIMEOUT_USER_OK,
		    LWS_TO_KILL_ASYNC);
	}
}

/* After every lws_service(): re-decide for every held connection. */
void
txhold_service(void)
{
	struct txhold	*h, *next;

	for (h = LIST_FIRST(&txhold_held); h != NULL; h = next) {
		next = LIST_NEXT(h, entry);
		txhold_peek(h);
	}
}

static void
txhold_timer_cb(lws_sorted_usec_list_t *sul)
{
	txhold_service();
	if (!LIST_EMPTY(&txhold_held))
		lws_sul_schedule(txhold_ctx, 0, &txhold_sul, txhold_timer_cb,
		    TXHOLD_PEEK_MS * LWS_US_PER_MS);
}

/* After every lws_write on the connection. */
void
txhold_wrote(struct txhold *h)
{
	if (h->wsi == NULL || h->dead || !lws_partial_buffered(h->wsi))
		return;
	if (!h->held) {
		h->held = 1;
		LIST_INSERT_HEAD(&txhold_held, h, entry);
	}
	txhold_rx(h, 0);
	/* The rest goes out when writable; the callback then releases. */
	lws_callback_on_writable(h->wsi);
	if (lws_dll2_is_detached(&txhold_sul.list))
		lws_sul_schedule(txhold_ctx, 0, &txhold_sul, txhold_timer_cb,
		    TXHOLD_PEEK_MS * LWS_US_PER_MS);
}
