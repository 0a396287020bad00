/*
 * registry.c: the sessions the front knows, and its link to each worker.
 *
 * A session is found by id or by name.  Its worker's control connection
 * carries requests (each with an id its reply repeats) and unsolicited
 * updates of the session object, which the registry caches for listing.
 * Nothing here is authoritative: registry_discover() rebuilds it all from
 * RUNDIR/sessions/ after a restart.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "jsonmp.h"
#include "log.h"
#include "rawio.h"
#include "mpack.h"

static int	session_cmp_id(struct session *, struct session *);
static int	session_cmp_name(struct session *, struct session *);

RB_HEAD(session_ids, session)	sessions_by_id = RB_INITIALIZER(&sessions_by_id);
RB_HEAD(session_names, session)	sessions_by_name =
    RB_INITIALIZER(&sessions_by_name);
RB_PROTOTYPE(session_ids, session, by_id, session_cmp_id)
RB_PROTOTYPE(session_names, session, by_name, session_cmp_name)
RB_GENERATE(session_ids, session, by_id, session_cmp_id)
RB_GENERATE(session_names, session, by_name, session_cmp_name)

static int	registry_nsessions;
static int64_t	registry_reqid;

static int
session_cmp_id(struct session *a, struct session *b)
{
	return (strcmp(a->id, b->id));
}

static int
session_cmp_name(struct session *a, struct session *b)
{
	return (strcmp(a->name, b->name));
}

int64_t
registry_next_id(void)
{
	return (++registry_reqid);
}

struct session *
registry_find_id(const char *id)
{
	struct session	key;

	if (strlcpy(key.id, id, sizeof(key.id)) >= sizeof(key.id))
		return (NULL);
	return (RB_FIND(session_ids, &sessions_by_id, &key));
}

/* Each listed session, in id order (a scrape of GET /metrics). */
void
registry_foreach(void (*fn)(struct session *, void *), void *arg)
{
	struct session	*s;

	RB_FOREACH(s, session_ids, &sessions_by_id)
		if (s->ready && !s->gone)
			fn(s, arg);
}

struct session *
registry_find(const char *ref)
{
	struct session	key, *s;

	if ((s = registry_find_id(ref)) != NULL)
		return (s);
	if (strlcpy(key.name, ref, sizeof(key.name)) >= sizeof(key.name))
		return (NULL);
	return (RB_FIND(session_names, &sessions_by_name, &key));
}

int
registry_name_taken(const char *name)
{
	struct session	key;

	if (strlcpy(key.name, name, sizeof(key.name)) >= sizeof(key.name))
		return (0);
	return (RB_FIND(session_names, &sessions_by_name, &key) != NULL);
}

int
registry_count(void)
{
	return (registry_nsessions);
}

/*
 * The reply of GET /v1/sessions, built from each session's serialised
 * object: a thousand sessions are a memcpy each, not a JSON encoding.
 */
char *
registry_list(size_t *lenp, int (*keep)(struct session *, void *), void *arg)
{
	static const char	 head[] = "{\"sessions\":[", tail[] = "]}";
	struct session		*s;
	size_t			 len = sizeof(head) - 1 + sizeof(tail) - 1;
	char			*out, *p;

	RB_FOREACH(s, session_ids, &sessions_by_id)
		if (s->ready && !s->gone && s->json != NULL &&
		    (keep == NULL || keep(s, arg)))
			len += s->json_len + 1;
	if ((out = malloc(len)) == NULL)
		return (NULL);
	p = out;
	memcpy(p, head, sizeof(head) - 1);
	p += sizeof(head) - 1;
	RB_FOREACH(s, session_ids, &sessions_by_id) {
		if (!s->ready || s->gone || s->json == NULL ||
		    (keep != NULL && !keep(s, arg)))
			continue;
		if (p[-1] != '[')
			*p++ = ',';
		memcpy(p, s->json, s->json_len);
		p += s->json_len;
	}
	memcpy(p, tail, sizeof(tail) - 1);
	p += sizeof(tail) - 1;
	*lenp = (size_t)(p - out);
	return (out);
}

