/*
 * cmd-wait.c: "lodge wait": wait for a session to exit, exit as it did.
 *
 * A session that has exited already answers at once; otherwise a
 * read-only attach from the end of the output waits for "exit".
 */
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "signame.h"

/* Past any real end: the attach replays nothing. */
#define CMD_WAIT_END	4611686018427387904ULL

static int	cmd_wait_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_wait_entry = {
	"wait",
	"Wait for a session to exit",
	"SESSION",
	"lodge exits with the session's exit code, or 128+N when signal N\n"
	"killed it.\n",
	cmd_wait_exec
};

/* The status of an exited session object, as the shell would show it. */
static int
cmd_wait_status(json_t *s)
{
	json_t		*code = json_object_get(s, "exitCode");
	const char	*sig = json_string_value(json_object_get(s, "signal"));
	int		 signo;

	if (json_is_integer(code))
		return ((int)json_integer_value(code));
	if (sig != NULL && (signo = signame_parse(sig, strlen(sig))) != -1)
		return (128 + signo);
	return (CLI_EXIT_FAIL);
}

static int
cmd_wait_exec(const struct endpoint *ep, int argc, char **argv)
{
	struct target		 t;
	uint64_t		 since = CMD_WAIT_END;
	const char		*state;
	json_t			*out;
	int			 rc;

	if (cmd_no_options(&cmd_wait_entry, argc, argv, &rc))
		return (rc);
	if (argc - optind != 1)
		return (cmd_usage_error(&cmd_wait_entry, "give one session"));
	if (target_find(ep, argv[optind], &t) == -1)
		return (CLI_EXIT_FAIL);
	/* Through a session's own socket there is no session object (NULL). */
	state = json_string_value(json_object_get(t.session, "state"));
	out = json_object_get(t.session, "outputBytes");
	if (state != NULL && strcmp(state, "exited") == 0)
		rc = cmd_wait_status(t.session);
	else {
		if (json_is_integer(out))
			since = (uint64_t)json_integer_value(out);
		rc = view_run(&t, argv[optind], VIEW_WAIT, -1, &since);
	}
	target_free(&t);
	return (rc);
}
