/*
 * cmd-ls.c: "lodge ls": the sessions, as a table or as the server's JSON.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static int	cmd_ls_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_ls_entry = {
	"ls",
	"List sessions",
	"[--json]",
	"  --json     print the server's JSON ({\"sessions\":[...]})\n"
	"\nColumns: NAME ID PID STATE CLIENTS SIZE (output so far) AGE "
	"COMMAND.\n",
	cmd_ls_exec
};

static const struct option cmd_ls_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "names", no_argument, NULL, 'n' },	/* for completion */
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* The command line of a session as one string. */
static void
cmd_ls_command(json_t *s, char *buf, size_t len)
{
	json_t		*args = json_object_get(s, "args"), *a;
	const char	*cmd = json_string_value(json_object_get(s, "command"));
	size_t		 i;

	buf[0] = '\0';
	if (json_is_array(args)) {
		json_array_foreach(args, i, a) {
			if (i > 0)
				strlcat(buf, " ", len);
			strlcat(buf, json_string_value(a) != NULL ?
			    json_string_value(a) : "?", len);
		}
	} else if (cmd != NULL)
		strlcpy(buf, cmd, len);
	else
		strlcpy(buf, "(login shell)", len);
}

static void
cmd_ls_state(json_t *s, char *buf, size_t len)
{
	const char	*state = json_string_value(json_object_get(s, "state"));
	const char	*sig = json_string_value(json_object_get(s, "signal"));
	json_t		*code = json_object_get(s, "exitCode");

	if (state == NULL)
		state = "?";
	if (strcmp(state, "exited") != 0)
		strlcpy(buf, state, len);
	else if (json_is_integer(code))
		snprintf(buf, len, "exited(%lld)",
		    (long long)json_integer_value(code));
	else if (sig != NULL)
		snprintf(buf, len, "killed(%s)", sig);
	else
		strlcpy(buf, "exited", len);
}

static void
cmd_ls_table(json_t *list)
{
	json_t		*s;
	size_t		 i;
	char		 state[32], size[16], age[16], cmd[1024];
	const char	*name, *id, *created;
	time_t		 t, now = time(NULL);

	printf("%-16s %-32s %7s %-12s %7s %6s %5s %s\n", "NAME", "ID", "PID",
	    "STATE", "CLIENTS", "SIZE", "AGE", "COMMAND");
	json_array_foreach(list, i, s) {
		name = json_string_value(json_object_get(s, "name"));
		id = json_string_value(json_object_get(s, "id"));
		created = json_string_value(json_object_get(s, "createdAt"));
		cmd_ls_state(s, state, sizeof(state));
		human_size((uint64_t)json_integer_value(json_object_get(s,
		    "outputBytes")), size, sizeof(size));
		if (created != NULL && human_time(created, &t) == 0)
			human_age((int64_t)(now - t), age, sizeof(age));
		else
			strlcpy(age, "?", sizeof(age));
		cmd_ls_command(s, cmd, sizeof(cmd));
		printf("%-16s %-32s %7lld %-12s %7lld %6s %5s %s\n",
		    name != NULL ? name : "-", id != NULL ? id : "?",
		    (long long)json_integer_value(json_object_get(s, "pid")),
		    state,
		    (long long)json_integer_value(json_object_get(s,
		    "clients")), size, age, cmd);
	}
}

static int
cmd_ls_exec(const struct endpoint *ep, int argc, char **argv)
{
	struct rest_reply	 r;
	json_t			*j, *list, *s;
	const char		*ref;
	size_t			 i;
	int			 ch, rc, json = 0, names = 0;

	while ((ch = cmd_getopt(&cmd_ls_entry, argc, argv, ":jnh",
	    cmd_ls_options, &rc)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		case 'n':
			names = 1;
			break;
		case CMD_OPT_EXIT:
			return (rc);
		}
	}
	if (optind != argc)
		return (cmd_usage_error(&cmd_ls_entry, "no arguments, please"));
	if (rest_expect(ep, "GET", "/v1/sessions", NULL, -1, 200, &r) == -1)
		return (CLI_EXIT_FAIL);
	if ((j = rest_json(&r)) == NULL ||
	    !json_is_array(list = json_object_get(j, "sessions"))) {
		if (j != NULL)
			report_errorx("lodged sent no session list");
		json_decref(j);
		rest_reply_free(&r);
		return (CLI_EXIT_FAIL);
	}
	if (json) {
		fwrite(r.body, 1, r.len, stdout);
		if (r.len > 0 && r.body[r.len - 1] != '\n')
			putchar('\n');
	} else if (names) {
		json_array_foreach(list, i, s) {
			ref = json_string_value(json_object_get(s, "name"));
			if (ref == NULL)
				ref = json_string_value(json_object_get(s,
				    "id"));
			if (ref != NULL)
				printf("%s\n", ref);
		}
	} else
		cmd_ls_table(list);
	json_decref(j);
	rest_reply_free(&r);
	if (fflush(stdout) == EOF || ferror(stdout)) {
		report_error("write");
		return (CLI_EXIT_FAIL);
	}
	return (0);
}
