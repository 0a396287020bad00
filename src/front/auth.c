/*
 * auth.c: who may make a request: the bearer token of TCP clients, and the
 * Host, Origin and Content-Type a browser gives away.
 *
 * The token comes from --token-file, LODGE_TOKEN, or RUNDIR/token, which is
 * generated (mode 0600) when missing and kept across restarts, so clients
 * keep working when the front comes back.  A token file is believed only
 * when it is ours (or root's) and closed to others.  Comparison is
 * constant-time.
 *
 * A web page can make a browser send requests to a loopback port, and with
 * DNS rebinding even read the replies; what it cannot do is know the token,
 * choose the Host and Origin fields, or send a JSON content type without a
 * CORS preflight (which the front never answers).  Where no token is asked,
 * those are what keep pages out.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libwebsockets.h>

#include <systemd/sd-daemon.h>

#include "front.h"
#include "log.h"
#include "token.h"

#define AUTH_TOKEN_BYTES	32

static int
auth_set(const char *s, size_t len, const char *from)
{
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r' ||
	    s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len < 16 || len >= sizeof(front->token)) {
		log_warnx("%s: the token must be 16 to %zu bytes", from,
		    sizeof(front->token) - 1);
		return (-1);
	}
	memcpy(front->token, s, len);
	front->token[len] = '\0';
	front->token_len = len;
	return (0);
}

/*
 * Read the token from a file of ours (or root's, for --token-file) that no
 * one else can read or change; 1 when the file does not exist.
 */
static int
auth_read(int at, const char *path, const char *name, int optional)
{
	struct stat	 st;
	char		 buf[256];
	const char	*why = NULL;
	ssize_t		 n;
	int		 fd;

	if ((fd = openat(at, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1) {
		if (errno == ENOENT && optional)
			return (1);
		if (errno == ELOOP)
			log_warnx("%s: refused, a symbolic link", name);
		else
			log_warn("%s", name);
		return (-1);
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_uid != geteuid() && (at != AT_FDCWD || st.st_uid != 0))
		why = "owned by another user";
	else if (st.st_mode & 077)
		why = "readable or writable by others (chmod 600 it)";
	if (why != NULL) {
		log_warnx("%s: refused, %s", name, why);
		close(fd);
		return (-1);
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0) {
		log_warnx("%s: empty", name);
		return (-1);
	}
	n = auth_set(buf, (size_t)n, name);
	explicit_bzero(buf, sizeof(buf));
	return (n == -1 ? -1 : 0);
}

/* Write all of buf, or fail. */
static int
auth_write_all(int fd, const char *buf, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = write(fd, buf, len)) == -1) {
			if (errno == EINTR)
				continue;
			return (-1);
		}
		buf += n;
		len -= (size_t)n;
	}
	return (0);
}

/*
 * A new token, made whole in token.new and renamed over token: a reader
 * sees the old file or the new one, and a failure (a full disk) leaves
 * neither a partial token nor token.new behind.
 */
static int
auth_generate(const char *name)
{
	unsigned char	 raw[AUTH_TOKEN_BYTES];
	char		 hex[AUTH_TOKEN_BYTES * 2 + 2];
	size_t		 i;
	int		 fd, rc;

	arc4random_buf(raw, sizeof(raw));
	for (i = 0; i < sizeof(raw); i++)
		snprintf(hex + i * 2, 3, "%02x", raw[i]);
	explicit_bzero(raw, sizeof(raw));
	strlcat(hex, "\n", sizeof(hex));
	/* A token.new of a start that failed: ours, the directory is. */
	(void)unlinkat(front->rundir_fd, "token.new", 0);
	if ((fd = openat(front->rundir_fd, "token.new", O_WRONLY | O_CREAT |
	    O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)) == -1) {
		log_warn("%s.new", name);
		return (-1);
	}
	rc = auth_write_all(fd, hex, strlen(hex));
	if (rc == 0)
		rc = fsync(fd);
	if (close(fd) == -1)
		rc = -1;
	if (rc == 0)
		rc = renameat(front->rundir_fd, "token.new", front->rundir_fd,
		    "token");
	if (rc == -1) {
		log_warn("%s", name);
		(void)unlinkat(front->rundir_fd, "token.new", 0);
		explicit_bzero(hex, sizeof(hex));
		return (-1);
	}
	rc = auth_set(hex, strlen(hex), name);
	explicit_bzero(hex, sizeof(hex));
	return (rc);
}

int
auth_init(void)
{
	const char	*env;
	char		 name[600];
	int		 rc;

	if (front->conf.token_file[0] != '\0')
		return (auth_read(AT_FDCWD, front->conf.token_file,
		    front->conf.token_file, 0) == 0 ? 0 : -1);
	if ((env = getenv("LODGE_TOKEN")) != NULL && env[0] != '\0') {
		rc = auth_set(env, strlen(env), "LODGE_TOKEN");
		front->token_from_env = 1;
		/* Workers start with our environment: not with the token. */
		explicit_bzero((char *)env, strlen(env));
		(void)unsetenv("LODGE_TOKEN");
		return (rc);
	}
	snprintf(name, sizeof(name), "%s/token", front->conf.rundir);
	if ((rc = auth_read(front->rundir_fd, "token", name, 1)) == 0)
		return (0);
	if (rc == -1)
		return (-1);
	return (auth_generate(name));
}

