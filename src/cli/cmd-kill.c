/*
 * cmd-kill.c: "lodge kill": send a signal to sessions.
 */
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "signame.h"

static int	cmd_kill_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_kill_entry = {
	"kill",
	"Send a signal to sessions",
	"[-s SIGNAL] SESSION...",
	"  -s, --signal SIGNAL    a name (INT, SIGINT, int) or a number "
	"(default TERM)\n"
	"\nWith a terminal the signal goes to its foreground process group, "
	"as\nCtrl-C would; without, to the command's process group.\n",
	cmd_kill_exec
};

static const struct option cmd_kill_options[] = {
	{ "signal", required_argument, NULL, 's' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
cmd_kill_exec(const struct endpoint *ep, int argc, char **argv)
{
	json_t			*body;
	const char		*name;
	int			 ch, signo = 15, rc = 0;

	while ((ch = cmd_getopt(&cmd_kill_entry, argc, argv, ":s:h",
	    cmd_kill_options, &rc)) != -1) {
		switch (ch) {
		case 's':
			if ((signo = signame_parse(optarg,
			    strlen(optarg))) == -1)
				return (cmd_usage_error(&cmd_kill_entry,
				    "unknown signal '%s'", optarg));
			break;
		case CMD_OPT_EXIT:
			return (rc);
		}
	}
	if (argc - optind < 1)
		return (cmd_usage_error(&cmd_kill_entry, "give a session"));
	if ((name = signame_name(signo)) != NULL)
		body = json_pack("{s:s}", "signal", name);
	else
		body = json_pack("{s:i}", "signal", signo);
	rc = cmd_each_session(ep, argc, argv, "POST", "/signal", body);
	json_decref(body);
	return (rc);
}
