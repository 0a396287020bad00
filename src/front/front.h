/*
 * front.h: lodged's front process.
 *
 * The front binds the listeners, reads each request head, checks the token,
 * routes, answers the REST calls, and hands WebSocket upgrades and log
 * requests to the session's worker by passing the connection's descriptor.
 * It keeps a registry of sessions that it can rebuild at any time from
 * RUNDIR/sessions/, so it may die without loss.
 */
#ifndef FRONT_H
#define FRONT_H

#include <sys/queue.h>
#include <sys/tree.h>
#include <sys/types.h>

#include <stdint.h>

#include <jansson.h>
#include <signal.h>

#include <libwebsockets.h>
#include <msgpack.h>

#include "proto.h"
#include "httphead.h"
#include "pwcache.h"
#include "runas.h"

#define FRONT_LISTEN_MAX	16

struct front_config {
	char		 rundir[512];
	char		 listen[FRONT_LISTEN_MAX][256];
	int		 nlisten;
	char		 token_file[512];
	int		 no_auth;
	int		 foreground;
	int		 verbose;
	size_t		 max_head;	/* request head bytes */
	size_t		 max_body;	/* request body bytes */
	size_t		 max_buffer;	/* ceiling of a session's bufferSize */
	size_t		 buffer_budget;	/* all sessions' bufferSize together */
	size_t		 default_output; /* exec maxOutputBytes default */
	size_t		 max_output;	/* exec maxOutputBytes ceiling */
	int		 max_sessions;
	int		 head_timeout;	/* seconds for a request head */
	int		 idle_timeout;	/* seconds between requests */
	int		 write_timeout;	/* seconds a reply may go unread */
	int		 max_clients;	/* per session */
	size_t		 max_message;	/* WebSocket message bytes */
	int		 ping;		/* WebSocket ping interval, seconds */
	int		 exited_ttl;	/* seconds; 0 keeps exited sessions */
	char		 socket_group[64];
	char		 origins[FRONT_LISTEN_MAX][256];
	int		 norigins;
	char		 hosts[FRONT_LISTEN_MAX][256];	/* --allow-host */
	int		 nhosts;
	int		 max_conns;	/* connections the front holds */
	int		 max_peer_conns; /* ... of them for one peer */
	int		 max_execs_per_user;	/* restricted peers; 0: none */
	int		 no_cgroup;	/* the process tree, not cgroups */
	size_t		 exec_memory;	/* output held for POST /v1/exec */
	char		 web_root[512];	/* the page's files (--web-root) */
	int		 no_web;
};

struct front {
	struct front_config	 conf;
	char			 self[1024];	/* our own executable */
	char			 worker[1024];	/* lodged-worker, the template */
	char			 token[128];
	size_t			 token_len;
	int			 token_from_env;
	int			 records_fd;	/* RUNDIR/registry */
	int			 rundir_fd;	/* RUNDIR, checked at start */
	struct lws_context	*ctx;
	struct lws_vhost	*vh;
	struct uv_loop_s	*loop;		/* the loop lws runs on */
	int			 link_fd_base;	/* lws's table ends here */
	int			 quit;
	volatile sig_atomic_t	 reload;	/* SIGHUP: read the token again */
};

extern struct front	*front;

/* What a raw-file wsi of the front stands for. */
enum front_fd_kind {
	FFD_LISTEN,
	FFD_CONN,
	FFD_TEMPLATE,
};

struct front_fd {
	enum front_fd_kind	 kind;
	void			*ptr;
};

struct listener {
	struct front_fd		 ffd;
	LIST_ENTRY(listener)	 entry;
	int			 fd;
	int			 is_unix;
	struct lws		*wsi;
	char			 name[256];
	lws_sorted_usec_list_t	 sul;		/* resumes a paused accept */
	int			 paused;
};

