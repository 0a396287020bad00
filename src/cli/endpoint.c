/*
 * endpoint.c: where lodged listens, and the token that opens it.
 *
 * By default the front's Unix socket RUNDIR/lodged.sock, which needs no
 * token; RUNDIR is --runtime-dir, $LODGE_RUNDIR or /run/lodge.  With --url
 * the front's TCP listener, with the token from --token, $LODGE_TOKEN or
 * RUNDIR/token.  Only a Unix endpoint may fall back to the sessions' own
 * sockets when the front is down.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <libgen.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define ENDPOINT_DEFAULT_PORT	5634

/* Read the token the daemon wrote; quietly none if we may not. */
static void
endpoint_read_token(struct endpoint *ep)
{
	char	 path[600];
	FILE	*f;
	size_t	 n;

	snprintf(path, sizeof(path), "%s/token", ep->rundir);
	if ((f = fopen(path, "re")) == NULL)
		return;
	if (fgets(ep->token, sizeof(ep->token), f) == NULL)
		ep->token[0] = '\0';
	fclose(f);
	n = strcspn(ep->token, "\r\n");
	ep->token[n] = '\0';
}

/* http://HOST[:PORT][/]; HOST may be [v6]. */
static int
endpoint_parse_url(struct endpoint *ep, const char *url)
{
	const char	*p = url, *end, *host;
	char		*ep_end;
	size_t		 n;
	long		 port = ENDPOINT_DEFAULT_PORT;

	if (strncmp(p, "http://", 7) != 0) {
		if (strncmp(p, "https://", 8) == 0)
			report_errorx("%s: https is not supported; use http "
			    "on a trusted network or an SSH tunnel", url);
		else
			report_errorx("%s: the URL must look like "
			    "http://HOST:PORT", url);
		return (-1);
	}
	p += 7;
	host = p;
	if (*p == '[') {
		if ((end = strchr(p, ']')) == NULL)
			goto bad;
		host = p + 1;
		n = (size_t)(end - host);
		p = end + 1;
	} else {
		n = strcspn(p, ":/");
		p += n;
	}
	if (n == 0 || n >= sizeof(ep->host))
		goto bad;
	memcpy(ep->host, host, n);
	ep->host[n] = '\0';
	if (*p == ':') {
		errno = 0;
		port = strtol(p + 1, &ep_end, 10);
		if (ep_end == p + 1 || errno != 0 || port < 1 ||
		    port > 65535)
			goto bad;
		p = ep_end;
	}
	if (*p != '\0' && strcmp(p, "/") != 0)
		goto bad;
	ep->port = (int)port;
	return (0);
bad:
	report_errorx("%s: the URL must look like http://HOST:PORT", url);
	return (-1);
}

int
endpoint_init(struct endpoint *ep, const char *rundir, const char *sock,
    const char *url, const char *token)
{
	char	 copy[sizeof(ep->unix_path)];

	memset(ep, 0, sizeof(*ep));
	if (rundir == NULL)
		rundir = getenv("LODGE_RUNDIR");
	if (rundir == NULL || *rundir == '\0') {
		rundir = LODGE_RUNDIR;
		/* The socket's directory is the runtime dir it belongs to. */
		if (sock != NULL && url == NULL) {
			strlcpy(copy, sock, sizeof(copy));
			rundir = dirname(copy);
		}
	}
	if (strlcpy(ep->rundir, rundir, sizeof(ep->rundir)) >=
	    sizeof(ep->rundir)) {
		report_errorx("the runtime directory name is too long");
		return (-1);
	}
	if (url != NULL) {
		if (endpoint_parse_url(ep, url) == -1)
			return (-1);
		if (token == NULL)
			token = getenv("LODGE_TOKEN");
		if (token != NULL && *token != '\0') {
			if (strlcpy(ep->token, token, sizeof(ep->token)) >=
			    sizeof(ep->token)) {
				report_errorx("the token is too long");
				return (-1);
			}
		} else
			endpoint_read_token(ep);
		return (0);
	}
	if (sock == NULL) {
		if ((size_t)snprintf(ep->unix_path, sizeof(ep->unix_path),
		    "%s/lodged.sock", ep->rundir) >= sizeof(ep->unix_path)) {
			report_errorx("%s: the runtime directory name is too "
			    "long for a socket", ep->rundir);
			return (-1);
		}
	} else if (strlcpy(ep->unix_path, sock, sizeof(ep->unix_path)) >=
	    sizeof(ep->unix_path)) {
		report_errorx("%s: the socket name is too long", sock);
		return (-1);
	}
	ep->fallback = 1;
	return (0);
}

/* An endpoint for a session's own socket: no token, no fallback. */
void
endpoint_unix(struct endpoint *ep, const char *path)
{
	char	rundir[sizeof(ep->rundir)];

	strlcpy(rundir, ep->rundir, sizeof(rundir));
	memset(ep, 0, sizeof(*ep));
	strlcpy(ep->rundir, rundir, sizeof(ep->rundir));
	strlcpy(ep->unix_path, path, sizeof(ep->unix_path));
}

const char *
endpoint_name(const struct endpoint *ep)
{
	static char	name[600];

	if (ep->unix_path[0] != '\0')
		return (ep->unix_path);
	if (strchr(ep->host, ':') != NULL)
		snprintf(name, sizeof(name), "[%s]:%d", ep->host, ep->port);
	else
		snprintf(name, sizeof(name), "%s:%d", ep->host, ep->port);
	return (name);
}

/* A connected blocking socket, or -1 with errno set. */
int
endpoint_connect(const struct endpoint *ep)
{
	struct sockaddr_un	 sun;
	struct addrinfo		 hints, *res, *ai;
	char			 port[16];
	int			 fd = -1, rc, saved = ECONNREFUSED;

	if (ep->unix_path[0] != '\0') {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		strlcpy(sun.sun_path, ep->unix_path, sizeof(sun.sun_path));
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
			return (-1);
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
			saved = errno;
			close(fd);
			errno = saved;
			return (-1);
		}
		return (fd);
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", ep->port);
	if ((rc = getaddrinfo(ep->host, port, &hints, &res)) != 0) {
		errno = rc == EAI_SYSTEM ? errno : EHOSTUNREACH;
		return (-1);
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd == -1) {
			saved = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1)
		errno = saved;
	return (fd);
}
