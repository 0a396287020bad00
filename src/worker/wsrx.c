/*
 * wsrx.c: a client's messages out of the WebSocket frames lws gives.
 *
 * A message comes in fragments and lws may split each; the pieces are
 * kept until the last one, and a message that fits in one piece is not
 * copied at all.  A message larger than the limit gets an error, and the
 * caller closes the connection with 1009 and drops what follows; a text
 * message is read to its end and refused whole.
 */
#include <stdlib.h>
#include <string.h>

#include "worker.h"

int
wsrx_take(struct wsrx *rx, struct lws *wsi, const void *in, size_t len,
    size_t max, const struct wsrx_ops *ops, void *arg)
{
	unsigned char	*nb;
	int		 final = lws_is_final_fragment(wsi);

	/* Any frame is a sign of life, as a pong is (lws counts pongs only). */
	lws_validity_confirmed(wsi);
	if (rx->len + len > max) {
		/*
		 * The error goes first, then the 1009 close.  Reading goes
		 * on (the caller drops the rest), so that lws reads the
		 * client's close in answer and no unread bytes reset the
		 * socket under a client still sending.
		 */
		ops->error(arg, "payload_too_large", "message larger than "
		    "limits.maxMessageBytes");
		return (WSRX_TOO_BIG);
	}
	if (!lws_frame_is_binary(wsi))
		rx->bad = 1;
	if (!rx->bad) {
		if (final && rx->len == 0 &&
		    lws_remaining_packet_payload(wsi) == 0) {
			ops->message(arg, in, len);
			return (WSRX_OK);
		}
		if ((nb = realloc(rx->buf, rx->len + len + 1)) == NULL)
			return (WSRX_NOMEM);
		rx->buf = nb;
		memcpy(rx->buf + rx->len, in, len);
		rx->len += len;
	}
	if (!final || lws_remaining_packet_payload(wsi) != 0)
		return (WSRX_OK);
	if (rx->bad)
		ops->error(arg, "bad_request",
		    "messages are binary frames holding msgpack");
	else
		ops->message(arg, rx->buf, rx->len);
	rx->bad = 0;
	rx->len = 0;
	return (WSRX_OK);
}

void
wsrx_free(struct wsrx *rx)
{
	free(rx->buf);
	rx->buf = NULL;
	rx->len = 0;
}
