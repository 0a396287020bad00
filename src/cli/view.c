/*
 * view.c: one attach stream of a session, shown on our terminal.
 *
 * Four uses: attach (interactive), attach -r (read-only), log -f (output
 * only) and wait (nothing shown).  The stream sends "attached", the replay,
 * "live", live output and finally "exit".  While attached interactively,
 * the terminal is raw and our input goes to the session, except what
 * arrives before "live" (the terminal's answers to queries found in the
 * replay: dropped) and the detach key.  Our window size goes with the
 * attach request and after every SIGWINCH.
 */
#include <sys/types.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mpack.h"
#include "signame.h"

struct view {
	enum view_mode		 mode;
	int			 detach_key;
	const char		*ref;
	char			 name[80];	/* for the notices */
	int			 pty;
	int			 tty;		/* stdin is a terminal */
	int			 live;
	int			 exited;
	char			 status_text[128];
	int			 detached;
	int			 failed;
	int			 said_error;	/* an error message was shown */
	int			 done;		/* the loop is over */
};

static struct view	view;

/* Exit status of an "exit" message: code, or 128 + signal number. */
int
view_exit_status(const msgpack_object *m, char *text, size_t len)
{
	const msgpack_object	*sig;
	int64_t			 code;
	int			 signo;
	char			 name[32];

	if (mpack_get_int(m, "exitCode", 0, 255, &code) == 1) {
		snprintf(text, len, "exited with code %d", (int)code);
		return ((int)code);
	}
	if ((sig = mpack_get(m, "signal")) != NULL &&
	    (signo = signame_from_object(sig)) != -1) {
		if (sig->type == MSGPACK_OBJECT_STR)
			mpack_strcpy(sig, name, sizeof(name));
		else
			snprintf(name, sizeof(name), "%d", signo);
		snprintf(text, len, "killed by signal %s", name);
		return (128 + signo);
	}
	snprintf(text, len, "ended without an exit status");
	return (CLI_EXIT_FAIL);
}

static int
view_interactive(void)
{
	return (view.mode == VIEW_ATTACH || view.mode == VIEW_READONLY);
}

static void
view_send_stdin(const char *p, size_t len)
{
	if (len > 0 && view.mode == VIEW_ATTACH)
		ws_send_stdin(p, len);
}

static void
view_input(const char *p, size_t len)
{
	const char	*k = NULL;

	/* Before "live" it is the terminal answering the replay. */
	if (!view.live || view.detached || view.exited)
		return;
	if (view.detach_key >= 0)
		k = memchr(p, view.detach_key, len);
	if (k != NULL) {
		view_send_stdin(p, (size_t)(k - p));
		view.detached = 1;
		loop_pause_input(1);
		ws_close();
		return;
	}
	view_send_stdin(p, len);
}

static void
view_signal(int sig)
{
	if (sig == SIGWINCH && view.mode == VIEW_ATTACH && view.pty)
		ws_send_size();
}

static void
view_attached(const msgpack_object *m)
{
	const msgpack_object	*s = mpack_get(m, "session");
	const char		*p;
	size_t			 len;
	int			 b;

	if (mpack_get_str(s, "name", &p, &len) == 1 ||
	    mpack_get_str(s, "id", &p, &len) == 1)
		snprintf(view.name, sizeof(view.name), "%.*s", (int)len, p);
	if (mpack_get_bool(s, "pty", &b) == 1)
		view.pty = b;
	if (!view_interactive())
		return;
	if (view.tty && tty_raw(STDIN_FILENO, view.pty ? TTY_RAW :
	    TTY_CHAR) == -1)
		report_error("cannot set up the terminal");
	/* Read from now on: what comes before "live" is dropped. */
	else if (loop_watch_input() == 0)
		return;
	view.failed = 1;
	ws_close();
}

static void
view_output(const msgpack_object *m, int fd)
{
	if (view.mode == VIEW_FOLLOW)
		fd = STDOUT_FILENO;
	ws_output(m, view.mode == VIEW_WAIT ? -1 : fd);
}

