/*
 * registry.c: the sessions the front knows, and its link to each worker.
 *
 * A session is found by id or by name.  Its worker's control connection
 * carries requests (each with an id its reply repeats) and unsolicited
 * updates of the session object, which the registry caches for listing.
 * Nothing here is authoritative: discover_start() rebuilds it all from
 * RUNDIR/registry/ and RUNDIR/sessions/ after a restart.
 *
 * A worker is a process its session's user can stop or slow down, so no
 * exchange with one waits unbounded: every request has a deadline, past
 * which the worker is marked unresponsive (GET answers from the cache,
 * other calls are 503) until it says anything again; handoffs are few
 * and must be taken in time; and a silent worker can still be deleted:
 * the front then ends its session's process group and the worker itself,
 * knowing the worker's pid from the kernel (SO_PASSCRED, SO_PEERCRED) and
 * checking it by its start time before each signal.
 */
#include <sys/types.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "jsonmp.h"
#include "log.h"
#include "metrics.h"
#include "mpack.h"

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

RB_HEAD(session_ids, session)	sessions_by_id = RB_INITIALIZER(&sessions_by_id);
RB_HEAD(session_names, session)	sessions_by_name =
    RB_INITIALIZER(&sessions_by_name);
RB_PROTOTYPE(session_ids, session, by_id, session_cmp_id)
RB_PROTOTYPE(session_names, session, by_name, session_cmp_name)
RB_GENERATE(session_ids, session, by_id, session_cmp_id)
RB_GENERATE(session_names, session, by_name, session_cmp_name)

static int	registry_nsessions;
static int	registry_nhandoffs;	/* in flight, all workers */
static size_t	registry_buffers;	/* the rings of the sessions known */
static int64_t	registry_reqid;

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

/*
 * The sums GET /metrics reports and the whole list's length, each
 * session's part taken out and put back as it changes (registry_recount),
 * so that neither a scrape nor a list's size walks the sessions.
 */
static struct session_gauges	registry_sums;
static void	registry_spare_fit(void);

const struct session_gauges *
registry_gauges(void)
{
	return (&registry_sums);
}