enum conn_state {
	CONN_HEAD,		/* waiting for a full request head */
	CONN_BODY,		/* reading Content-Length bytes */
	CONN_WAIT,		/* waiting for a worker's reply */
	CONN_WRITE,		/* sending the reply */
	CONN_LINGER,		/* reply sent, dropping input until the close */
};

/* A peer: a TCP address, or a uid on a Unix socket.  No padding: memcmp. */
struct peer_key {
	unsigned char		 addr[16];	/* IPv4 in the first 4 */
	uint32_t		 uid;		/* Unix sockets, else ~0 */
	uint32_t		 is_unix;
};

struct session;
struct peer;

/*
 * What produces a streamed reply (reply_stream): read copies the next
 * piece, or view, if set, gives the whole body in place, to be sent from
 * where it lies until free.
 */
struct conn_source {
	size_t		(*read)(void *, char *, size_t);
	const char	*(*view)(void *, size_t *);
	void		(*free)(void *);
	void		 *arg;
};

/*
 * What a request gets: a reply to send now, or the body to read first,
 * or a wait for a worker or the template (whose answer comes through
 * conn_reply), or the connection passed on to c->pass_to's worker (NULL:
 * an exec stream, to the template).
 */
enum reply_kind {
	REPLY_CLOSE,		/* nothing can be said: close */
	REPLY_SEND,
	REPLY_BODY,
	REPLY_WAIT,
	REPLY_HANDOFF,
};

struct reply {
	enum reply_kind		 kind;
	int			 status;
	int			 close;		/* the connection closes after */
	const char		*ctype;
	char			 fields[1024];	/* extra header lines */
	const char		*body;		/* NULL: the head only */
	size_t			 len;		/* the body's, sent or not */
	char			*owned;		/* freed once it is sent */
	struct conn_source	 src;		/* else the body, as it goes */
};

/* A non-root peer on the Unix socket: it may act only as itself. */
#define CONN_RESTRICTED(c)	((c)->l->is_unix && (c)->peer_uid != 0)

struct conn {
	struct front_fd		 ffd;
	LIST_ENTRY(conn)	 wait_entry;	/* on a session's waiters */
	int			 fd;
	struct lws		*wsi;
	struct listener		*l;
	struct peer		*peer;
	uid_t			 peer_uid;	/* Unix sockets */
	pid_t			 peer_pid;	/* who connected, Unix sockets */
	enum conn_state		 state;
	char			*buf;		/* head (peeked), then body */
	size_t			 buflen;
	struct httphead		 h;
	size_t			 head_len;
	int			 keep_alive;
	enum httphead_route	 route;
	uint64_t		 t0;		/* head complete, metrics_now() */
	char			 ref[HTTPHEAD_REF_MAX];
	char			*body;
	size_t			 body_len;
	size_t			 body_want;
	char			*out;
	size_t			 out_len;
	size_t			 out_off;
	struct conn_source	 src;		/* the rest of a streamed reply */
	size_t			 src_left;
	const char		*src_at;	/* ... in place: its view */
	int			 close_after;
	int			 closed;
	struct session		*waiting;	/* session whose reply we await */
	struct session		*pass_to;	/* REPLY_HANDOFF's worker */
	int64_t			 reqid;
	int			 creating;	/* waits for "created" */
	struct exec_call	*exec;		/* POST /v1/exec in flight */
	lws_sorted_usec_list_t	 sul;
	int			 peek_tries;
	int			 lowat;		/* SO_RCVLOWAT raised */
};

/*
 * Every exchange with a worker is bounded: a request's answer within
 * REGISTRY_TIMEOUT_MS (a delete's after the grace time too), a handoff
 * taken within the same time, at most REGISTRY_HANDOFF_MAX of them in
 * flight per worker and REGISTRY_HANDOFF_TOTAL in all.
 */
