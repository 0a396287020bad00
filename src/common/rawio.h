/*
 * rawio.h: asking again for writability of a raw-file wsi.
 *
 * libwebsockets 4.1 clears POLLOUT on a raw-file wsi right after its
 * writeable callback returns, so a callback that could not write everything
 * cannot ask for another one itself: the request is lost and the writer
 * stalls.  rawio_writable() asks later, from the event loop, where it holds.
 */
#ifndef RAWIO_H
#define RAWIO_H

#include <libwebsockets.h>

/* Ask for a writeable callback on wsi, from outside the current callback. */
void	rawio_writable(struct lws *);
/* Forget wsi (call when it closes): a pending request is dropped. */
void	rawio_forget(struct lws *);

#endif