struct session *
registry_add(const char *id, const char *name, int fd)
{
	struct session	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return (NULL);
	s->ffd.kind = FFD_WORKER;
	s->ffd.ptr = s;
	strlcpy(s->id, id, sizeof(s->id));
	strlcpy(s->name, name, sizeof(s->name));
	LIST_INIT(&s->waiters);
	ctl_init(&s->ctl, fd);
	if ((s->wsi = front_adopt(fd, &s->ffd)) == NULL) {
		free(s);
		return (NULL);
	}
	RB_INSERT(session_ids, &sessions_by_id, s);
	if (name[0] != '\0') {
		RB_INSERT(session_names, &sessions_by_name, s);
		s->named = 1;
	}
	registry_nsessions++;
	return (s);
}

/* Forget a session; its worker connection closes later through lws. */
void
registry_remove(struct session *s)
{
	if (s->gone)
		return;
	s->gone = 1;
	RB_REMOVE(session_ids, &sessions_by_id, s);
	if (s->named)
		RB_REMOVE(session_names, &sessions_by_name, s);
	registry_nsessions--;
	if (s->wsi != NULL)
		lws_set_timeout(s->wsi, 1, LWS_TO_KILL_ASYNC);
}

int
registry_request(struct session *s, struct conn *c, msgpack_sbuffer *sb,
    int fd)
{
	if (s->gone || ctl_send(&s->ctl, sb, fd) == -1)
		return (-1);
	if (ctl_pending(&s->ctl))
		rawio_writable(s->wsi);
	if (c != NULL) {
		c->waiting = s;
		c->state = CONN_WAIT;
		LIST_INSERT_HEAD(&s->waiters, c, wait_entry);
	}
	return (0);
}

void
registry_cancel(struct conn *c)
{
	if (c->waiting == NULL)
		return;
	LIST_REMOVE(c, wait_entry);
	c->waiting = NULL;
}

static void
registry_update(struct session *s, const msgpack_object *obj)
{
	json_t	*j;

	if (obj == NULL || (j = jsonmp_to_json(obj)) == NULL)
		return;
	json_decref(s->obj);
	s->obj = j;
	free(s->json);
	if ((s->json = json_dumps(j, JSON_COMPACT)) != NULL)
		s->json_len = strlen(s->json);
}

static void
registry_message(struct session *s, const msgpack_object *o)
{
	const msgpack_object	*type = mpack_get(o, "type");
	struct conn		*c;
	int64_t			 id = 0;

	registry_update(s, mpack_get(o, "session"));
	if (mpack_streq(type, "update"))
		return;
	if (mpack_streq(type, "created")) {
		LIST_FOREACH(c, &s->waiters, wait_entry)
			if (c->creating)
				break;
		if (c == NULL)
			return;
		registry_cancel(c);
		api_worker_reply(c, s, o);
		return;
	}
	if (!mpack_streq(type, "reply") ||
	    mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id) != 1)
		return;
	LIST_FOREACH(c, &s->waiters, wait_entry)
		if (c->reqid == id)
			break;
	if (c == NULL)
		return;		/* its client has gone */
	registry_cancel(c);
	api_worker_reply(c, s, o);
}

void
registry_readable(struct session *s)
{
	msgpack_unpacked	up;
	int			r, fd;

	if ((r = ctl_read(&s->ctl)) == 0 || r == -1) {
		lws_set_timeout(s->wsi, 1, LWS_TO_KILL_ASYNC);
		return;
	}
	msgpack_unpacked_init(&up);
	while ((r = ctl_next(&s->ctl, &up, &fd)) == 1) {
		if (fd != -1)
			close(fd);
		registry_message(s, &up.data);
	}
	msgpack_unpacked_destroy(&up);
	if (r == -1) {
		log_warnx("session %s: bad frame from its worker", s->id);
		lws_set_timeout(s->wsi, 1, LWS_TO_KILL_ASYNC);
	}
}

void
registry_writeable(struct session *s)
{
	if (ctl_flush(&s->ctl) == 1)
		rawio_writable(s->wsi);
}

