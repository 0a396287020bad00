/*
 * cmd-exec.c: "lodge exec": run a command through an exec stream.
 *
 * Like "docker exec": our stdin goes to the command (its end as "eof"),
 * its stdout and stderr come to ours, and lodge exits as the command did:
 * its code, 128+N when signal N killed it, 124 when --timeout ran out.
 * With -t the command gets a terminal: ours goes raw and our window size
 * follows it.  The signals that would end us (INT, TERM, HUP, QUIT) are
 * passed on to the command instead; the third one ends us anyway.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "jsonmp.h"
#include "mpack.h"
#include "signame.h"

#define CMD_EXEC_TIMEDOUT	124	/* as timeout(1) */
#define CMD_EXEC_SIGNALS_MAX	3

static int	cmd_exec_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_exec_entry = {
	"exec",
	"Run a command and wait for it, like docker exec",
	"[-t] [-d DIR] [-e NAME=VALUE]... [--timeout SECONDS] [--] COMMAND "
	"[ARG...]",
	"  -t, --tty              give the command a terminal (ours goes raw)\n"
	"  -d, --workdir DIR      where it runs (default: here, or the daemon's"
	"\n                         default over --url)\n"
	"  -e, --env NAME=VALUE   add to its environment (repeatable)\n"
	"      --timeout SECONDS  kill it after this long (fractions allowed)\n"
	"\nCOMMAND runs directly, without a shell.  Our stdin is passed on "
	"until\nits end.  lodge exits with the command's code, 128+N when "
	"signal N\nkilled it, 124 when the timeout killed it, 1 when it could "
	"not run.\n",
	cmd_exec_exec
};

