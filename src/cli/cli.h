/*
 * cli.h: lodge, the command-line client of lodged.
 *
 * A command parses its options, makes blocking REST calls (rest.c) and
 * perhaps runs one WebSocket stream (ws.c) in an event loop (loop.c) that
 * also owns our standard input and output, with bounded buffers both ways.
 * The terminal (tty.c) is restored on every way out.  Errors are one line
 * on stderr (report.c); usage errors exit 2, other failures 1.
 */
#ifndef CLI_H
#define CLI_H

#include <sys/types.h>
#include <sys/un.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <jansson.h>
#include <libwebsockets.h>
#include <msgpack.h>

#define CLI_EXIT_USAGE		2
#define CLI_EXIT_FAIL		1

/* endpoint.c: where lodged is, and how to authenticate to it */
struct endpoint {
	char		 unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char		 host[256];	/* TCP when unix_path is "" */
	int		 port;
	char		 token[512];	/* "" for none */
	char		 rundir[512];	/* for the token and session sockets */
	int		 fallback;	/* may reach session sockets directly */
};

int	 endpoint_init(struct endpoint *, const char *rundir,
	     const char *sock, const char *url, const char *token);
void	 endpoint_unix(struct endpoint *, const char *path);
int	 endpoint_connect(const struct endpoint *);
const char *endpoint_name(const struct endpoint *);

/* rest.c: one blocking HTTP/1.1 request and its reply */
struct rest_reply {
	int		 status;
	char		*body;		/* NUL-terminated; NULL if sunk */
	size_t		 len;
	int		 have_range;	/* Lodge-Log-Start/-End were sent */
	uint64_t	 log_start;
	uint64_t	 log_end;
};

#define REST_OK		0
#define REST_FAIL	-1	/* reported already */
#define REST_NOCONNECT	-2	/* connect failed, errno set; not reported */

int	 rest_call(const struct endpoint *, const char *method,
	     const char *path, json_t *body, int sink, struct rest_reply *);
int	 rest_expect(const struct endpoint *, const char *, const char *,
	     json_t *, int sink, int expect, struct rest_reply *);
void	 rest_reply_free(struct rest_reply *);
json_t	*rest_json(const struct rest_reply *);
void	 rest_report(const struct rest_reply *);
char	*rest_escape(const char *);
void	 rest_report_noconnect(const struct endpoint *);

/* report.c: what the user reads on stderr */
void	 report_quiet(int);
void	 report(const char *prefix, int with_errno, const char *, ...)
	     __attribute__((format(printf, 3, 4)));
#define report_error(...)	report("lodge: ", 1, __VA_ARGS__)
#define report_errorx(...)	report("lodge: ", 0, __VA_ARGS__)
/* A notice in brackets: the caller writes the brackets. */
#define report_notice(...)	report("", 0, __VA_ARGS__)
/* An "error" message from lodged, as one line. */
void	 report_server_error(const msgpack_object *);

/* tty.c: the terminal's mode, size and the signals that end us */
#define TTY_RAW		0	/* everything to the remote terminal */
#define TTY_CHAR	1	/* bytes at once, but local echo */

int	 tty_raw(int fd, int how);
void	 tty_restore(void);
int	 tty_is_raw(void);
int	 tty_size(int fd, int *cols, int *rows);
void	 tty_nonblock(int fd);
void	 tty_exit_on_signals(void);

/* loop.c: the event loop, stdin, stdout/stderr and signals */
struct loop_ops {
	void	(*input)(const char *, size_t);	/* bytes read from stdin */
	void	(*input_eof)(void);
	void	(*signal)(int);
};

int	 loop_init(const struct loop_ops *);
void	 loop_free(void);
struct lws *loop_connect(struct lws_client_connect_info *);
int	 loop_watch_input(void);
void	 loop_pause_input(int);
int	 loop_catch(int signo);
int	 loop_output(int fd, const void *, size_t);
int	 loop_output_full(void);
void	 loop_output_flush(void);
int	 loop_last_byte(void);
int	 loop_run(void);
void	 loop_quit(int status);