static void
registry_recount(struct session *s)
{
	struct session_gauges	*g = &s->share, *t = &registry_sums;
	int			 exited;

	t->running -= g->running;
	t->exited -= g->exited;
	t->clients -= g->clients;
	t->output -= g->output;
	t->text -= g->text;
	memset(g, 0, sizeof(*g));
	if (!s->ready || s->gone || s->json == NULL)
		return;
	exited = strcmp(s->state, "exited") == 0;
	g->running = !exited;
	g->exited = exited;
	g->clients = (uint64_t)s->clients;
	g->output = s->output_bytes;
	g->text = s->json_len;
	t->running += g->running;
	t->exited += g->exited;
	t->clients += g->clients;
	t->output += g->output;
	t->text += g->text;
	registry_spare_fit();
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

/* The first session listed after id ("": from the first), in id order. */
static struct session *
registry_list_start(const char *after)
{
	struct session	key, *s;

	if (after[0] == '\0')
		return (RB_MIN(session_ids, &sessions_by_id));
	strlcpy(key.id, after, sizeof(key.id));	/* longer: its prefix */
	for (s = RB_NFIND(session_ids, &sessions_by_id, &key);
	    s != NULL && strcmp(s->id, after) <= 0;
	    s = RB_NEXT(session_ids, &sessions_by_id, s))
		;
	return (s);
}

static int
registry_listed(struct session *s, int (*keep)(struct session *, void *),
    void *arg)
{
	return (s->ready && !s->gone && s->json != NULL &&
	    (keep == NULL || keep(s, arg)));
}

/*
 * The whole list, as the last GET /v1/sessions of all sessions built it,
 * until a session is added, removed or its object changes: a list of
 * 10,000 idle sessions (3 MB) is then no walk and no copy, only the send.
 * Busy sessions change their object at most twice a second each (their
 * outputBytes), so a list of many busy ones is built anew more often.
 * The cache's block, once no send holds it, is kept for the next build
 * (registry_spare): memory the list held already, so that a build is
 * not also an mmap of 3 MB, a page fault every 4 kB and an munmap.
 */
static struct listing	*registry_listing;
static struct listing	*registry_spare;

#define LISTING_HEAD	"{\"sessions\":["
#define LISTING_TAIL	"]}"

static void
registry_list_stale(void)
{
	struct listing	*l = registry_listing;

	registry_listing = NULL;
	if (l != NULL && l->refs == 1 && registry_spare == NULL)
		registry_spare = l;
	else
		registry_list_done(l);
}

void
registry_list_done(struct listing *l)
{
	if (l != NULL && --l->refs == 0)
		free(l);
}

/* The whole list's length: the objects, a comma each, head and tail. */
static size_t
registry_list_length(void)
{
	return (registry_sums.text + registry_sums.running +
	    registry_sums.exited + sizeof(LISTING_HEAD) + sizeof(LISTING_TAIL));
}

/*
 * While no list is cached, keep the spare block as long as the whole
 * list is now, a sixteenth over, its pages touched: the build after
 * thousands of creates then writes into memory the front holds, where a
 * new block took a page fault every 4 kB at the build (729 at 10,000
 * sessions, 19 ms on a VM).  The creates pay instead, a fault for about
 * a dozen sessions.  Past twice the length (sessions deleted), it is cut
 * back.
 */
static void
registry_spare_fit(void)
{
	struct listing	*l = registry_spare, *n;
	size_t		 need = registry_list_length(), have, size, page;
	volatile char	*p;

	if (registry_listing != NULL)
		return;		/* a build is not due */
	have = l != NULL ? l->size : 0;
	if (have >= need && have <= 2 * need + 65536)
		return;
	size = need + need / 16;
	if ((n = realloc(l, sizeof(*n) + size)) == NULL)
		return;		/* a build makes its own */
	if (l == NULL) {
		n->refs = 1;
		n->len = 0;
	}
	n->size = size;
	page = (size_t)getpagesize();
	for (p = n->text + have; p < n->text + size; p += page)
		*p = 0;
	registry_spare = n;
}

/*
 * A listing to fill, of at least size bytes; a whole one takes the spare,
 * or is made a sixteenth larger, so that the next one fits its block.
 */
static struct listing *
registry_list_new(size_t size, int whole)
{
	struct listing	*l = NULL;

	if (whole && registry_spare != NULL) {
		if (registry_spare->size >= size)
			l = registry_spare;
		else
			free(registry_spare);	/* too small to keep */
		registry_spare = NULL;
	}
	if (l == NULL) {
		if (whole)
			size += size / 16;
		if ((l = malloc(sizeof(*l) + size)) == NULL)
			return (NULL);
		l->size = size;
	}
	l->refs = 1;
	l->len = 0;
	return (l);
}

/* Append len bytes to *lp, growing it; -1 (*lp freed) if out of memory. */
static int
registry_list_put(struct listing **lp, const char *p, size_t len)
{
	struct listing	*l = *lp, *n;
	size_t		 size = l->size;

	while (size - l->len < len)
		size = size * 2 + len;
	if (size != l->size) {
		if ((n = realloc(l, sizeof(*l) + size)) == NULL) {
			free(l);
			*lp = NULL;
			return (-1);
		}
		n->size = size;
		*lp = l = n;
	}
	memcpy(l->text + l->len, p, len);
	l->len += len;
	return (0);
}

/*
 * The reply of GET /v1/sessions, built from each session's serialised
 * object in one walk of the sessions: a thousand sessions are a memcpy
 * each, not a JSON encoding.  A page (limit > 0) holds at most limit
 * sessions after the id after, and "next", the last one's id, if more
 * follow: it costs the page, not the sessions before it.  The caller
 * holds a reference to what it gets.
 */
struct listing *
registry_list(int (*keep)(struct session *, void *), void *arg,
    const char *after, int limit)
{
	static const char	 head[] = LISTING_HEAD, tail[] = LISTING_TAIL;
	static const char	 next[] = "],\"next\":\"";
	struct session		*s, *last = NULL;
	struct listing		*l;
	int			 n = 0, whole = keep == NULL && limit == 0;
	size_t			 size = 4096;

	if (whole && registry_listing != NULL) {
		registry_listing->refs++;
		return (registry_listing);
	}
	metrics_count(M_LISTS_BUILT);
	/*
	 * A whole list's length is known: the objects, a comma each, head
	 * and tail.  No realloc copies it as it grows, which at 10,000
	 * sessions was more copying than the list itself.
	 */
	if (whole)
		size = registry_list_length();
	if ((l = registry_list_new(size, whole)) == NULL ||
	    registry_list_put(&l, head, sizeof(head) - 1) == -1)
		return (NULL);
	for (s = registry_list_start(after); s != NULL;
	    s = RB_NEXT(session_ids, &sessions_by_id, s)) {
		if (!registry_listed(s, keep, arg))
			continue;
		if (limit != 0 && n == limit)
			break;	/* more follow the page */
		if ((n > 0 && registry_list_put(&l, ",", 1) == -1) ||
		    registry_list_put(&l, s->json, s->json_len) == -1)
			return (NULL);
		last = s;
		n++;
	}
	if (s != NULL) {
		if (registry_list_put(&l, next, sizeof(next) - 1) == -1 ||
		    registry_list_put(&l, last->id, strlen(last->id)) == -1 ||
		    registry_list_put(&l, "\"}", 2) == -1)
			return (NULL);
	} else if (registry_list_put(&l, tail, sizeof(tail) - 1) == -1)
		return (NULL);
	if (whole) {
		l->refs++;
		registry_listing = l;
	}
	return (l);
}

static void	registry_link_cb(lws_sorted_usec_list_t *);

/*
 * Take j (a reference) as the session's object.  Only its text is kept,
 * "responsive" in it, for lists and replies, and beside it the few
 * fields the front reads: no tree of it stays in memory.
 */
static void
registry_take(struct session *s, json_t *j)
{
	const char	*v;
	json_int_t	 n;

	registry_list_stale();
	json_object_set_new(j, "responsive", json_boolean(s->responsive));
	free(s->json);
	s->json_len = 0;
	if ((s->json = json_dumps(j, JSON_COMPACT)) != NULL)
		s->json_len = strlen(s->json);
	s->pid = json_integer_value(json_object_get(j, "pid"));
	n = json_integer_value(json_object_get(j, "clients"));
	s->clients = n < 0 ? 0 : n > INT_MAX ? INT_MAX : (int)n;
	n = json_integer_value(json_object_get(j, "outputBytes"));
	s->output_bytes = n < 0 ? 0 : (uint64_t)n;
	v = json_string_value(json_object_get(j, "state"));
	if (v == NULL || strlcpy(s->state, v, sizeof(s->state)) >=
	    sizeof(s->state))
		s->state[0] = '\0';
	v = json_string_value(json_object_get(j, "user"));
	if (v == NULL || strlcpy(s->user, v, sizeof(s->user)) >=
	    sizeof(s->user))
		s->user[0] = '\0';
	json_decref(j);
	registry_recount(s);
}

/* s is made and listed from now on. */
void
registry_set_ready(struct session *s)
{
	s->ready = 1;
	registry_list_stale();
	registry_recount(s);
}

/* A session in the trees, with no link to its worker yet. */
static struct session *
registry_new(const char *id, const char *name)
{
	struct session	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return (NULL);
	strlcpy(s->id, id, sizeof(s->id));
	LIST_INIT(&s->waiters);
	ctl_init(&s->ctl, -1);
	s->responsive = 1;
	RB_INSERT(session_ids, &sessions_by_id, s);
	if (name[0] != '\0' && !registry_name_taken(name)) {
		strlcpy(s->name, name, sizeof(s->name));
		RB_INSERT(session_names, &sessions_by_name, s);
		s->named = 1;
	}
	registry_nsessions++;
	return (s);
}

static void
registry_free(struct session *s)
{
	lws_sul_cancel(&s->sul_handoff);
	lws_sul_cancel(&s->sul_link);
	lws_sul_cancel(&s->sul_kill);
	registry_nhandoffs -= s->handoffs;
	ctl_close(&s->ctl);
	registry_list_stale();
	free(s->json);
	s->json = NULL;
	registry_recount(s);
	free(s);
}

/*
 * Link s to its worker over fd; the kernel names the sender of each frame.
 * fd is closed when it fails.
 */
static int
registry_attach(struct session *s, int fd)
{
	int	one = 1;

	(void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
	fd = link_fd(fd);
	ctl_init(&s->ctl, fd);
	if ((s->link = link_open(s, fd)) == NULL) {
		ctl_close(&s->ctl);
		return (-1);
	}
	return (0);
}

struct session *
registry_add(const char *id, const char *name, int fd)
{
	struct session	*s;

	if ((s = registry_new(id, name)) == NULL) {
		close(fd);
		return (NULL);
	}
	s->acks = 1;		/* a worker of our own template */
	s->proto = PROTO_VERSION;
	if (registry_attach(s, fd) == -1) {	/* it closed fd */
		registry_remove(s);
		return (NULL);
	}
	return (s);
}

/* A session known from its record or its socket, not linked yet. */
struct session *
registry_known(const char *id, const char *name, json_t *obj)
{
	struct session	*s;

	if ((s = registry_new(id, name)) == NULL)
		return (NULL);
	s->acks = 0;		/* until its hello says otherwise */
	s->proto = 0;
	if (obj != NULL) {
		registry_set_ready(s);
		s->responsive = 0;	/* until it answers */
		registry_take(s, json_incref(obj));
	}
	return (s);
}

/*
 * Account a session's ring in the budget: the size asked at create, the
 * size its worker reports from then on (a rediscovered session too).
 */
void
registry_set_buffer(struct session *s, size_t size)
{
	if (s->gone && size != 0)
		return;
	registry_buffers -= s->buffer_size;
	s->buffer_size = size;
	registry_buffers += size;
}

size_t
registry_buffer_total(void)
{
	return (registry_buffers);
}

/* Reply to every waiter of s with what its request gets once s is gone. */
static void
registry_answer_gone(struct session *s)
{
	struct conn	*c;
	struct reply	 r;

	while ((c = LIST_FIRST(&s->waiters)) != NULL) {
		registry_cancel(c);
		if (c->creating)
			reply_error(&r, 500, "internal",
			    "the session's worker failed to start");
		else if (c->route == ROUTE_SESSION_DELETE)
			reply_empty(&r, 204);
		else
			reply_error(&r, 404, "not_found",
			    "session '%s' does not exist", c->ref);
		conn_reply(c, &r);
	}
}

/* Forget a session; its link to the worker closes on the loop's next turn. */
void
registry_remove(struct session *s)
{
	if (s->gone)
		return;
	s->gone = 1;
	registry_list_stale();
	registry_recount(s);
	RB_REMOVE(session_ids, &sessions_by_id, s);
	if (s->named)
		RB_REMOVE(session_names, &sessions_by_name, s);
	registry_nsessions--;
	registry_set_buffer(s, 0);
	lws_sul_cancel(&s->sul_link);
	lws_sul_cancel(&s->sul_kill);
	if (s->link != NULL)
		link_close(s->link);
	else {
		registry_answer_gone(s);
		registry_free(s);
	}
}

/* Up to max sessions with no link to their worker, for discovery. */
int
registry_all(struct session **out, int max)
{
	struct session	*s;
	int		 n = 0;

	RB_FOREACH(s, session_ids, &sessions_by_id)
		if (n < max && s->link == NULL && !s->gone)
			out[n++] = s;
	return (n);
}

static int
registry_reachable(struct session *s)
{
	return (!s->gone && s->link != NULL);
}

/*
 * Whether to ask the worker at all: linked, and not marked (a worker just
 * found is asked: the request waits behind its hello, both bounded).
 */
int
registry_answers(struct session *s)
{
	return (registry_reachable(s) && (s->responsive ||
	    (s->hello_id != 0 && !s->hello_late)));
}

/*
 * /proc/PID/stat from its third field (the state) on, in buf; NULL if
 * there is no such process (errno ENOENT).
 */
static char *
registry_proc_stat(pid_t pid, char *buf, size_t len)
{
	char	path[64], *p;
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (NULL);
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return (NULL);
	buf[n] = '\0';
	/* The command may hold anything: fields count from its last ')'. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return (NULL);
	return (p + 2);
}

/* The start time of pid (clock ticks since boot), 0 if it is gone. */
static unsigned long long
registry_starttime(pid_t pid, char *state)
{
	char	buf[1024], *p;
	int	i;

	if ((p = registry_proc_stat(pid, buf, sizeof(buf))) == NULL)
		return (0);
	if (state != NULL)
		*state = *p;
	for (i = 3; i < 22 && p != NULL; i++)
		if ((p = strchr(p, ' ')) != NULL)
			p++;
	return (p != NULL ? strtoull(p, NULL, 10) : 0);
}

static void
registry_learn_pid(struct session *s, pid_t pid)
{
	if (pid <= 0 || pid == s->worker_pid)
		return;
	s->worker_pid = pid;
	s->worker_start = registry_starttime(pid, NULL);
}

/* 1 if the session's worker runs, 0 if it is gone, -1 if unknown. */
static int
registry_worker_alive(struct session *s)
{
	unsigned long long	start;
	char			state = '?';

	if (s->worker_pid <= 0 || s->worker_start == 0)
		return (-1);
	start = registry_starttime(s->worker_pid, &state);
	return (start == s->worker_start && state != 'Z' ? 1 : 0);
}

/* Signal the worker itself, through a pidfd checked against its start. */
static void
registry_signal_worker(struct session *s, int sig)
{
	int	pfd;

	if (s->worker_pid <= 0 ||
	    (pfd = pidfd_open(s->worker_pid, 0)) == -1)
		return;
	if (registry_worker_alive(s) == 1)
		(void)pidfd_send_signal(pfd, sig, NULL, 0);
	close(pfd);
}

/*
 * Signal the session's process group: the child's pid is its number, and
 * stays so while the child is the worker's (a stopped worker reaps
 * nothing) or while the group has members.
 */
static void
registry_signal_group(struct session *s, int sig)
{
	int64_t		pid = s->pid;
	char		buf[1024], *p;
	int		ours;

	if (pid <= 1 || pid > INT32_MAX)
		return;
	errno = 0;
	if ((p = registry_proc_stat((pid_t)pid, buf, sizeof(buf))) == NULL)
		ours = (errno == ENOENT);	/* gone; its group may not be */
	else
		ours = ((p = strchr(p, ' ')) != NULL &&
		    strtol(p + 1, NULL, 10) == s->worker_pid);
	if (ours)
		(void)kill(-(pid_t)pid, sig);
}

/* The session object again, with its "responsive" as it is now. */
static void
registry_serialise(struct session *s)
{
	json_t	*j;

	if (s->json != NULL &&
	    (j = json_loadb(s->json, s->json_len, 0, NULL)) != NULL)
		registry_take(s, j);
}

/* Send {"type":TYPE,"id":N} to the worker: N, or 0 if the link failed. */
static int64_t
registry_send_type(struct session *s, enum proto_type type)
{
	struct proto_out	 m;
	msgpack_packer		*pk = proto_begin(&m, type);
	int64_t			 id = registry_next_id();

	mpack_kv_int(pk, "id", id);
	if (type == PROTO_HELLO)
		mpack_kv_int(pk, "proto", PROTO_VERSION);
	if (proto_send(&s->ctl, &m, -1) == -1) {
		link_close(s->link);
		id = 0;
	} else if (ctl_pending(&s->ctl))
		link_writable(s->link);
	return (id);
}

static void
registry_set_responsive(struct session *s, int yes)
{
	if (s->responsive == yes)
		return;
	s->responsive = yes;
	if (yes && s->hello_id == 0)
		log_info("session %s: its worker answers again", s->id);
	else if (!yes) {
		log_warnx("session %s: its worker is not responding", s->id);
		/* Ask for its session, with nobody waiting on the answer. */
		if (registry_reachable(s) && s->probe_id == 0)
			s->probe_id = registry_send_type(s, PROTO_INFO);
	}
	registry_serialise(s);
}

/*
 * Answer the calls waiting on s on route (ROUTE_NONE: on any route but
 * wait and delete), with 503 and why, or with the session if why is NULL.
 */
static void
registry_answer(struct session *s, enum httphead_route route,
    const char *why)
{
	struct conn	*c, *next;
	struct reply	 r;

	for (c = LIST_FIRST(&s->waiters); c != NULL; c = next) {
		next = LIST_NEXT(c, wait_entry);
		if (route == ROUTE_NONE ? c->route == ROUTE_SESSION_WAIT ||
		    c->route == ROUTE_SESSION_DELETE : c->route != route)
			continue;
		registry_cancel(c);
		conn_reply(c, why == NULL ? reply_session(&r, s) :
		    reply_error(&r, 503, "unavailable", "%s", why));
	}
}

static void
registry_update(struct session *s, const msgpack_object *obj)
{
	json_t		*j;
	int64_t		 size;

	if (obj == NULL || (j = jsonmp_to_json(obj)) == NULL)
		return;
	if (mpack_get_int(obj, "bufferSize", 0, INT64_MAX, &size) == 1)
		registry_set_buffer(s, (size_t)size);
	registry_take(s, j);
	if (s->state[0] == '\0')
		return;
	/* A session being deleted loses its record in a moment anyway. */
	if (s->ready && s->delete_id == 0 &&
	    strcmp(s->state, s->recorded) != 0)
		record_write(s);
	if (strcmp(s->state, "exited") == 0)
		registry_answer(s, ROUTE_SESSION_WAIT, NULL);
}

/* The worker of a found session said who it is. */
static void
registry_hello_done(struct session *s, const msgpack_object *o)
{
	const msgpack_object	*obj = mpack_get(o, "session"), *v;
	char			 id[64], name[65] = "";

	s->hello_id = 0;
	lws_sul_cancel(&s->sul_link);
	s->link_tries = 0;
	if (obj == NULL || mpack_strcpy(mpack_get(obj, "id"), id,
	    sizeof(id)) == -1 || strcmp(id, s->id) != 0) {
		log_warnx("session %s: its socket answers for another session",
		    s->id);
		link_close(s->link);
		return;
	}
	if (mpack_strcpy(mpack_get(obj, "name"), name, sizeof(name)) == 0 &&
	    !s->named && name[0] != '\0') {
		if (registry_name_taken(name))
			log_warnx("session %s: its name '%s' is taken", s->id,
			    name);
		else {
			strlcpy(s->name, name, sizeof(s->name));
			RB_INSERT(session_names, &sessions_by_name, s);
			s->named = 1;
		}
	}
	s->proto = 0;
	if ((v = mpack_get(o, "proto")) != NULL &&
	    v->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
	    v->via.u64 < INT_MAX)
		s->proto = (int)v->via.u64;
	if (s->proto > PROTO_VERSION) {
		/* What it would make of our messages is unknown: none. */
		log_warnx("session %s: its worker speaks control protocol %d, "
		    "newer than this lodged's %d: not served, left running",
		    s->id, s->proto, PROTO_VERSION);
		s->refused = 1;
		s->ready = 1;
		registry_recount(s);
		link_close(s->link);
		return;
	}
	if (s->proto < PROTO_VERSION && !s->ready)
		log_warnx("session %s: its worker, from an earlier lodged, "
		    "speaks control protocol %d: it is handed connections "
		    "with their head, token included, in the socket", s->id,
		    s->proto);
	(void)mpack_get_bool(o, "adoptAcks", &s->acks);
	if (!s->ready)
		log_info("session %s%s%s: found", s->id, s->named ? " " : "",
		    s->name);
	registry_set_ready(s);
	metrics_count(M_SESSIONS_REDISCOVERED);
	s->recorded[0] = '\0';
	record_write(s);
	(void)record_restore(s->id);
}

/* "created": the reply to the create request, from a new worker. */
static void
registry_created(void *arg, const msgpack_object *o, int *fds)
{
	struct session	*s = arg;
	struct conn	*c;
	struct reply	 r;
	int64_t		 status = 500, id = 0;

	registry_update(s, mpack_get(o, "session"));
	(void)mpack_get_int(o, "status", 100, 599, &status);
	(void)mpack_get_int(o, "id", 1, INT64_MAX, &id);
	if (status == 201 && s->json != NULL && !s->ready) {
		registry_set_ready(s);
		record_write(s);
	}
	LIST_FOREACH(c, &s->waiters, wait_entry)
		if (c->creating && c->reqid == id)
			break;
	if (c != NULL) {
		registry_cancel(c);
		api_worker_reply(c, s, o, &r);
		conn_reply(c, &r);
	} else if (status != 201)
		registry_remove(s);
	else
		log_info("session %s: created, its client gone", s->id);
}

static void
registry_handoff_cb(lws_sorted_usec_list_t *sul)
{
	struct session	*s = lws_container_of(sul, struct session,
			    sul_handoff);

	registry_set_responsive(s, 0);
}

/* A handoff was taken: the oldest, as the worker reads in order. */
static void
registry_handoff_taken(struct session *s)
{
	lws_usec_t	left;

	if (s->handoffs == 0)
		return;
	s->handoff_first = (s->handoff_first + 1) % REGISTRY_HANDOFF_MAX;
	s->handoffs--;
	registry_nhandoffs--;
	if (s->handoffs == 0) {
		lws_sul_cancel(&s->sul_handoff);
		return;
	}
	left = s->handoff_at[s->handoff_first] +
	    REGISTRY_TIMEOUT_MS * LWS_US_PER_MS - lws_now_usecs();
	lws_sul_schedule(front->ctx, 0, &s->sul_handoff, registry_handoff_cb,
	    left > 0 ? left : 1);
}

static void
registry_adopted(void *arg, const msgpack_object *o, int *fds)
{
	registry_handoff_taken(arg);
}

static void
registry_updated(void *arg, const msgpack_object *o, int *fds)
{
	registry_update(arg, mpack_get(o, "session"));
}

/* Ended by itself (--exited-ttl): as if deleted. */
static void
registry_gone(void *arg, const msgpack_object *o, int *fds)
{
	struct session	*s = arg;

	registry_update(s, mpack_get(o, "session"));
	log_info("session %s: ended by its worker", s->id);
	registry_remove(s);
}

/* The answer to the request id: whoever waits for it takes it. */
static void
registry_reply(void *arg, const msgpack_object *o, int *fds)
{
	struct session	*s = arg;
	struct conn	*c;
	struct reply	 r;
	int64_t		 id = 0;

	registry_update(s, mpack_get(o, "session"));
	if (mpack_get_int(o, "id", INT64_MIN, INT64_MAX, &id) != 1)
		return;
	if (id != 0 && id == s->hello_id) {
		registry_hello_done(s, o);
		return;
	}
	if (id != 0 && id == s->probe_id) {
		s->probe_id = 0;
		return;
	}
	if (id != 0 && id == s->delete_id) {
		/* Every DELETE waiting is answered once the link closes. */
		s->delete_id = 0;
		log_info("session %s: deleted", s->id);
		registry_remove(s);
		return;
	}
	LIST_FOREACH(c, &s->waiters, wait_entry)
		if (c->reqid == id && c->route != ROUTE_SESSION_WAIT)
			break;
	if (c == NULL)
		return;		/* its client has gone */
	registry_cancel(c);
	api_worker_reply(c, s, o, &r);
	conn_reply(c, &r);
}

/* What the front takes from a session worker: the allow-list. */
static const struct proto_handler front_dispatch_session[] = {
	{ PROTO_REPLY, registry_reply },
	{ PROTO_CREATED, registry_created },
	{ PROTO_UPDATE, registry_updated },
	{ PROTO_GONE, registry_gone },
	{ PROTO_ADOPTED, registry_adopted },
};

static void
registry_park(struct session *s, struct conn *c)
{
	c->waiting = s;
	LIST_INSERT_HEAD(&s->waiters, c, wait_entry);
}

/* A descriptor went to s's worker: it must take it in time. */
static void
registry_handoff_sent(struct session *s)
{
	int	i;

	if (!s->acks || s->handoffs == REGISTRY_HANDOFF_MAX)
		return;
	i = (s->handoff_first + s->handoffs) % REGISTRY_HANDOFF_MAX;
	s->handoff_at[i] = lws_now_usecs();
	s->handoffs++;
	registry_nhandoffs++;
	if (s->handoffs == 1)
		lws_sul_schedule(front->ctx, 0, &s->sul_handoff,
		    registry_handoff_cb, REGISTRY_TIMEOUT_MS * LWS_US_PER_MS);
}

int
registry_request(struct session *s, struct conn *c, struct proto_out *m,
    int fd)
{
	if (!registry_reachable(s)) {
		if (fd != -1)
			close(fd);
		proto_free(m);
		return (-1);
	}
	if (proto_send(&s->ctl, m, fd) == -1)
		return (-1);
	if (ctl_pending(&s->ctl))
		link_writable(s->link);
	if (fd != -1)
		registry_handoff_sent(s);
	if (c != NULL)
		registry_expect(s, c, REGISTRY_TIMEOUT_MS);
	return (0);
}

/*
 * DELETE: one delete goes to the worker, however many calls wait for it,
 * each with its deadline; a worker that does not answer is ended here.
 */
void
registry_delete(struct session *s, struct conn *c)
{
	registry_expect(s, c, REGISTRY_TIMEOUT_MS + REGISTRY_GRACE_MS);
	if (registry_reachable(s) && s->delete_id == 0)
		s->delete_id = registry_send_type(s, PROTO_DELETE);
	if (!registry_answers(s))
		registry_kill(s);
}

void
registry_cancel(struct conn *c)
{
	if (c->waiting == NULL)
		return;
	LIST_REMOVE(c, wait_entry);
	c->waiting = NULL;
}

/* A request's deadline passed: its worker is not responding. */
static void
registry_deadline_cb(lws_sorted_usec_list_t *sul)
{
	struct conn	*c = lws_container_of(sul, struct conn, sul);
	struct session	*s = c->waiting;
	struct reply	 r;

	if (s == NULL)
		return;
	registry_cancel(c);
	if (c->route == ROUTE_SESSION_WAIT) {
		conn_reply(c, reply_session(&r, s));
		return;
	}
	registry_set_responsive(s, 0);
	if (!c->creating && c->route == ROUTE_SESSION_DELETE) {
		registry_park(s, c);	/* answered once the worker is gone */
		registry_kill(s);
		return;
	}
	if (!c->creating && c->route == ROUTE_SESSION_GET)
		reply_session(&r, s);
	else
		reply_error(&r, 503, "unavailable",
		    "session worker is not responding");
	c->creating = 0;
	conn_reply(c, &r);
}

/* c waits for an answer of s's worker, for at most ms. */
void
registry_expect(struct session *s, struct conn *c, int ms)
{
	registry_park(s, c);
	lws_sul_schedule(front->ctx, 0, &c->sul, registry_deadline_cb,
	    (lws_usec_t)ms * LWS_US_PER_MS);
}

/* Why s's worker is asked nothing now. */
void
registry_unanswered(struct session *s, char *why, size_t len)
{
	if (s->refused)
		snprintf(why, len, "session worker speaks control protocol "
		    "%d, newer than this lodged's %d", s->proto,
		    PROTO_VERSION);
	else
		snprintf(why, len, "session worker is not responding");
}

int
registry_handoff_check(struct session *s, char *why, size_t len)
{
	if (!registry_answers(s))
		registry_unanswered(s, why, len);
	else if (s->handoffs >= REGISTRY_HANDOFF_MAX)
		snprintf(why, len, "session worker is not responding: %d "
		    "connections are waiting for it", s->handoffs);
	else if (registry_nhandoffs >= REGISTRY_HANDOFF_TOTAL)
		snprintf(why, len, "session workers are not responding: %d "
		    "connections are waiting for them", registry_nhandoffs);
	else
		return (0);
	return (-1);
}

/*
 * The worker is gone for good: forget its files, then answer everyone
 * (a client told 204 never finds the socket still there), and forget it.
 */
static void
registry_finish(struct session *s)
{
	char	path[700];

	if (!front->quit) {
		/* A worker running as another user cannot remove it itself. */
		snprintf(path, sizeof(path), "%s/sessions/%s.sock",
		    front->conf.rundir, s->id);
		(void)unlink(path);
		record_remove(s->id);
	}
	registry_answer_gone(s);
	if (!s->gone && s->ready && !front->quit)
		log_info("session %s: worker gone", s->id);
	registry_remove(s);
}

static void
registry_kill_cb(lws_sorted_usec_list_t *sul)
{
	struct session	*s = lws_container_of(sul, struct session, sul_kill);
	lws_usec_t	 next = 20 * LWS_US_PER_MS;

	switch (s->kill_stage) {
	case 1:
		registry_signal_group(s, SIGTERM);
		registry_signal_group(s, SIGCONT);
		next = (REGISTRY_GRACE_MS - 500) * LWS_US_PER_MS;
		break;
	case 2:
		registry_signal_group(s, SIGKILL);
		registry_signal_worker(s, SIGKILL);
		break;
	default:
		if (registry_worker_alive(s) != 1) {
			registry_finish(s);
			return;
		}
		if (s->kill_stage > 2 + 250) {	/* 5 s after SIGKILL */
			log_warnx("session %s: its worker does not exit",
			    s->id);
			registry_answer(s, ROUTE_SESSION_DELETE, "session "
			    "worker is not responding, and did not exit on "
			    "SIGKILL");
			s->kill_stage = 0;
			return;
		}
		break;
	}
	s->kill_stage++;
	lws_sul_schedule(front->ctx, 0, &s->sul_kill, registry_kill_cb, next);
}

/*
 * Delete a session whose worker does not answer, as the worker would:
 * SIGHUP and SIGCONT to its process group, SIGTERM 0.5 s later, then
 * SIGKILL to the group and to the worker; done when the worker is gone.
 */
void
registry_kill(struct session *s)
{
	if (s->kill_stage != 0 || s->gone)
		return;
	switch (registry_worker_alive(s)) {
	case 0:
		registry_finish(s);
		return;
	case -1:
		registry_answer(s, ROUTE_SESSION_DELETE, "session worker is "
		    "not responding, and its pid is unknown");
		log_warnx("session %s: its worker is not responding and its "
		    "pid is unknown", s->id);
		return;
	}
	log_warnx("session %s: ending it and its worker (pid %d)", s->id,
	    (int)s->worker_pid);
	s->kill_stage = 1;
	registry_signal_group(s, SIGHUP);
	registry_signal_group(s, SIGCONT);
	lws_sul_schedule(front->ctx, 0, &s->sul_kill, registry_kill_cb,
	    500 * LWS_US_PER_MS);
}

/*
 * Link a known session to its worker: through the registry's own link
 * to the worker's socket when there is one (a removed ID.sock hides
 * nothing), else through ID.sock.  Never blocks: a worker whose backlog
 * is full, or that does not answer its hello in time, is kept, marked,
 * and tried again.
 */
void
registry_connect(struct session *s)
{
	struct sockaddr_un	 sun;
	struct ucred		 cred;
	socklen_t		 len = sizeof(cred);
	char			 magic = CTL_MAGIC, path[700];
	int			 fd, busy;

	if (s->gone || s->link != NULL)
		return;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (record_link_path(s->id, path, sizeof(path)) == -1)
		snprintf(path, sizeof(path), "%s/sessions/%s.sock",
		    front->conf.rundir, s->id);
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path)) {
		log_warnx("%s: path too long", path);
		registry_finish(s);
		return;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1) {
		log_warn("socket");
		goto later;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		/* EAGAIN: its backlog is full, it accepts nothing now. */
		busy = errno == EAGAIN || errno == EINTR;
		close(fd);
		if (!busy && registry_worker_alive(s) != 1) {
			log_info("removing stale session %s", s->id);
			registry_finish(s);
			return;
		}
		if (!busy && s->link_tries == 0)
			log_warnx("session %s: its worker runs but %s: %s",
			    s->id, sun.sun_path, strerror(errno));
		registry_set_responsive(s, 0);
		goto later;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
		registry_learn_pid(s, cred.pid);
	if (write(fd, &magic, 1) != 1) {
		close(fd);
		goto later;
	}
	if (registry_attach(s, fd) == -1)	/* it closed fd */
		goto later;
	s->hello_id = registry_send_type(s, PROTO_HELLO);
	s->hello_late = 0;
	lws_sul_schedule(front->ctx, 0, &s->sul_link, registry_link_cb,
	    REGISTRY_HELLO_MS * LWS_US_PER_MS);
	return;
later:
	if (s->link_tries < 10)
		s->link_tries++;
	lws_sul_schedule(front->ctx, 0, &s->sul_link, registry_link_cb,
	    (lws_usec_t)s->link_tries * 500 * LWS_US_PER_MS);
}

/* A hello that was not answered in time, or a link to try again. */
static void
registry_link_cb(lws_sorted_usec_list_t *sul)
{
	struct session	*s = lws_container_of(sul, struct session, sul_link);

	if (s->gone)
		return;
	if (s->link != NULL) {
		if (s->hello_id != 0) {
			s->hello_late = 1;
			if (!s->ready)
				log_warnx("session %s: its worker did not "
				    "answer in time; waiting for it", s->id);
			registry_set_responsive(s, 0);
		}
		return;
	}
	if (registry_worker_alive(s) == 0) {
		registry_finish(s);
		return;
	}
	registry_connect(s);
}

void
registry_readable(struct session *s)
{
	msgpack_unpacked	up;
	char			who[128];
	int			r, fd;

	if ((r = ctl_read(&s->ctl)) == 0 || r == -1) {
		link_close(s->link);
		return;
	}
	msgpack_unpacked_init(&up);
	snprintf(who, sizeof(who), "the worker of session %s", s->id);
	while (s->link != NULL && (r = ctl_next(&s->ctl, &up, &fd)) == 1) {
		if (s->ctl.peer_pid > 0)
			registry_learn_pid(s, s->ctl.peer_pid);
		registry_set_responsive(s, 1);
		(void)proto_dispatch(PROTO_SESSION_FRONT,
		    front_dispatch_session,
		    PROTO_NHANDLERS(front_dispatch_session), who, s, &up.data,
		    &fd, fd == -1 ? 0 : 1);
	}
	msgpack_unpacked_destroy(&up);
	ctl_shrink(&s->ctl);	/* an idle session holds no buffer */
	if (r == -1) {
		log_warnx("session %s: bad frame from its worker", s->id);
		link_close(s->link);
	}
}

void
registry_writeable(struct session *s)
{
	if (ctl_flush(&s->ctl) == 1)
		link_writable(s->link);
}

/*
 * The front leaves: close every link, on the loop's next turns, while the
 * lws context the sessions' timers are on still exists.  The number of
 * links still open.
 */
int
registry_close_links(void)
{
	struct session	*s;
	int		 n = 0;

	RB_FOREACH(s, session_ids, &sessions_by_id)
		if (s->link != NULL) {
			link_close(s->link);
			n++;
		}
	return (n);
}

/*
 * The link to the worker closed.  A session removed, or one whose worker
 * is gone, is forgotten; a worker still running (its link dropped, its
 * exit under way) is watched and linked to again.
 */
void
registry_closed(struct session *s)
{
	struct conn	*c;

	s->link = NULL;
	s->ctl.fd = -1;		/* link.c closed it */
	ctl_close(&s->ctl);
	registry_nhandoffs -= s->handoffs;
	s->handoffs = 0;
	lws_sul_cancel(&s->sul_handoff);
	s->hello_id = s->probe_id = 0;
	if (s->gone) {
		registry_finish(s);	/* forgotten already: files, waiters */
		registry_free(s);
		return;
	}
	if (!s->refused && (front->quit || !s->ready ||
	    registry_worker_alive(s) != 1)) {
		registry_finish(s);
		return;
	}
	registry_answer(s, ROUTE_NONE, "session worker is not responding");
	LIST_FOREACH(c, &s->waiters, wait_entry)
		if (c->route == ROUTE_SESSION_DELETE)
			break;
	if (c != NULL)
		registry_kill(s);	/* its delete may have been lost */
	if (s->refused) {
		/* Listed, not linked again: a DELETE ends it (by its pid). */
		s->responsive = 0;
		registry_serialise(s);
		return;
	}
	registry_set_responsive(s, 0);
	s->link_tries = 0;
	lws_sul_schedule(front->ctx, 0, &s->sul_link, registry_link_cb,
	    200 * LWS_US_PER_MS);
}