#define REGISTRY_TIMEOUT_MS	5000
#define REGISTRY_HELLO_MS	2000
#define REGISTRY_CREATE_MS	10000	/* a new worker's "created" */
#define REGISTRY_GRACE_MS	2500	/* SIGHUP, 0.5 s, SIGTERM, 2 s */
#define REGISTRY_HANDOFF_MAX	16
#define REGISTRY_HANDOFF_TOTAL	1024

/* The text of a GET /v1/sessions reply, shared while it is sent. */
struct listing {
	int		 refs;
	size_t		 len;
	size_t		 size;		/* of text, len of it used */
	char		 text[];
};

/*
 * What GET /metrics reports of the sessions, kept as they change, and the
 * length of their serialised objects (the size of the whole list).
 */
struct session_gauges {
	uint64_t	 running, exited, clients, output;
	uint64_t	 text;
};

struct session {
	RB_ENTRY(session)	 by_id;
	RB_ENTRY(session)	 by_name;
	char			 id[64];
	char			 name[65];
	int			 ready;		/* "created" seen, or known */
	int			 gone;
	struct ctl		 ctl;
	struct link		*link;		/* NULL: no link to the worker */
	char			*json;		/* the session object, serialised */
	size_t			 json_len;
	int64_t			 pid;		/* ... and what the front reads */
	uint64_t		 output_bytes;	/* of it (registry_take) */
	int			 clients;
	char			 state[12];
	char			 user[33];	/* "": unknown, or too long */
	LIST_HEAD(, conn)	 waiters;
	int			 named;
	int			 responsive;	/* answers within the deadline */
	int			 acks;		/* acknowledges handoffs */
	int			 proto;		/* its PROTO_VERSION */
	int			 refused;	/* ... newer than ours */
	pid_t			 worker_pid;	/* the kernel's word */
	unsigned long long	 worker_start;	/* its start time, /proc */
	int64_t			 hello_id;	/* a hello in flight */
	int			 hello_late;	/* ... past its deadline */
	int64_t			 probe_id;	/* an info asked unprompted */
	int64_t			 delete_id;	/* the delete sent, if any */
	int			 handoffs;	/* passed, not yet taken */
	int			 handoff_first;
	lws_usec_t		 handoff_at[REGISTRY_HANDOFF_MAX];
	lws_sorted_usec_list_t	 sul_handoff;	/* the oldest one's deadline */
	lws_sorted_usec_list_t	 sul_link;	/* hello, reconnects */
	lws_sorted_usec_list_t	 sul_kill;	/* killing a silent worker */
	int			 kill_stage;
	int			 link_tries;
	char			 recorded[16];	/* state in the record */
	size_t			 buffer_size;	/* its ring, in the budget */
	struct session_gauges	 share;		/* its part of the gauges */
};

/* main.c */
void	front_pack_limits(msgpack_packer *);
struct passwd;
void	front_pack_user(msgpack_packer *, const struct passwd *);
struct lws *front_adopt(int fd, struct front_fd *);

/* listener.c */
int	listener_open(const char *spec, struct listener **);
int	listener_open_unix(const char *path, struct listener **);
void	listener_accept(struct listener *);
int	listener_is_loopback(const char *spec);
int	listener_host_is_loopback(const char *host);
struct listener *listener_adopt_fd(int fd);
void	listener_free_all(void);

/* peer.c */
int	peer_key_of(int fd, int is_unix, struct peer_key *);
int	peer_count(const struct peer_key *);
struct peer *peer_hold(const struct peer_key *);
void	peer_release(struct peer *);
int	peer_pack_limits(const struct conn *, msgpack_packer *);

/* rundir.c */
int	rundir_open(void);

/* notify.c */
void	notify_ready(void);
void	notify_stopping(void);
int	notify_listeners(void);

/* conn.c: reads requests, sends the replies it is given */
struct conn *conn_new(int fd, struct listener *);
void	conn_readable(struct conn *);
void	conn_writeable(struct conn *);
void	conn_closed(struct conn *);
void	conn_reply(struct conn *, struct reply *);

