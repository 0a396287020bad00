/*
 * log.c: the process's one log sink, stderr or syslog.
 *
 * When stderr is systemd's journal stream, each line carries its priority
 * as a "<N>" prefix and no name or pid, which the journal records itself.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "log.h"

static int	 log_foreground = 1;
static int	 log_level;
static int	 log_journal;
static char	 log_ident[64] = "lodged";

/* $JOURNAL_STREAM names the journal's socket as DEVICE:INODE. */
static int
log_to_journal(void)
{
	const char		*js = getenv("JOURNAL_STREAM");
	unsigned long long	 dev, ino;
	struct stat		 st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 ||
	    fstat(STDERR_FILENO, &st) == -1)
		return (0);
	return ((unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino);
}

void
log_init(const char *ident, int foreground, int verbose)
{
	log_foreground = foreground;
	log_level = verbose;
	log_setident(ident);
	log_journal = log_to_journal();
	if (!foreground)
		openlog(log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_setident(const char *ident)
{
	strlcpy(log_ident, ident, sizeof(log_ident));
}

void
log_emit(int pri, int with_errno, const char *fmt, ...)
{
	char	 msg[1024];
	int	 saved = errno;
	va_list	 ap;

	if (pri == LOG_DEBUG && log_level < 1)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (with_errno) {
		strlcat(msg, ": ", sizeof(msg));
		strlcat(msg, strerror(saved), sizeof(msg));
	}
	if (log_foreground && log_journal && strcmp(log_ident, "lodged") == 0)
		fprintf(stderr, "<%d>%s\n", pri, msg);
	else if (log_foreground && log_journal)
		fprintf(stderr, "<%d>%s: %s\n", pri, log_ident, msg);
	else if (log_foreground)
		fprintf(stderr, "%s[%d]: %s\n", log_ident, (int)getpid(), msg);
	else
		syslog(pri, "%s", msg);
	errno = saved;
}

static void
log_lws_emit(int level, const char *line)
{
	char	 buf[512];
	size_t	 n;

	strlcpy(buf, line, sizeof(buf));
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	/* lws 4.1 reports every adoption with a read buffer as an error. */
	if (strstr(buf, "adopt_socket_readbuf: calling service") != NULL)
		level = LLL_DEBUG;
	/* lws prefixes a timestamp; keep the message only. */
	if (level & LLL_ERR)
		log_warnx("lws: %s", buf);
	else
		log_debug("lws: %s", buf);
}

void
log_lws_init(void)
{
	int	levels = LLL_ERR;

	if (log_level >= 2)
		levels |= LLL_WARN | LLL_NOTICE;
	lws_set_log_level(levels, log_lws_emit);
}
