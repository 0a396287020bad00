/*
 * auth.c: the bearer token of TCP clients.
 *
 * The token comes from --token-file, LODGE_TOKEN, or RUNDIR/token, which is
 * generated (mode 0600) when missing and kept across restarts, so clients
 * keep working when the front comes back.  Comparison is constant-time.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "front.h"
#include "log.h"

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

static int
auth_read(const char *path, int must_be_private)
{
	struct stat	 st;
	char		 buf[256];
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		if (errno != ENOENT || !must_be_private)
			log_warn("%s", path);
		return (errno == ENOENT ? 1 : -1);
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		log_warnx("%s: not a regular file", path);
		close(fd);
		return (-1);
	}
	if (st.st_mode & 077) {
		log_warnx("%s: refused, readable by others (chmod 600 it)",
		    path);
		close(fd);
		return (-1);
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0) {
		log_warnx("%s: empty", path);
		return (-1);
	}
	return (auth_set(buf, (size_t)n, path) == -1 ? -1 : 0);
}

static int
auth_generate(const char *path)
{
	unsigned char	 raw[AUTH_TOKEN_BYTES];
	char		 hex[AUTH_TOKEN_BYTES * 2 + 2];
	char		 tmp[700];
	size_t		 i;
	int		 fd;

	arc4random_buf(raw, sizeof(raw));
	for (i = 0; i < sizeof(raw); i++)
		snprintf(hex + i * 2, 3, "%02x", raw[i]);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1) {
		log_warn("%s", tmp);
		return (-1);
	}
	strlcat(hex, "\n", sizeof(hex));
	if (write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex) ||
	    fchmod(fd, 0600) == -1 || close(fd) == -1 ||
	    rename(tmp, path) == -1) {
		log_warn("%s", path);
		return (-1);
	}
	return (auth_set(hex, strlen(hex), path));
}

int
auth_init(void)
{
	const char	*env;
	char		 path[600];
	int		 rc;

	if (front->conf.token_file[0] != '\0')
		return (auth_read(front->conf.token_file, 0) == 0 ? 0 : -1);
	if ((env = getenv("LODGE_TOKEN")) != NULL && env[0] != '\0')
		return (auth_set(env, strlen(env), "LODGE_TOKEN"));
	snprintf(path, sizeof(path), "%s/token", front->conf.rundir);
	if ((rc = auth_read(path, 1)) == 0)
		return (0);
	if (rc == -1)
		return (-1);
	return (auth_generate(path));
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
	if (len != front->token_len)
		return (0);
	return (lws_timingsafe_bcmp(v, front->token, (uint32_t)len) == 0);
}
