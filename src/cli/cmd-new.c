/*
 * cmd-new.c: "lodge new": start a session and print its id.
 *
 * A PTY session by default, sized like our terminal when we have one, with
 * our TERM; the command runs directly (no shell) and without one the
 * daemon starts the user's login shell.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "spawnreq.h"

static int	cmd_new_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_new_entry = {
	"new",
	"Start a session and print its id",
	"[-A] [--no-pty] [-n NAME] [-d DIR] [-e NAME=VALUE]... [-u USER]\n"
	"                 [-s COLSxROWS] [--] [COMMAND [ARG...]]",
	"  -n, --name NAME        a unique name to refer to the session by\n"
	"  -d, --workdir DIR      where it starts (default: here, or the\n"
	"                         daemon's default over --url)\n"
	"  -e, --env NAME=VALUE   add to its environment (repeatable)\n"
	"  -u, --user USER        run as USER (lodged must run as root)\n"
	"      --no-pty           pipes instead of a terminal\n"
	"  -s, --size COLSxROWS   the terminal's size (default: ours, or "
	"80x24)\n"
	"  -A, --attach           attach at once instead of printing the id\n"
	"\nWithout COMMAND the session runs the user's login shell.\n",
	cmd_new_exec
};

static const struct option cmd_new_options[] = {
	{ "name", required_argument, NULL, 'n' },
	{ "workdir", required_argument, NULL, 'd' },
	{ "env", required_argument, NULL, 'e' },
	{ "user", required_argument, NULL, 'u' },
	{ "no-pty", no_argument, NULL, 'P' },
	{ "size", required_argument, NULL, 's' },
	{ "attach", no_argument, NULL, 'A' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* "COLSxROWS", each 1 to SPAWNREQ_SIZE_MAX. */
static int
cmd_new_size(const char *s, int *cols, int *rows)
{
	char	*end;
	long	 c, r;

	c = strtol(s, &end, 10);
	if (end == s || (*end != 'x' && *end != 'X'))
		return (-1);
	s = end + 1;
	r = strtol(s, &end, 10);
	if (end == s || *end != '\0' || c < 1 || r < 1 ||
	    c > SPAWNREQ_SIZE_MAX || r > SPAWNREQ_SIZE_MAX)
		return (-1);
	*cols = (int)c;
	*rows = (int)r;
	return (0);
}

static int
cmd_new_exec(const struct endpoint *ep, int argc, char **argv)
{
	struct rest_reply	 r;
	json_t			*req, *env, *args, *s = NULL;
	const char		*dir = NULL, *user = NULL, *name = NULL;
	const char		*id, *term;
	int			 ch, pty = 1, attach = 0, cols = 0, rows = 0;
	int			 rc = CLI_EXIT_FAIL, i;

	req = json_object();
	env = json_object();
	while ((ch = cmd_getopt(&cmd_new_entry, argc, argv, "+:n:d:e:u:s:Ah",
	    cmd_new_options, &rc)) != -1) {
		switch (ch) {
		case 'n':
			if (!spawnreq_name_valid(optarg, strlen(optarg))) {
				rc = cmd_usage_error(&cmd_new_entry, "a name "
				    "is 1 to 64 of A-Z a-z 0-9 . _ -");
				goto out;
			}
			name = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'e':
			if ((rc = cmd_env_add(env, optarg,
			    &cmd_new_entry)) != 0)
				goto out;
			rc = CLI_EXIT_FAIL;
			break;
		case 'u':
			user = optarg;
			break;
		case 'P':
			pty = 0;
			break;
		case 's':
			if (cmd_new_size(optarg, &cols, &rows) == -1) {
				rc = cmd_usage_error(&cmd_new_entry, "-s needs "
				    "COLSxROWS such as 120x40");
				goto out;
			}
			break;
		case 'A':
			attach = 1;
			break;
		case CMD_OPT_EXIT:
			goto out;
		}
	}
	if (pty && cols == 0 && isatty(STDIN_FILENO))
		(void)tty_size(STDIN_FILENO, &cols, &rows);
	if (pty && json_object_get(env, "TERM") == NULL && isatty(STDIN_FILENO) &&
	    (term = getenv("TERM")) != NULL && *term != '\0')
		json_object_set_new(env, "TERM", json_string(term));

	json_object_set_new(req, "pty", json_boolean(pty));
	if (name != NULL)
		json_object_set_new(req, "name", json_string(name));
	if (optind < argc) {
		args = json_array();
		for (i = optind; i < argc; i++) {
			if (json_array_append_new(args,
			    json_string(argv[i])) == -1) {
				json_decref(args);
				rc = cmd_usage_error(&cmd_new_entry, "the "
				    "command must be valid UTF-8");
				goto out;
			}
		}
		json_object_set_new(req, "args", args);
	}
	if (user != NULL)
		json_object_set_new(req, "user", json_string(user));
	/* Another user may not be able to enter our directory. */
	if ((dir != NULL || user == NULL) &&
	    cmd_workdir(req, dir, ep) != 0)
		goto out;
	if (json_object_size(env) > 0)
		json_object_set(req, "env", env);
	if (cols > 0) {
		json_object_set_new(req, "cols", json_integer(cols));
		json_object_set_new(req, "rows", json_integer(rows));
	}

	if (rest_expect(ep, "POST", "/v1/sessions", req, -1, 201, &r) == -1)
		goto out;
	s = rest_json(&r);
	rest_reply_free(&r);
	if (s == NULL)
		goto out;
	if ((id = json_string_value(json_object_get(s, "id"))) == NULL) {
		report_errorx("lodged sent a session without an id");
		goto out;
	}
	if (!attach) {
		printf("%s\n", id);
		rc = fflush(stdout) == 0 ? 0 : CLI_EXIT_FAIL;
		goto out;
	}
	rc = cmd_attach_ref(ep, id, 0, 0x1c);
out:
	json_decref(s);
	json_decref(env);
	json_decref(req);
	return (rc);
}
