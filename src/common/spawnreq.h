/*
 * spawnreq.h: what a client asks to run, decoded and checked.
 *
 * One decoder serves the three ways to start a process: a session request
 * (POST /v1/sessions), an exec request (POST /v1/exec) and an exec stream's
 * start message.  REST bodies are converted from JSON to msgpack first, so
 * every request goes through the same checks and the same error messages.
 */
#ifndef SPAWNREQ_H
#define SPAWNREQ_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#define SPAWNREQ_NAME_MAX	64
#define SPAWNREQ_USER_MAX	64
#define SPAWNREQ_ARGS_MAX	4096
#define SPAWNREQ_ENV_MAX	4096
#define SPAWNREQ_SIZE_MAX	10000	/* cols and rows */
#define SPAWNREQ_BUFFER_DEFAULT	(1024 * 1024)
#define SPAWNREQ_BUFFER_MIN	4096

enum spawnreq_kind {
	SPAWN_SESSION,
	SPAWN_EXEC,
	SPAWN_STREAM,
};

struct spawnreq {
	enum spawnreq_kind kind;
	char		 name[SPAWNREQ_NAME_MAX + 1];	/* "" when none */
	char		*command;	/* or NULL */
	char		**args;		/* NULL-terminated, or NULL */
	size_t		 nargs;
	char		*workdir;	/* or NULL */
	char		**env;		/* "K=V", NULL-terminated, or NULL */
	size_t		 nenv;
	char		 user[SPAWNREQ_USER_MAX + 1];	/* "" when none */
	int		 pty;		/* pty (sessions) or tty (streams) */
	int		 client_closes;	/* stream: the client closes after exit */
	int		 cols;
	int		 rows;
	size_t		 buffer_size;
	double		 timeout;	/* seconds, 0 = none */
	char		*stdin_data;	/* exec only */
	size_t		 stdin_len;
	int		 base64;	/* exec: encoding "base64" */
	int64_t		 max_output;	/* exec: per stream, 0 = default */
};

/*
 * Decode o into r.  buffer_max is the ceiling for bufferSize.  On failure
 * returns -1 with a message for the client in why (whylen bytes); r is then
 * freed already.
 */
int	spawnreq_decode(const msgpack_object *o, enum spawnreq_kind,
	    size_t buffer_max, struct spawnreq *r, char *why, size_t whylen);
void	spawnreq_free(struct spawnreq *);

/* Names of sessions: 1-64 of [A-Za-z0-9._-]. */
int	spawnreq_name_valid(const char *, size_t);

#endif
