/*
 * log.h: logging in the OpenBSD daemon style.
 *
 * stderr in the foreground, syslog otherwise.  log_warn appends strerror;
 * log_warnx does not.  fatal and fatalx are for start-up failures and broken
 * internal invariants only, never for a bad peer.
 */
#ifndef LOG_H
#define LOG_H

#include <stdarg.h>

void	log_init(const char *ident, int foreground, int verbose);
void	log_setident(const char *ident);
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

/* Route libwebsockets' own log lines through this module. */
void	log_lws_init(void);

#endif