/* The worker's connection closed: the session is gone (or never was). */
void
registry_closed(struct session *s)
{
	struct conn	*c;
	const char	*msg;

	s->wsi = NULL;
	s->ctl.fd = -1;		/* lws closed it */
	ctl_close(&s->ctl);
	while ((c = LIST_FIRST(&s->waiters)) != NULL) {
		registry_cancel(c);
		msg = c->creating ? "the session's worker failed to start" :
		    "session '%s' does not exist";
		if (c->creating)
			conn_reply_error(c, 500, "internal", "%s", msg);
		else if (c->route == ROUTE_SESSION_DELETE)
			conn_reply_empty(c, 204);
		else
			conn_reply_error(c, 404, "not_found", msg, c->ref);
	}
	if (!s->gone && s->ready && !front->quit)
		log_info("session %s: worker gone", s->id);
	if (!front->quit) {
		char path[700];

		/* A worker running as another user cannot remove it itself. */
		snprintf(path, sizeof(path), "%s/sessions/%s.sock",
		    front->conf.rundir, s->id);
		(void)unlink(path);
	}
	registry_remove(s);
	json_decref(s->obj);
	free(s->json);
	free(s);
}

/* Connect to a worker's socket and ask who it is; blocking, bounded. */
static int
registry_hello(const char *path, char *id)
{
	struct sockaddr_un	 sun;
	struct ctl		 c;
	msgpack_sbuffer		 sb;
	msgpack_packer		 pk;
	msgpack_unpacked	 up;
	const msgpack_object	*obj;
	struct session		*s;
	char			 name[65] = "", magic = CTL_MAGIC;
	int			 fd, rfd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		return (-1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		if (errno == ECONNREFUSED) {
			log_info("removing stale %s", path);
			(void)unlink(path);
		}
		close(fd);
		return (-1);
	}
	if (write(fd, &magic, 1) != 1) {
		close(fd);
		return (-1);
	}
	ctl_init(&c, fd);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	mpack_kv_str(&pk, "type", "hello");
	mpack_kv_int(&pk, "id", 0);
	msgpack_unpacked_init(&up);
	if (ctl_send_wait(&c, &sb, -1) == -1 ||
	    ctl_recv_wait(&c, &up, &rfd, 2000) != 1 ||
	    (obj = mpack_get(&up.data, "session")) == NULL ||
	    mpack_strcpy(mpack_get(obj, "id"), id, 64) == -1 ||
	    (mpack_get(obj, "name") != NULL &&
	    mpack_get(obj, "name")->type == MSGPACK_OBJECT_STR &&
	    mpack_strcpy(mpack_get(obj, "name"), name, sizeof(name)) == -1)) {
		log_warnx("%s: the worker did not answer", path);
		msgpack_sbuffer_destroy(&sb);
		msgpack_unpacked_destroy(&up);
		ctl_close(&c);
		return (-1);
	}
	msgpack_sbuffer_destroy(&sb);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (registry_find_id(id) != NULL ||
	    (name[0] != '\0' && registry_name_taken(name)) ||
	    (s = registry_add(id, name, fd)) == NULL) {
		msgpack_unpacked_destroy(&up);
		ctl_close(&c);
		return (-1);
	}
	/* Anything buffered past the reply stays with the new ctl. */
	c.fd = -1;
	s->ready = 1;
	registry_update(s, obj);
	free(s->ctl.rbuf);
	s->ctl.rbuf = c.rbuf;
	s->ctl.rlen = c.rlen;
	s->ctl.rcap = c.rcap;
	c.rbuf = NULL;
	ctl_close(&c);
	msgpack_unpacked_destroy(&up);
	return (0);
}

void
registry_discover(void)
{
	DIR		*d;
	struct dirent	*de;
	char		 dir[600], path[1200], id[64];
	size_t		 n;
	int		 found = 0;

	snprintf(dir, sizeof(dir), "%s/sessions", front->conf.rundir);
	if ((d = opendir(dir)) == NULL) {
		log_warn("%s", dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".sock") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (registry_hello(path, id) == 0)
			found++;
	}
	closedir(d);
	if (found > 0)
		log_info("found %d running session%s", found,
		    found == 1 ? "" : "s");
}
