/*
 * report.c: the lines lodge writes on stderr for its user.
 *
 * Errors are one line, "lodge: what went wrong".  Notices ("[detached from
 * x]") are one bracketed line.  While the terminal is raw, lines end in
 * CRLF, and a line starts on a fresh line of the screen even when the
 * session's output left the cursor in the middle of one.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mpack.h"

static int	report_is_quiet;

/* While probing, failures are expected: report nothing. */
void
report_quiet(int quiet)
{
	report_is_quiet = quiet;
}

/* One line: prefix, the message and, with_errno, errno's text. */
void
report(const char *prefix, int with_errno, const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[1024];
	int	 saved = errno, last;
	int	 raw = tty_is_raw();

	if (report_is_quiet)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (with_errno) {
		strlcat(msg, ": ", sizeof(msg));
		strlcat(msg, strerror(saved), sizeof(msg));
	}
	last = loop_last_byte();
	fflush(stdout);
	if (last != -1 && last != '\n' && isatty(STDOUT_FILENO) &&
	    isatty(STDERR_FILENO))
		fputs(raw ? "\r\n" : "\n", stderr);
	fprintf(stderr, "%s%s%s", prefix, msg, raw ? "\r\n" : "\n");
	fflush(stderr);
	errno = saved;
}

void
report_server_error(const msgpack_object *m)
{
	const char	*msg;
	size_t		 len;

	if (mpack_get_str(m, "message", &msg, &len) == 1)
		report_errorx("%.*s", (int)len, msg);
	else
		report_errorx("lodged sent an error");
}
