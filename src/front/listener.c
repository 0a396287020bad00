/*
 * listener.c: the front's listening sockets, TCP and Unix.
 *
 * Accepting never spins: when descriptors run out, a listener pauses and
 * tries again a little later.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "front.h"
#include "log.h"

#define LISTENER_PAUSE_MS	250

/* Split HOST:PORT ([v6]:PORT too) into its parts. */
static int
listener_split(const char *spec, char *host, size_t hostlen, char *port,
    size_t portlen)
{
	const char	*colon;
	size_t		 n;

	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (close == NULL || close[1] != ':')
			return (-1);
		n = (size_t)(close - spec - 1);
		colon = close + 1;
		spec++;
	} else {
		if ((colon = strrchr(spec, ':')) == NULL)
			return (-1);
		n = (size_t)(colon - spec);
	}
	if (n == 0 || n >= hostlen || strlen(colon + 1) == 0 ||
	    strlen(colon + 1) >= portlen)
		return (-1);
	memcpy(host, spec, n);
	host[n] = '\0';
	strlcpy(port, colon + 1, portlen);
	return (0);
}

/* A host (no port, no brackets) that is a loopback name or address. */
int
listener_host_is_loopback(const char *host)
{
	struct in_addr	 a4;
	struct in6_addr	 a6;

	if (strcasecmp(host, "localhost") == 0)
		return (1);
	if (inet_pton(AF_INET, host, &a4) == 1)
		return ((ntohl(a4.s_addr) >> 24) == 127);
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return (IN6_IS_ADDR_LOOPBACK(&a6));
	return (0);
}

int
listener_is_loopback(const char *spec)
{
	char	host[256], port[32];

	if (listener_split(spec, host, sizeof(host), port, sizeof(port)) == -1)
		return (0);
	return (listener_host_is_loopback(host));
}

static LIST_HEAD(, listener) listeners = LIST_HEAD_INITIALIZER(listeners);

static struct listener *
listener_new(int fd, int is_unix, const char *name)
{
	struct listener	*l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		fatal("calloc");
	LIST_INSERT_HEAD(&listeners, l, entry);
	l->ffd.kind = FFD_LISTEN;
	l->ffd.ptr = l;
	l->fd = fd;
	l->is_unix = is_unix;
	strlcpy(l->name, name, sizeof(l->name));
	return (l);
}

int
listener_open(const char *spec, struct listener **lp)
{
	struct addrinfo	 hints, *res, *ai;
	char		 host[256], port[32];
	int		 fd = -1, one = 1, rc;

	if (listener_split(spec, host, sizeof(host), port, sizeof(port)) ==
	    -1) {
		log_warnx("--listen %s: expected HOST:PORT", spec);
		return (-1);
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		log_warnx("--listen %s: %s", spec, gai_strerror(rc));
		return (-1);
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, ai->ai_protocol);
		if (fd == -1)
			continue;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
		    sizeof(one));
		if (ai->ai_family == AF_INET6)
			(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
			    sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, 512) == 0)
			break;
		close(fd);
		fd = -1;
	}
	if (fd == -1) {
		log_warn("--listen %s", spec);
		freeaddrinfo(res);
		return (-1);
	}
	freeaddrinfo(res);
	*lp = listener_new(fd, 0, spec);
	return (0);
}

int
listener_open_unix(const char *path, struct listener **lp)
{
	struct sockaddr_un	sun;
	gid_t			gid = (gid_t)-1;
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path)) {
		log_warnx("%s: path too long", path);
		return (-1);
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1) {
		log_warn("socket");
		return (-1);
	}
	(void)unlink(path);
	if (front->conf.socket_group[0] != '\0') {
		struct group *gr = getgrnam(front->conf.socket_group);

		if (gr == NULL) {
			log_warnx("--socket-group %s: no such group",
			    front->conf.socket_group);
			close(fd);
			return (-1);
		}
		gid = gr->gr_gid;
	}
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(path, 0660) == -1 ||
	    (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) == -1) ||
	    listen(fd, 512) == -1) {
		log_warn("%s", path);
		close(fd);
		return (-1);
	}
	*lp = listener_new(fd, 1, path);
	return (0);
}

/* A listening socket opened by someone else (socket activation). */
struct listener *
listener_adopt_fd(int fd)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss);
	char			 name[256] = "activated socket";
	char			 host[INET6_ADDRSTRLEN];
	struct listener		*l;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return (NULL);
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(name, sizeof(name), "%s:%d", host,
		    ntohs(sin->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		snprintf(name, sizeof(name), "[%s]:%d", host,
		    ntohs(sin6->sin6_port));
	}
	l = listener_new(fd, ss.ss_family == AF_UNIX, name);
	if ((l->wsi = front_adopt(fd, &l->ffd)) == NULL) {
		LIST_REMOVE(l, entry);
		free(l);
		return (NULL);
	}
	return (l);
}

/* At exit, after the event loop (which closed the sockets) is gone. */
void
listener_free_all(void)
{
	struct listener	*l;

	while ((l = LIST_FIRST(&listeners)) != NULL) {
		LIST_REMOVE(l, entry);
		free(l);
	}
}

static void
listener_resume_cb(lws_sorted_usec_list_t *sul)
{
	struct listener	*l = lws_container_of(sul, struct listener, sul);

	lws_rx_flow_control(l->wsi, 1);
}

/*
 * Out of descriptors (ours or the system's): the pending connection stays
 * in the backlog and would wake the loop at once, so stop listening for a
 * moment instead.  Logged once until accepting works again.
 */
static void
listener_pause(struct listener *l)
{
	if (!l->paused)
		log_warn("accept on %s: pausing accepts for %d ms at a time "
		    "until descriptors free", l->name, LISTENER_PAUSE_MS);
	l->paused = 1;
	lws_rx_flow_control(l->wsi, 0);
	lws_sul_schedule(front->ctx, 0, &l->sul, listener_resume_cb,
	    (lws_usec_t)LISTENER_PAUSE_MS * LWS_US_PER_MS);
}

void
listener_accept(struct listener *l)
{
	int	fd, i, one = 1;

	/* A bounded batch, so one busy listener cannot starve the loop. */
	for (i = 0; i < 64; i++) {
		fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				listener_pause(l);
			else if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("accept on %s", l->name);
			return;
		}
		if (l->paused) {
			log_info("accepting on %s again", l->name);
			l->paused = 0;
		}
		if (!l->is_unix)
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
			    sizeof(one));
		if (conn_new(fd, l) == NULL)
			close(fd);
	}
}
