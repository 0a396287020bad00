/*
 * inputq.h: the input queue limits that the front advertises and the workers
 * apply, in one place so that GET /v1/health, "attached" and "started"
 * say the same.
 */
#ifndef INPUTQ_H
#define INPUTQ_H

/*
 * A WebSocket client's stdin bytes queued for the process before the
 * worker stops reading that client (it resumes below this).
 */
#define INPUTQ_CLIENT	(1024 * 1024)

/* A session's queued input above which POST .../input is refused (503). */
#define INPUTQ_REST	(4 * 1024 * 1024)

#endif
