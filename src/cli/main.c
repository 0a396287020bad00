/*
 * main.c: lodge's entry point: global options, then one command.
 *
 * Global options come before the command; the command parses the rest.
 * Exit status: the command's, 2 for usage errors, 1 for other failures.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct option main_options[] = {
	{ "socket", required_argument, NULL, 'S' },
	{ "runtime-dir", required_argument, NULL, 'R' },
	{ "url", required_argument, NULL, 'U' },
	{ "token", required_argument, NULL, 'T' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

int
main(int argc, char **argv)
{
	const struct cmd_entry	*e;
	struct endpoint		 ep;
	const char		*sock = NULL, *rundir = NULL, *url = NULL;
	const char		*token = NULL;
	int			 ch;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:S:hV", main_options,
	    NULL)) != -1) {
		switch (ch) {
		case 'S':
			sock = optarg;
			break;
		case 'R':
			rundir = optarg;
			break;
		case 'U':
			url = optarg;
			break;
		case 'T':
			token = optarg;
			break;
		case 'h':
			cmd_list(stdout);
			return (0);
		case 'V':
			printf("lodge %s\n", PACKAGE_VERSION);
			return (0);
		default:
			return (cmd_bad_option(NULL, ch, argv));
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		cmd_list(stderr);
		return (CLI_EXIT_USAGE);
	}
	if ((e = cmd_find(argv[0])) == NULL)
		return (cmd_usage_error(NULL, "unknown command '%s'",
		    argv[0]));
	if (sock != NULL && url != NULL)
		return (cmd_usage_error(NULL, "give -S or --url, not both"));
	if (token != NULL && url == NULL)
		return (cmd_usage_error(NULL, "--token goes with --url; the "
		    "Unix socket needs none"));
	memset(&ep, 0, sizeof(ep));
	if (e != &cmd_help_entry &&
	    endpoint_init(&ep, rundir, sock, url, token) == -1)
		return (CLI_EXIT_USAGE);	/* the options were wrong */
	/* The command parses its own argv, its name as argv[0]. */
	optind = 0;
	return (e->exec(&ep, argc, argv));
}