/* ws.c: the one WebSocket stream of msgpack messages */
struct ws_ops {
	void	(*established)(void);
	void	(*message)(const msgpack_object *);
	void	(*closed)(int code, const char *why);	/* code 0: failed */
};

int	 ws_open(const struct endpoint *, const char *path,
	     const struct ws_ops *);
int	 ws_send(const msgpack_sbuffer *);
int	 ws_send_full(void);
void	 ws_send_stdin(const char *, size_t);
void	 ws_send_size(void);	/* our terminal's, as a resize */
void	 ws_send_json(json_t *);
void	 ws_output(const msgpack_object *, int fd);
void	 ws_pause(int);
void	 ws_close(void);
int	 ws_callback(struct lws *, enum lws_callback_reasons, void *, void *,
	     size_t);

/* escape.c: text with backslash escapes, and key names */
int	 escape_decode(const char *, char **, size_t *, char *, size_t);
int	 escape_key(const char *);

/* human.c: sizes, ages and times for people */
void	 human_size(uint64_t, char *, size_t);
void	 human_age(int64_t, char *, size_t);
int	 human_time(const char *, time_t *);

/* target.c: a session reference and how to reach it */
struct target {
	struct endpoint	 ep;		/* the front, or the session's socket */
	int		 direct;	/* through the session's own socket */
	json_t		*session;	/* from the front; NULL when direct */
};

int	 target_find(const struct endpoint *, const char *ref,
	     struct target *);
void	 target_free(struct target *);
char	*target_path(const char *ref, const char *suffix);

/* view.c: an attach stream shown on the terminal */
enum view_mode {
	VIEW_ATTACH,		/* interactive */
	VIEW_READONLY,		/* attach -r */
	VIEW_FOLLOW,		/* log -f: output only, no terminal changes */
	VIEW_WAIT,		/* wait: nothing shown */
};

/* detach_key -1: none; since NULL: from the oldest byte held */
int	 view_run(const struct target *, const char *ref, enum view_mode,
	     int detach_key, const uint64_t *since);
int	 view_exit_status(const msgpack_object *, char *, size_t);

/* cmd.c: the command table, usage and help */
struct cmd_entry {
	const char	*name;
	const char	*summary;	/* one line for the command list */
	const char	*usage;		/* after "lodge NAME " */
	const char	*help;		/* options, one per line */
	int		(*exec)(const struct endpoint *, int, char **);
};

const struct cmd_entry *cmd_find(const char *);
void	 cmd_list(FILE *);
int	 cmd_usage_error(const struct cmd_entry *, const char *, ...)
	     __attribute__((format(printf, 2, 3)));
int	 cmd_bad_option(const struct cmd_entry *, int, char **);
struct option;
#define CMD_OPT_EXIT	-2	/* from cmd_getopt: return *rc */
int	 cmd_getopt(const struct cmd_entry *, int, char **, const char *,
	     const struct option *, int *rc);
int	 cmd_no_options(const struct cmd_entry *, int, char **, int *rc);
int	 cmd_each_session(const struct endpoint *, int, char **,
	     const char *method, const char *suffix, json_t *body);
int	 cmd_env_add(json_t *, const char *, const struct cmd_entry *);
int	 cmd_workdir(json_t *, const char *, const struct endpoint *);

extern const struct cmd_entry cmd_ls_entry;
extern const struct cmd_entry cmd_new_entry;
extern const struct cmd_entry cmd_attach_entry;
extern const struct cmd_entry cmd_log_entry;
extern const struct cmd_entry cmd_send_entry;
extern const struct cmd_entry cmd_kill_entry;
extern const struct cmd_entry cmd_rm_entry;
extern const struct cmd_entry cmd_wait_entry;
extern const struct cmd_entry cmd_exec_entry;
extern const struct cmd_entry cmd_help_entry;

/* cmd-attach.c: also used by "new -A" */
int	 cmd_attach_ref(const struct endpoint *, const char *ref,
	     int readonly, int detach_key);

#endif
