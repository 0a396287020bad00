/*
 * cmd-attach.c: "lodge attach": the session on our terminal.
 *
 * Through the front, or through the session's own socket when the front
 * does not answer (target.c); the stream itself is view.c's.
 */
#include <getopt.h>

#include "cli.h"

static int	cmd_attach_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_attach_entry = {
	"attach",
	"Attach the terminal to a session",
	"[-r] [-E KEY] SESSION",
	"  -r, --read-only        watch only: keys are not sent, the size is "
	"not set\n"
	"  -E, --detach-key KEY   detach with KEY: ^X for a control key, one\n"
	"                         character, or none (default ^\\)\n"
	"\nSESSION is an id or a name.  Detaching leaves the session running.\n"
	"When the session exits, lodge exits with its status (128+N for\n"
	"signal N).\n",
	cmd_attach_exec
};

static const struct option cmd_attach_options[] = {
	{ "read-only", no_argument, NULL, 'r' },
	{ "detach-key", required_argument, NULL, 'E' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* Attach to ref; lodge's exit status. */
int
cmd_attach_ref(const struct endpoint *ep, const char *ref, int readonly,
    int detach_key)
{
	struct target	t;
	int		rc;

	if (target_find(ep, ref, &t) == -1)
		return (CLI_EXIT_FAIL);
	rc = view_run(&t, ref, readonly ? VIEW_READONLY : VIEW_ATTACH,
	    detach_key, NULL);
	target_free(&t);
	return (rc);
}

static int
cmd_attach_exec(const struct endpoint *ep, int argc, char **argv)
{
	int	ch, rc, readonly = 0, key = 0x1c;

	while ((ch = cmd_getopt(&cmd_attach_entry, argc, argv, ":rE:h",
	    cmd_attach_options, &rc)) != -1) {
		switch (ch) {
		case 'r':
			readonly = 1;
			break;
		case 'E':
			if ((key = escape_key(optarg)) == -2)
				return (cmd_usage_error(&cmd_attach_entry,
				    "-E needs ^X, one character or none, not "
				    "'%s'", optarg));
			break;
		case CMD_OPT_EXIT:
			return (rc);
		}
	}
	if (argc - optind != 1)
		return (cmd_usage_error(&cmd_attach_entry, "give one session"));
	return (cmd_attach_ref(ep, argv[optind], readonly, key));
}
