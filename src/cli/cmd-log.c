/*
 * cmd-log.c: "lodge log": a session's output buffer, raw, on stdout.
 *
 * The buffer comes from GET .../log (written through as it arrives); -f
 * then follows from where that ended, through a read-only attach.  Both
 * work through the session's own socket when the front is down.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int	cmd_log_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_log_entry = {
	"log",
	"Print a session's output buffer",
	"[-f] [--since OFFSET] SESSION",
	"  -f, --follow           then print new output until the session "
	"exits\n"
	"      --since OFFSET     start at this output offset (bytes since the"
	"\n                         session started) instead of the oldest "
	"byte held\n"
	"\nThe bytes are written as the program wrote them, stdout and stderr"
	"\ninterleaved.\n",
	cmd_log_exec
};

static const struct option cmd_log_options[] = {
	{ "follow", no_argument, NULL, 'f' },
	{ "since", required_argument, NULL, 'S' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
cmd_log_exec(const struct endpoint *ep, int argc, char **argv)
{
	struct target		 t;
	struct rest_reply	 r;
	const char		*ref;
	char			*path, *end, suffix[48];
	unsigned long long	 since = 0;
	int			 ch, follow = 0, since_set = 0, rc, n;

	while ((ch = cmd_getopt(&cmd_log_entry, argc, argv, ":fh",
	    cmd_log_options, &rc)) != -1) {
		switch (ch) {
		case 'f':
			follow = 1;
			break;
		case 'S':
			errno = 0;
			since = strtoull(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' ||
			    *end != '\0' || errno != 0 ||
			    since > INT64_MAX / 2)
				return (cmd_usage_error(&cmd_log_entry,
				    "--since needs a byte offset"));
			since_set = 1;
			break;
		case CMD_OPT_EXIT:
			return (rc);
		}
	}
	if (argc - optind != 1)
		return (cmd_usage_error(&cmd_log_entry, "give one session"));
	ref = argv[optind];

	if (target_find(ep, ref, &t) == -1)
		return (CLI_EXIT_FAIL);
	rc = CLI_EXIT_FAIL;
	if (since_set)
		snprintf(suffix, sizeof(suffix), "/log?since=%llu", since);
	if ((path = target_path(ref, since_set ? suffix : "/log")) == NULL)
		goto out;
	/* The body goes straight to stdout as it arrives. */
	n = rest_expect(&t.ep, "GET", path, NULL, STDOUT_FILENO, 200, &r);
	free(path);
	if (n == -1)
		goto out;
	rest_reply_free(&r);
	if (!follow) {
		rc = 0;
		goto out;
	}
	if (!r.have_range) {
		report_errorx("lodged did not say where the log ends");
		goto out;
	}
	rc = view_run(&t, ref, VIEW_FOLLOW, -1, &r.log_end);
out:
	target_free(&t);
	return (rc);
}
