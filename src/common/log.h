/*
 * log.h: logging in the OpenBSD daemon style.
 *
 * stderr in the foreground, syslog otherwise.  log_warn appends strerror;
 * log_warnx does not.  fatal and fatalx are for start-up failures and broken
 * internal invariants only, never for a bad peer.
 */
#ifndef LOG_H
#define LOG_H

#include <stdlib.h>
#include <syslog.h>

void	log_init(const char *ident, int foreground, int verbose);
void	log_setident(const char *ident);
/* One line at syslog priority pri (LOG_DEBUG: only when verbose). */
void	log_emit(int pri, int with_errno, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
#define log_warn(...)	log_emit(LOG_WARNING, 1, __VA_ARGS__)
#define log_warnx(...)	log_emit(LOG_WARNING, 0, __VA_ARGS__)
#define log_info(...)	log_emit(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...)	log_emit(LOG_DEBUG, 0, __VA_ARGS__)
#define fatal(...)	(log_emit(LOG_CRIT, 1, __VA_ARGS__), exit(1))
#define fatalx(...)	(log_emit(LOG_CRIT, 0, __VA_ARGS__), exit(1))

/* Route libwebsockets' own log lines through this module. */
void	log_lws_init(void);

#endif