static void
view_message(const msgpack_object *m)
{
	const msgpack_object	*type = mpack_get(m, "type");
	int64_t			 from, to;

	if (mpack_streq(type, "stdout"))
		view_output(m, STDOUT_FILENO);
	else if (mpack_streq(type, "stderr"))
		view_output(m, STDERR_FILENO);
	else if (mpack_streq(type, "attached"))
		view_attached(m);
	else if (mpack_streq(type, "live"))
		view.live = 1;
	else if (mpack_streq(type, "gap")) {
		if (view.mode == VIEW_FOLLOW &&
		    mpack_get_int(m, "from", 0, INT64_MAX, &from) == 1 &&
		    mpack_get_int(m, "to", 0, INT64_MAX, &to) == 1)
			report_notice("[%lld bytes of output were lost]",
			    (long long)(to - from));
	} else if (mpack_streq(type, "exit")) {
		view.exited = 1;
		loop_quit(view_exit_status(m, view.status_text,
		    sizeof(view.status_text)));
	} else if (mpack_streq(type, "error")) {
		view.said_error = 1;
		report_server_error(m);
	}
}

static void
view_closed(int code, const char *why)
{
	if (view.exited || view.done)
		return;
	if (view.detached || view.failed) {
		loop_quit(view.failed ? CLI_EXIT_FAIL : 0);
		return;
	}
	if (code == 0) {
		if (strcmp(why, "HTTP 404") == 0)
			report_errorx("session '%s' does not exist", view.ref);
		else if (strcmp(why, "HTTP 401") == 0)
			report_errorx("missing or wrong token");
		else
			report_errorx("cannot attach to '%s': %s", view.ref,
			    why);
	} else if (!view.said_error)
		report_errorx("the connection to '%s' ended before the "
		    "session did (close code %d%s%s)", view.ref, code,
		    *why != '\0' ? ": " : "", why);
	loop_quit(CLI_EXIT_FAIL);
}

/* When input ends the view goes on, until exit or a signal. */
static const struct loop_ops view_loop_ops = {
	view_input, NULL, view_signal
};

static const struct ws_ops view_ws_ops = {
	NULL, view_message, view_closed
};

static char *
view_request(const char *ref, const uint64_t *since)
{
	char	*base, *path, query[128] = "";
	size_t	 n = 0;
	int	 cols, rows;

	if ((base = target_path(ref, "/attach")) == NULL)
		return (NULL);
	if (view.mode == VIEW_ATTACH && view.tty &&
	    tty_size(STDIN_FILENO, &cols, &rows) == 0)
		n += (size_t)snprintf(query + n, sizeof(query) - n,
		    "&cols=%d&rows=%d", cols, rows);
	/* Our terminal is the session's: a flood is shown whole (pace). */
	if (view.mode == VIEW_ATTACH && view.tty)
		n += (size_t)snprintf(query + n, sizeof(query) - n, "&pace=1");
	if (view.mode != VIEW_ATTACH)
		n += (size_t)snprintf(query + n, sizeof(query) - n,
		    "&readOnly=1");
	if (since != NULL)
		snprintf(query + n, sizeof(query) - n, "&since=%llu",
		    (unsigned long long)*since);
	if (asprintf(&path, "%s%s%s", base, query[0] != '\0' ? "?" : "",
	    query[0] != '\0' ? query + 1 : "") == -1) {
		report_error("asprintf");
		path = NULL;
	}
	free(base);
	return (path);
}

/* Run the stream; the exit status of lodge. */
int
view_run(const struct target *t, const char *ref, enum view_mode mode,
    int detach_key, const uint64_t *since)
{
	char	*path;
	int	 status;

	memset(&view, 0, sizeof(view));
	view.mode = mode;
	view.detach_key = detach_key;
	view.ref = ref;
	strlcpy(view.name, ref, sizeof(view.name));
	view.tty = isatty(STDIN_FILENO);
	tty_exit_on_signals();
	if (loop_init(&view_loop_ops) == -1 || (mode == VIEW_ATTACH &&
	    view.tty && loop_catch(SIGWINCH) == -1) ||
	    (path = view_request(ref, since)) == NULL) {
		loop_free();	/* safe after a loop_init that failed */
		return (CLI_EXIT_FAIL);
	}
	(void)ws_open(&t->ep, path, &view_ws_ops);
	free(path);
	status = loop_run();
	view.done = 1;
	loop_output_flush();
	tty_restore();
	if (view.detached && !view.exited && view_interactive())
		report_notice("[detached from %s]", view.name);
	else if (view.exited && view_interactive())
		report_notice("[%s]", view.status_text);
	loop_free();
	if (mode == VIEW_FOLLOW && view.exited)
		return (0);
	return (status);
}