static const struct option cmd_exec_options[] = {
	{ "tty", no_argument, NULL, 't' },
	{ "workdir", required_argument, NULL, 'd' },
	{ "env", required_argument, NULL, 'e' },
	{ "timeout", required_argument, NULL, 'T' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

struct cmd_exec {
	int		 tty;		/* -t */
	int		 local_tty;	/* our stdin is a terminal */
	msgpack_sbuffer	 start;		/* the "start" message */
	int		 started;
	int		 exited;
	int		 timed_out;
	double		 timeout;
	int		 signals;
	int		 said_error;	/* an error message was shown */
	int		 done;
};

static struct cmd_exec	cx;

static void
cmd_exec_input(const char *p, size_t len)
{
	if (!cx.exited)
		ws_send_stdin(p, len);
}

static void
cmd_exec_input_eof(void)
{
	/* A terminal has no end of input to pass on: it stays open. */
	if (!cx.tty && !cx.exited)
		ws_send_json(json_pack("{s:s}", "type", "eof"));
}

static void
cmd_exec_signal(int sig)
{
	const char	*name;

	if (sig == SIGWINCH) {
		if (cx.tty && cx.local_tty)
			ws_send_size();
		return;
	}
	if (!cx.started || ++cx.signals >= CMD_EXEC_SIGNALS_MAX) {
		/* Nothing to pass it to, or it does not help: stop. */
		loop_quit(128 + sig);
		return;
	}
	if ((name = signame_name(sig)) != NULL)
		ws_send_json(json_pack("{s:s,s:s}", "type", "signal", "signal",
		    name));
	else
		ws_send_json(json_pack("{s:s,s:i}", "type", "signal", "signal",
		    sig));
}

static void
cmd_exec_established(void)
{
	(void)ws_send(&cx.start);
}

static void
cmd_exec_started(void)
{
	cx.started = 1;
	if (cx.tty && cx.local_tty && tty_raw(STDIN_FILENO, TTY_RAW) == -1)
		report_error("cannot set up the terminal");
	else if (loop_watch_input() == 0)
		return;
	loop_quit(CLI_EXIT_FAIL);
}

static void
cmd_exec_message(const msgpack_object *m)
{
	const msgpack_object	*type = mpack_get(m, "type");
	char			 text[128];
	int			 b, status;

	if (mpack_streq(type, "stdout"))
		ws_output(m, STDOUT_FILENO);
	else if (mpack_streq(type, "stderr"))
		ws_output(m, STDERR_FILENO);
	else if (mpack_streq(type, "started"))
		cmd_exec_started();
	else if (mpack_streq(type, "exit")) {
		cx.exited = 1;
		status = view_exit_status(m, text, sizeof(text));
		if (mpack_get_bool(m, "timedOut", &b) == 1 && b) {
			cx.timed_out = 1;
			status = CMD_EXEC_TIMEDOUT;
		}
		loop_quit(status);
	} else if (mpack_streq(type, "error")) {
		cx.said_error = 1;
		report_server_error(m);
	}
}

static void
cmd_exec_closed(int code, const char *why)
{
	if (cx.exited || cx.done)
		return;
	if (code == 0) {
		if (strcmp(why, "HTTP 401") == 0)
			report_errorx("missing or wrong token");
		else
			report_errorx("lodged refused the exec stream: %s",
			    why);
	} else if (!cx.said_error)
		report_errorx("the exec stream ended before the command %s "
		    "(close code %d)", cx.started ? "did" : "started", code);
	loop_quit(CLI_EXIT_FAIL);
}

static const struct loop_ops cmd_exec_loop_ops = {
	cmd_exec_input, cmd_exec_input_eof, cmd_exec_signal
};

static const struct ws_ops cmd_exec_ws_ops = {
	cmd_exec_established, cmd_exec_message, cmd_exec_closed
};

/* The "start" message: req (its workDir) with the command, tty and size. */
static int
cmd_exec_pack_start(msgpack_sbuffer *sb, char **args, int nargs,
    json_t *env, json_t *req)
{
	msgpack_packer	 pk;
	json_t		*a = json_array();
	int		 cols, rows, i;

	/* Bytes as they are: a command line need not be UTF-8. */
	for (i = 0; i < nargs; i++)
		json_array_append_new(a, json_string_nocheck(args[i]));
	json_object_set_new(req, "type", json_string("start"));
	json_object_set_new(req, "args", a);
	json_object_set_new(req, "tty", json_boolean(cx.tty));
	if (cx.tty && cx.local_tty &&
	    tty_size(STDIN_FILENO, &cols, &rows) == 0) {
		json_object_set_new(req, "cols", json_integer(cols));
		json_object_set_new(req, "rows", json_integer(rows));
	}
	if (json_object_size(env) > 0)
		json_object_set(req, "env", env);
	if (cx.timeout > 0)
		json_object_set_new(req, "timeoutSeconds",
		    json_real(cx.timeout));
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	return (jsonmp_pack(&pk, req));
}

static int
cmd_exec_exec(const struct endpoint *ep, int argc, char **argv)
{
	json_t		*env, *req;
	const char	*dir = NULL, *term;
	char		*end;
	int		 ch, rc = CLI_EXIT_FAIL;
	const int	 sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	size_t		 i;

	memset(&cx, 0, sizeof(cx));
	msgpack_sbuffer_init(&cx.start);
	env = json_object();
	req = json_object();
	while ((ch = cmd_getopt(&cmd_exec_entry, argc, argv, "+:td:e:h",
	    cmd_exec_options, &rc)) != -1) {
		switch (ch) {
		case 't':
			cx.tty = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'e':
			if ((rc = cmd_env_add(env, optarg,
			    &cmd_exec_entry)) != 0)
				goto out;
			rc = CLI_EXIT_FAIL;
			break;
		case 'T':
			errno = 0;
			cx.timeout = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || errno != 0 ||
			    !isfinite(cx.timeout) || cx.timeout < 0) {
				rc = cmd_usage_error(&cmd_exec_entry,
				    "--timeout needs a number of seconds");
				goto out;
			}
			break;
		case CMD_OPT_EXIT:
			goto out;
		}
	}
	if (optind == argc) {
		rc = cmd_usage_error(&cmd_exec_entry, "give a command");
		goto out;
	}
	cx.local_tty = isatty(STDIN_FILENO);
	if (cx.tty && cx.local_tty && json_object_get(env, "TERM") == NULL &&
	    (term = getenv("TERM")) != NULL && *term != '\0')
		json_object_set_new(env, "TERM", json_string(term));
	if (cmd_workdir(req, dir, ep) != 0)
		goto out;
	if (cmd_exec_pack_start(&cx.start, argv + optind, argc - optind, env,
	    req) == -1) {
		report_errorx("cannot encode the command");
		goto out;
	}

	tty_exit_on_signals();
	if (loop_init(&cmd_exec_loop_ops) == -1)
		goto out;
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (loop_catch(sigs[i]) == -1)
			goto done;
	if (cx.tty && cx.local_tty && loop_catch(SIGWINCH) == -1)
		goto done;
	(void)ws_open(ep, "/v1/exec/stream", &cmd_exec_ws_ops);
	rc = loop_run();
	cx.done = 1;
	loop_output_flush();
	tty_restore();
	if (cx.timed_out)
		report_errorx("the command timed out after %g seconds",
		    cx.timeout);
done:
	loop_free();
out:
	msgpack_sbuffer_destroy(&cx.start);
	json_decref(req);
	json_decref(env);
	return (rc);
}
