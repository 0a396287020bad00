/*
 * cmd-rm.c: "lodge rm": delete sessions, ending their processes.
 */
#include <getopt.h>

#include "cli.h"

static int	cmd_rm_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_rm_entry = {
	"rm",
	"Delete sessions",
	"SESSION...",
	"A running session's process group gets SIGHUP, then SIGTERM, then\n"
	"SIGKILL after a grace time; the session and its buffer are gone.\n",
	cmd_rm_exec
};

static int
cmd_rm_exec(const struct endpoint *ep, int argc, char **argv)
{
	int	rc;

	if (cmd_no_options(&cmd_rm_entry, argc, argv, &rc))
		return (rc);
	if (argc - optind < 1)
		return (cmd_usage_error(&cmd_rm_entry, "give a session"));
	return (cmd_each_session(ep, argc, argv, "DELETE", "", NULL));
}