/* reply.c */
struct reply *reply_body(struct reply *, int status, const char *ctype,
	    const char *body, size_t len);
struct reply *reply_head(struct reply *, int status, const char *ctype,
	    size_t len);
struct reply *reply_empty(struct reply *, int status);
struct reply *reply_json(struct reply *, int status, json_t *);
struct reply *reply_error(struct reply *, int status, const char *code,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
struct reply *reply_session(struct reply *, struct session *);
struct reply *reply_stream(struct reply *, int status, const char *ctype,
	    size_t len, const struct conn_source *);

/* web.c */
int	web_request(struct conn *, struct reply *);

/* api.c: decides what a request gets (struct reply's kind) */
void	api_head(struct conn *, struct reply *);
void	api_request(struct conn *, struct reply *);
void	api_worker_reply(struct conn *, struct session *,
	    const msgpack_object *, struct reply *);

/* registry.c */
struct session *registry_find(const char *ref);
struct session *registry_find_id(const char *id);
int	registry_name_taken(const char *name);
int	registry_count(void);
struct listing *registry_list(int (*)(struct session *, void *), void *,
	    const char *after, int limit);
void	registry_list_done(struct listing *);
void	registry_set_ready(struct session *);
const struct session_gauges *registry_gauges(void);
struct session *registry_add(const char *id, const char *name, int fd);
void	registry_remove(struct session *);
void	registry_set_buffer(struct session *, size_t);
size_t	registry_buffer_total(void);
int	registry_request(struct session *, struct conn *, struct proto_out *,
	    int fd);
void	registry_cancel(struct conn *);
/* link.c: a worker's control connection, on the loop outside lws */
int		 link_fd(int fd);
struct link	*link_open(struct session *, int fd);
void		 link_writable(struct link *);
void		 link_close(struct link *);

void	registry_readable(struct session *);
void	registry_writeable(struct session *);
void	registry_closed(struct session *);
int	registry_close_links(void);
int	registry_answers(struct session *);
int	registry_all(struct session **, int max);
int	registry_handoff_check(struct session *, char *why, size_t);
void	registry_unanswered(struct session *, char *why, size_t);
void	registry_expect(struct session *, struct conn *, int ms);
void	registry_delete(struct session *, struct conn *);
void	registry_kill(struct session *);
void	registry_connect(struct session *);
struct session *registry_known(const char *id, const char *name, json_t *obj);
int64_t	registry_next_id(void);

/* scope.c */
int	scope_adopt(pid_t);

/* discover.c: finding the sessions again after a restart */
void	discover_start(void);

/* record.c: RUNDIR/registry/, what the front knows of each session */
int	record_init(void);
void	record_write(struct session *);
void	record_remove(const char *id);
int	record_link_path(const char *id, char *path, size_t len);
int	record_restore(const char *id);

/* spawner.c: the only code in the front that forks or execs */
int	spawner_start(void);
int	spawner_send(struct proto_out *, int fd);
void	spawner_readable(void);
void	spawner_writeable(void);
void	spawner_closed(void);

/* exec.c: POST /v1/exec */
struct exec_call;
struct spawnreq;

void	exec_start(struct conn *, const msgpack_object *,
	    const struct passwd *, struct spawnreq *, struct reply *);
void	exec_output(void *, const msgpack_object *, int *);
void	exec_spawned(void *, const msgpack_object *, int *);
void	exec_exited(void *, const msgpack_object *, int *);
void	exec_template_lost(void);
void	exec_conn_closed(struct exec_call *);

/* auth.c */
int	auth_init(void);
void	auth_reload(void);
int	auth_check(const struct httphead *);
int	auth_host_allowed(const struct listener *, const struct httphead *);
int	auth_origin_allowed(const struct listener *, const struct httphead *);
int	auth_body_type_allowed(const struct listener *,
	    const struct httphead *);

#endif
