/*
 * cmd.c: the command table, usage and help, and what commands share.
 *
 * Each command lives in cmd-NAME.c with its entry: name, a summary, the
 * usage line and the help text that "lodge help NAME" and "lodge NAME
 * --help" print.  Usage errors print one line and the usage, and exit 2.
 */
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int	cmd_help_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_help_entry = {
	"help",
	"Show the commands, or one command's options",
	"[COMMAND]",
	"",
	cmd_help_exec
};

static const struct cmd_entry *cmd_table[] = {
	&cmd_ls_entry,
	&cmd_new_entry,
	&cmd_attach_entry,
	&cmd_log_entry,
	&cmd_send_entry,
	&cmd_kill_entry,
	&cmd_rm_entry,
	&cmd_wait_entry,
	&cmd_exec_entry,
	&cmd_help_entry,
	NULL
};

const struct cmd_entry *
cmd_find(const char *name)
{
	size_t	i;

	for (i = 0; cmd_table[i] != NULL; i++)
		if (strcmp(cmd_table[i]->name, name) == 0)
			return (cmd_table[i]);
	return (NULL);
}

static void
cmd_usage(const struct cmd_entry *e, FILE *f)
{
	fprintf(f, "usage: lodge %s%s%s\n", e->name, *e->usage != '\0' ?
	    " " : "", e->usage);
}

static void
cmd_help(const struct cmd_entry *e, FILE *f)
{
	cmd_usage(e, f);
	fprintf(f, "\n%s.\n", e->summary);
	if (e->help != NULL && *e->help != '\0')
		fprintf(f, "\n%s", e->help);
}

void
cmd_list(FILE *f)
{
	size_t	i;

	fprintf(f, "usage: lodge [-S socket | --url http://HOST:PORT "
	    "[--token TOKEN]]\n"
	    "             [--runtime-dir DIR] COMMAND [ARGS...]\n\n"
	    "Commands:\n");
	for (i = 0; cmd_table[i] != NULL; i++)
		fprintf(f, "  %-8s %s\n", cmd_table[i]->name,
		    cmd_table[i]->summary);
	fprintf(f, "\nOptions:\n"
	    "  -S, --socket PATH      the front's Unix socket "
	    "(default RUNDIR/lodged.sock)\n"
	    "      --runtime-dir DIR  RUNDIR (default $LODGE_RUNDIR or "
	    "%s)\n"
	    "      --url URL          talk to http://HOST:PORT instead\n"
	    "      --token TOKEN      the token for --url (default "
	    "$LODGE_TOKEN, RUNDIR/token)\n"
	    "  -h, --help             this help\n"
	    "  -V, --version          the version\n"
	    "\nRun 'lodge help COMMAND' for a command's options.\n",
	    LODGE_RUNDIR);
}

int
cmd_usage_error(const struct cmd_entry *e, const char *fmt, ...)
{
	char	msg[512];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "lodge: %s%s%s\n", e != NULL ? e->name : "",
	    e != NULL ? ": " : "", msg);
	if (e != NULL)
		cmd_usage(e, stderr);
	else
		fprintf(stderr, "Run 'lodge help' for the commands.\n");
	return (CLI_EXIT_USAGE);
}

/* What getopt_long returned for a bad option (optstring starts ':'). */
int
cmd_bad_option(const struct cmd_entry *e, int ch, char **argv)
{
	char		 letter[3] = { '-', (char)optopt, '\0' };
	const char	*opt = optopt != 0 ? letter : argv[optind - 1];

	/* A long option's optopt is its value, a letter it may not have. */
	if (strncmp(argv[optind - 1], "--", 2) == 0)
		opt = argv[optind - 1];
	if (ch == ':')
		return (cmd_usage_error(e, "option %s needs a value", opt));
	return (cmd_usage_error(e, "unknown option %s", opt));
}

/*
 * getopt_long for command e, answering -h (help on stdout) and a bad
 * option (a usage error) itself: then CMD_OPT_EXIT, with *rc what the
 * command returns.
 */
