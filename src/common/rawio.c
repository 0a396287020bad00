/*
 * rawio.c: deferred writability requests (see rawio.h).
 */
#include <stdlib.h>
#include <string.h>

#include "rawio.h"

static struct lws		**rawio_pending;
static size_t			  rawio_npending;
static size_t			  rawio_cap;
static lws_sorted_usec_list_t	  rawio_sul;
static struct lws_context	 *rawio_ctx;

static void
rawio_cb(lws_sorted_usec_list_t *sul)
{
	struct lws	**list = rawio_pending;
	size_t		  i, n = rawio_npending;

	/* Requests made while this runs go to a fresh list. */
	rawio_pending = NULL;
	rawio_npending = rawio_cap = 0;
	for (i = 0; i < n; i++)
		lws_callback_on_writable(list[i]);
	free(list);
}

void
rawio_writable(struct lws *wsi)
{
	struct lws	**nl;
	size_t		  i;

	for (i = 0; i < rawio_npending; i++)
		if (rawio_pending[i] == wsi)
			return;
	if (rawio_npending == rawio_cap) {
		size_t ncap = rawio_cap == 0 ? 16 : rawio_cap * 2;

		if ((nl = reallocarray(rawio_pending, ncap,
		    sizeof(*nl))) == NULL) {
			/* Better a spurious POLLOUT than a stall. */
			lws_callback_on_writable(wsi);
			return;
		}
		rawio_pending = nl;
		rawio_cap = ncap;
	}
	rawio_pending[rawio_npending++] = wsi;
	rawio_ctx = lws_get_context(wsi);
	lws_sul_schedule(rawio_ctx, 0, &rawio_sul, rawio_cb, 1);
}

void
rawio_forget(struct lws *wsi)
{
	size_t	i;

	for (i = 0; i < rawio_npending; i++) {
		if (rawio_pending[i] == wsi) {
			rawio_pending[i] = rawio_pending[--rawio_npending];
			return;
		}
	}
}
