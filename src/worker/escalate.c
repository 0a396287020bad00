/*
 * escalate.c: ending a command and everything it started, one signal
 * after another, for session deletes, exec streams and POST /v1/exec.
 *
 * A ladder is a list of steps, each a signal and how long to give the
 * group before the next.  The last step is sent again after its wait
 * while the caller still finds the group alive (a fork may have raced the
 * walk), or once when it has no wait.  The caller keeps the clock and the
 * timer; this says which signal is due.
 */
#include <stddef.h>
#include <time.h>

#include "worker.h"

/* Start the ladder at now, with first for its first signal (0: as is). */
void
escalate_start(struct escalate *e, const struct escalate_step *steps,
    int first, int64_t now)
{
	if (e->steps != NULL)
		return;
	e->steps = steps;
	e->first = first;
	e->next = 0;
	e->at = now;
}

/* The signal due at now (0: none yet); the next step is set. */
int
escalate_due(struct escalate *e, int64_t now)
{
	const struct escalate_step	*s;
	int				 sig;

	if (e->steps == NULL || e->next == -1 || now < e->at)
		return (0);
	s = &e->steps[e->next];
	sig = e->next == 0 && e->first != 0 ? e->first : s->sig;
	if (s[1].sig != 0)
		e->next++;
	else if (s->wait_ms == 0)
		e->next = -1;
	e->at = now + s->wait_ms;
	return (sig);
}

/* When the next step is due, or 0 when none is left. */
int64_t
escalate_at(const struct escalate *e)
{
	return (e->steps == NULL || e->next == -1 ? 0 : e->at);
}

/* Milliseconds of the monotonic clock. */
int64_t
escalate_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}
