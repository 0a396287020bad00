/*
 * metrics.h: the front's counters, served as GET /metrics.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stdint.h>

#include "httphead.h"

enum metric_counter {
	M_EXECS_STARTED,
	M_EXEC_STREAMS_STARTED,
	M_SESSIONS_CREATED,
	M_SESSIONS_REDISCOVERED,
	M_ATTACHES,
	M_LOGS,
	M_CONNECTIONS,
	M_LISTS_BUILT,
	METRIC_NCOUNTERS
};

enum metric_limit {
	L_MAX_SESSIONS,
	L_MAX_BODY,
	L_MAX_HEAD,
	L_REQUEST_TIMEOUT,
	L_WRITE_TIMEOUT,
	L_MAX_CONNECTIONS,
	L_MAX_PEER_CONNECTIONS,
	L_MAX_OUTPUT,
	L_MAX_CLIENTS,
	L_DESCRIPTORS,
	METRIC_NLIMITS
};

void	 metrics_count(enum metric_counter);
void	 metrics_limit(enum metric_limit);
/* A reply queued (or a hand-off, as 101) usec after its head was complete. */
void	 metrics_reply(enum httphead_route, int status, uint64_t usec);
char	*metrics_render(size_t *);
uint64_t metrics_now(void);

#endif
