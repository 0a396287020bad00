/*
 * inputq.c: a child's stdin, a queue of whole messages written in the
 * order they came, for session workers and exec streams alike.
 *
 * Nothing is dropped: a client whose own queued bytes reach INPUTQ_CLIENT
 * is not read any more (rx flow control) until they drain below it, so
 * one writer can hold at most that much (plus one message) ahead of
 * another's, and the rest waits in the client's socket.  Input is
 * discarded only once the child's stdin is gone: there is nobody left to
 * take it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker.h"

void
inputq_init(struct inputq *q)
{
	STAILQ_INIT(&q->msgs);
	q->len = 0;
	q->fd = -1;
	q->eof = 0;
}

static void
inputq_pause(struct inputq_owner *o, int pause)
{
	if (o->paused == pause || o->wsi == NULL)
		return;
	o->paused = pause;
	lws_rx_flow_control(o->wsi, (pause ?
	    LWS_RXFLOW_REASON_APPLIES_DISABLE :
	    LWS_RXFLOW_REASON_APPLIES_ENABLE) | CLIENT_RXFLOW_INPUT |
	    LWS_RXFLOW_REASON_FLAG_PROCESS_NOW);
}

/* Forget all that is queued; its writers are read again. */
void
inputq_drop(struct inputq *q)
{
	struct input_msg	*m;

	while ((m = STAILQ_FIRST(&q->msgs)) != NULL) {
		STAILQ_REMOVE_HEAD(&q->msgs, entry);
		if (m->owner != NULL) {
			m->owner->queued = 0;
			inputq_pause(m->owner, 0);
		}
		free(m);
	}
	q->len = 0;
}

/*
 * Queue one whole message of owner (NULL: nobody to pause), written by
 * the next inputq_write; -1 out of memory.
 */
int
inputq_push(struct inputq *q, struct inputq_owner *o, const void *data,
    size_t len)
{
	struct input_msg	*m;

	if ((m = malloc(sizeof(*m) + len)) == NULL)
		return (-1);
	m->owner = o;
	m->len = len;
	m->off = 0;
	memcpy(m->data, data, len);
	STAILQ_INSERT_TAIL(&q->msgs, m, entry);
	q->len += len;
	if (o != NULL && (o->queued += len) >= INPUTQ_CLIENT)
		inputq_pause(o, 1);
	return (0);
}

/* Write what the child takes now; the bytes still queued. */
size_t
inputq_write(struct inputq *q)
{
	struct input_msg	*m;
	ssize_t			 n;

	while ((m = STAILQ_FIRST(&q->msgs)) != NULL && q->fd != -1) {
		n = write(q->fd, m->data + m->off, m->len - m->off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			inputq_drop(q);		/* the reader is gone */
			break;
		}
		m->off += (size_t)n;
		if (m->owner != NULL &&
		    (m->owner->queued -= (size_t)n) < INPUTQ_CLIENT)
			inputq_pause(m->owner, 0);
		if (m->off == m->len) {
			q->len -= m->len;
			STAILQ_REMOVE_HEAD(&q->msgs, entry);
			free(m);
		}
	}
	if (q->fd == -1)
		inputq_drop(q);
	return (q->len);
}

/* An owner is going: its queued messages are still written whole. */
void
inputq_forget(struct inputq *q, struct inputq_owner *o)
{
	struct input_msg	*m;

	STAILQ_FOREACH(m, &q->msgs, entry)
		if (m->owner == o)
			m->owner = NULL;
	o->queued = 0;
}
