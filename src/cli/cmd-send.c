/*
 * cmd-send.c: "lodge send": input for a session without attaching.
 *
 * The words are joined with spaces and their escapes decoded (escape.c);
 * the bytes travel as base64, so any byte may be sent.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int	cmd_send_exec(const struct endpoint *, int, char **);

const struct cmd_entry cmd_send_entry = {
	"send",
	"Send input to a session",
	"SESSION TEXT...",
	"TEXT words are joined with spaces; nothing is added at the end.\n"
	"Escapes: \\n (newline), \\r (return: Enter in a terminal), \\t, "
	"\\e (escape),\n"
	"\\\\ (backslash), \\xHH (any byte).  Put -- before TEXT that starts "
	"with -.\n",
	cmd_send_exec
};

static int
cmd_send_exec(const struct endpoint *ep, int argc, char **argv)
{
	struct rest_reply	 r;
	json_t			*body;
	char			*text = NULL, *data = NULL, *b64 = NULL;
	char			*path = NULL, why[256];
	size_t			 len = 0, n, b64len;
	int			 i, rc = CLI_EXIT_FAIL;

	if (cmd_no_options(&cmd_send_entry, argc, argv, &rc))
		return (rc);
	if (argc - optind < 2)
		return (cmd_usage_error(&cmd_send_entry, "give a session and "
		    "the text"));
	for (i = optind + 1; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if ((text = malloc(len)) == NULL) {
		report_error("malloc");
		return (CLI_EXIT_FAIL);
	}
	text[0] = '\0';
	for (i = optind + 1; i < argc; i++) {
		if (i > optind + 1)
			strlcat(text, " ", len);
		strlcat(text, argv[i], len);
	}
	if (escape_decode(text, &data, &n, why, sizeof(why)) == -1) {
		free(text);
		return (cmd_usage_error(&cmd_send_entry, "%s", why));
	}
	free(text);
	b64len = (n + 2) / 3 * 4 + 8;
	if ((b64 = malloc(b64len)) == NULL) {
		report_error("malloc");
		goto out;
	}
	if (lws_b64_encode_string(data, (int)n, b64, (int)b64len) < 0) {
		report_errorx("cannot encode the input");
		goto out;
	}
	if ((path = target_path(argv[optind], "/input")) == NULL)
		goto out;
	body = json_pack("{s:s}", "dataBase64", b64);
	if (rest_expect(ep, "POST", path, body, -1, 204, &r) == 0) {
		rest_reply_free(&r);
		rc = 0;
	}
	json_decref(body);
out:
	free(path);
	free(b64);
	free(data);
	return (rc);
}