int
cmd_getopt(const struct cmd_entry *e, int argc, char **argv,
    const char *optstring, const struct option *longopts, int *rc)
{
	int	ch;

	switch ((ch = getopt_long(argc, argv, optstring, longopts, NULL))) {
	case 'h':
		cmd_help(e, stdout);
		*rc = 0;
		return (CMD_OPT_EXIT);
	case ':':
	case '?':
		*rc = cmd_bad_option(e, ch, argv);
		return (CMD_OPT_EXIT);
	default:
		return (ch);
	}
}

/* For a command whose only option is -h: 1 when it ends the command. */
int
cmd_no_options(const struct cmd_entry *e, int argc, char **argv, int *rc)
{
	static const struct option	help_only[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};

	return (cmd_getopt(e, argc, argv, ":h", help_only, rc) ==
	    CMD_OPT_EXIT);
}

/* METHOD .../SESSION/suffix for each session named from optind: 204 each. */
int
cmd_each_session(const struct endpoint *ep, int argc, char **argv,
    const char *method, const char *suffix, json_t *body)
{
	struct rest_reply	 r;
	char			*path;
	int			 i, rc = 0;

	for (i = optind; i < argc; i++) {
		if ((path = target_path(argv[i], suffix)) == NULL ||
		    rest_expect(ep, method, path, body, -1, 204, &r) == -1)
			rc = CLI_EXIT_FAIL;
		else
			rest_reply_free(&r);
		free(path);
	}
	return (rc);
}

/* Add "K=V" to the JSON object env; a usage error if it is not that. */
int
cmd_env_add(json_t *env, const char *kv, const struct cmd_entry *e)
{
	const char	*eq = strchr(kv, '=');
	char		*key;
	int		 rc;

	if (eq == NULL || eq == kv)
		return (cmd_usage_error(e, "-e needs NAME=VALUE, not '%s'",
		    kv));
	if ((key = strndup(kv, (size_t)(eq - kv))) == NULL) {
		report_error("strndup");
		return (CLI_EXIT_FAIL);
	}
	rc = json_object_set_new(env, key, json_string(eq + 1));
	free(key);
	if (rc == -1)
		return (cmd_usage_error(e, "-e '%s' is not valid UTF-8", kv));
	return (0);
}

/*
 * Set "workDir" in req: dir made absolute against our own directory, or,
 * with no dir, our own directory when lodged is local (a Unix socket), as
 * a shell or tmux would start there; over TCP the daemon's default.
 */
int
cmd_workdir(json_t *req, const char *dir, const struct endpoint *ep)
{
	char	cwd[PATH_MAX], *full;
	int	rc;

	if (dir == NULL && ep->unix_path[0] == '\0')
		return (0);
	if (dir != NULL && (dir[0] == '/' || ep->unix_path[0] == '\0'))
		return (json_object_set_new(req, "workDir",
		    json_string(dir)) == 0 ? 0 : CLI_EXIT_FAIL);
	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		if (dir == NULL)
			return (0);	/* the daemon's default, then */
		report_error("getcwd");
		return (CLI_EXIT_FAIL);
	}
	if (dir == NULL)
		full = strdup(cwd);
	else if (asprintf(&full, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd,
	    dir) == -1)
		full = NULL;
	if (full == NULL) {
		report_error("asprintf");
		return (CLI_EXIT_FAIL);
	}
	rc = json_object_set_new(req, "workDir", json_string(full));
	free(full);
	return (rc == 0 ? 0 : CLI_EXIT_FAIL);
}

static int
cmd_help_exec(const struct endpoint *ep, int argc, char **argv)
{
	const struct cmd_entry	*e;

	if (argc == 1) {
		cmd_list(stdout);
		return (0);
	}
	if (argc > 2)
		return (cmd_usage_error(&cmd_help_entry, "give one command"));
	if ((e = cmd_find(argv[1])) == NULL)
		return (cmd_usage_error(&cmd_help_entry, "unknown command "
		    "'%s'", argv[1]));
	cmd_help(e, stdout);
	return (0);
}