/*
 * SIGHUP: read the token again from where it came from (--token-file or
 * RUNDIR/token), so an operator rotates it by writing the file and
 * reloading.  A file refused keeps the token in use; connections already
 * authenticated stay.
 */
void
auth_reload(void)
{
	char	name[600];
	int	rc;

	(void)sd_notify(0, "RELOADING=1");
	if (front->conf.no_auth)
		log_info("reload: --no-auth, no token to read");
	else if (front->conf.token_file[0] != '\0') {
		if (auth_read(AT_FDCWD, front->conf.token_file,
		    front->conf.token_file, 0) == 0)
			log_info("reload: token read from %s",
			    front->conf.token_file);
		else
			log_warnx("reload: the token in use is kept");
	} else if (front->token_from_env)
		log_info("reload: the token came from LODGE_TOKEN; kept");
	else {
		snprintf(name, sizeof(name), "%s/token", front->conf.rundir);
		if ((rc = auth_read(front->rundir_fd, "token", name, 0)) == 0)
			log_info("reload: token read from %s", name);
		else
			log_warnx("reload: the token in use is kept");
	}
	(void)sd_notify(0, "READY=1");
}

/* 1 when the request may pass: a Unix socket, --no-auth, or the token. */
int
auth_check(const struct httphead *h)
{
	const char	*v;
	char		 q[256];
	size_t		 len;
	int		 n;

	if (front->conf.no_auth)
		return (1);
	if ((v = httphead_field(h, "Authorization")) != NULL) {
		if (strncasecmp(v, "Bearer ", 7) != 0)
			return (0);
		v += 7;
		while (*v == ' ')
			v++;
		len = strlen(v);
	} else if ((n = httphead_query(h->query, "access_token", q,
	    sizeof(q))) >= 0) {
		v = q;
		len = (size_t)n;
	} else
		return (0);
	return (token_equal(v, len, front->token, front->token_len));
}

/* The host part of a Host field or listener spec (no port, no brackets). */
static int
auth_host_part(const char *v, char *out, size_t outlen)
{
	const char	*end;
	size_t		 n;

	if (v[0] == '[') {
		if ((end = strchr(v, ']')) == NULL ||
		    (end[1] != '\0' && end[1] != ':'))
			return (-1);
		v++;
	} else if ((end = strchr(v, ':')) == NULL)
		end = v + strlen(v);
	n = (size_t)(end - v);
	if (n == 0 || n >= outlen)
		return (-1);
	memcpy(out, v, n);
	out[n] = '\0';
	return (0);
}

/* 1 when v is one of the n names an --allow-host or --allow-origin gave. */
static int
auth_listed(const char *v, char (*names)[256], int n)
{
	int	i;

	for (i = 0; i < n; i++)
		if (strcasecmp(v, names[i]) == 0)
			return (1);
	return (0);
}

/*
 * 1 when the Host field names this server: a loopback name or address,
 * the listener's own address, or an --allow-host name.  Checked on TCP
 * where no token is asked, and everywhere on TCP once --allow-host is
 * given; Unix sockets are not reachable by a browser and are not checked.
 */
int
auth_host_allowed(const struct listener *l, const struct httphead *h)
{
	const char	*v;
	char		 host[256], own[256];

	if (l->is_unix || (!front->conf.no_auth && front->conf.nhosts == 0))
		return (1);
	/* HTTP/1.0 may omit Host; browsers always send it. */
	if ((v = httphead_field(h, "Host")) == NULL)
		return (1);
	if (auth_host_part(v, host, sizeof(host)) == -1)
		return (0);
	if (listener_host_is_loopback(host))
		return (1);
	if (auth_host_part(l->name, own, sizeof(own)) == 0 &&
	    strcasecmp(host, own) == 0)
		return (1);
	return (auth_listed(host, front->conf.hosts, front->conf.nhosts));
}

/*
 * 1 when the Origin field, if any, may pass: the server's own, or one of
 * --allow-origin.  Only a browser sends Origin, for a page that may be
 * anyone's: with the token or without, a foreign one is kept out.
 */
int
auth_origin_allowed(const struct listener *l, const struct httphead *h)
{
	const char	*origin, *host;

	if ((origin = httphead_field(h, "Origin")) == NULL)
		return (1);
	/*
	 * Its own: http:// and the Host the request came with (a Host that
	 * auth_host_allowed let through where that matters), such as the
	 * page web.c serves.
	 */
	if ((host = httphead_field(h, "Host")) != NULL &&
	    strncasecmp(origin, "http://", 7) == 0 &&
	    strcasecmp(origin + 7, host) == 0)
		return (1);
	return (auth_listed(origin, front->conf.origins,
	    front->conf.norigins));
}

/*
 * 1 when a POST or a body could not have come from a page without a CORS
 * preflight: its Content-Type is application/json.  Only asked where no
 * token is; with a token, curl -d (a form type) keeps working.
 */
int
auth_body_type_allowed(const struct listener *l, const struct httphead *h)
{
	const char	*v;
	size_t		 n = strlen("application/json");

	if (l->is_unix || !front->conf.no_auth)
		return (1);
	if (strcmp(h->method, "POST") != 0 && h->content_length <= 0 &&
	    !h->chunked)
		return (1);
	if ((v = httphead_field(h, "Content-Type")) == NULL)
		return (0);
	if (strncasecmp(v, "application/json", n) != 0)
		return (0);
	return (v[n] == '\0' || v[n] == ';' || v[n] == ' ' || v[n] == '\t');
}
