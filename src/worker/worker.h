/*
 * worker.h: the session worker and the template that forks it.
 *
 * The template is lodged-worker, a program of its own, started once by the
 * front (fork+exec, its control channel on fd 3: spawner.c) before any
 * connection is served.  For each new session the front sends it a spawn
 * request and one end of a socket pair; the template passes both to a
 * worker it forked ahead (pool.c), which becomes the session's worker: its
 * own session and process group, the PTY or pipes, the child process, the
 * output ring and every attached client, served from its own
 * libwebsockets loop and its socket RUNDIR/sessions/ID.sock.
 */
#ifndef WORKER_H
#define WORKER_H

#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <stdint.h>
#include <time.h>

#include <libwebsockets.h>
#include <msgpack.h>

#include "proto.h"
#include "inputq.h"
#include "spawnreq.h"

#define WORKER_ID_MAX		64
#define WORKER_CHUNK		(64 * 1024)	/* largest output frame */
#define WORKER_WS_MSG_MAX	(1024 * 1024)	/* default largest message */
#define WORKER_INPUT_MAX	INPUTQ_REST
#define WORKER_CLIENT_INPUT	INPUTQ_CLIENT
#define CLIENT_RXFLOW_INPUT	(1 << 1)	/* rx flow: input queue full */
#define WORKER_DRAIN_MS		250	/* grandchildren holding output */
/*
 * The most one read of a PTY master gives (the tty layer's buffer): a
 * shorter read of a PTY or a pipe took all that was waiting, so another
 * would only fail with EAGAIN; the poll says when more comes.
 */
#define WORKER_FULL_READ	4095

/* What a raw-file wsi stands for; set as its opaque user data. */
enum worker_fd_kind {
	WFD_SNIFF,		/* accepted, first byte not seen yet */
	WFD_CONTROL,
	WFD_OUT,		/* PTY master or stdout pipe */
	WFD_ERR,		/* stderr pipe */
	WFD_IN,			/* stdin pipe (pipe mode), for writability */
	WFD_SIGNAL,
};

struct worker_fd {
	enum worker_fd_kind	 kind;
	int			 fd;
	struct lws		*wsi;
	struct ctl		 ctl;		/* WFD_CONTROL */
	LIST_ENTRY(worker_fd)	 entry;		/* WFD_CONTROL */
};

struct client;

/* contain.c: the processes of one session or command, as one group */
struct contain {
	char		 name[48];	/* BASE/lodge/NAME */
	int		 cgroup;	/* a cgroup, or the tree below top */
	int		 procs;		/* cgroup.procs, opened as root */
	int		 kill;		/* cgroup.kill, opened as root */
	pid_t		 top;		/* tree: the subreaper, or the command */
	pid_t		 sid;		/* tree: its session's members too */
};
void	contain_init(int use_cgroup);
void	contain_use(const char *base);
void	contain_create(struct contain *, const char *name, pid_t top);
void	contain_close(struct contain *);
void	contain_close_procs(struct contain *);
int	contain_signal(struct contain *, int sig);
int	contain_signal_all(struct contain *, pid_t, int reaped, int sig);
int	contain_alive(struct contain *, pid_t);
int	contain_remove(const char *name);
int	contain_sweep(int (*keep)(const char *));
int	contain_sweep_step(int (*keep)(const char *));
void	contain_sweep_forget(void);

/* escalate.c: a group's ending, one signal after another */
struct escalate_step {
	int		 sig;		/* 0 ends the ladder */
	int		 wait_ms;	/* before the next, or again */
};
struct escalate {
	const struct escalate_step *steps;	/* NULL: not started */
	int		 first;		/* the first step's signal, if not 0 */
	int		 next;		/* due at 'at'; -1: done */
	int64_t		 at;
};
void	escalate_start(struct escalate *, const struct escalate_step *,
	    int first, int64_t now);
int	escalate_due(struct escalate *, int64_t now);
int64_t	escalate_at(const struct escalate *);
int64_t	escalate_now(void);

/* gather.c: small output held a moment, to go in one message */
#define GATHER_US		4000
struct gather {
	lws_sorted_usec_list_t	 sul;
	lws_usec_t		 sent_at;	/* output last sent */
	int			 answering;	/* input since then */
};
int	gather_hold(struct gather *, struct lws_context *, sul_cb_t);

/* pace.c: the process held back for its fastest client */
void	pace_check(void);
void	pace_moved(struct client *);

/* txhold.c: a connection whose output lws holds is not read by lws */
#define TXHOLD_RXFLOW_BIT	(1 << 2)
struct txhold {
	struct lws		*wsi;
	int			 held;
	int			 dead;
	LIST_ENTRY(txhold)	 entry;
};
void	txhold_init(struct txhold *, struct lws *);
void	txhold_wrote(struct txhold *);
void	txhold_writeable(struct txhold *);
void	txhold_forget(struct txhold *);
void	txhold_service(void);

/* wsrx.c: one client message out of its WebSocket frames */
struct wsrx {
	unsigned char		*buf;		/* the fragments so far */
	size_t			 len;
	int			 bad;		/* a text message: refused */
};
struct wsrx_ops {
	void	(*message)(void *, const unsigned char *, size_t);
	void	(*error)(void *, const char *code, const char *message);
};
#define WSRX_OK			0
#define WSRX_TOO_BIG		1	/* close with 1009 */
#define WSRX_NOMEM		-1
int	wsrx_take(struct wsrx *, struct lws *, const void *, size_t,
	    size_t max, const struct wsrx_ops *, void *);
void	wsrx_free(struct wsrx *);

/* Pending replies and errors for one client, oldest first. */
struct client_msg {
	STAILQ_ENTRY(client_msg) entry;
	size_t			 len;
	unsigned char		 data[];
};

/* inputq.c: a child's stdin, whole messages in the order they came */
struct inputq_owner {
	struct lws		*wsi;		/* paused while it holds too much */
	size_t			 queued;	/* its bytes in the queue */
	int			 paused;
};
struct input_msg {
	STAILQ_ENTRY(input_msg)	 entry;
	struct inputq_owner	*owner;		/* NULL: REST, or gone */
	size_t			 len;
	size_t			 off;		/* written so far */
	unsigned char		 data[];
};
struct inputq {
	STAILQ_HEAD(, input_msg) msgs;
	size_t			 len;
	int			 fd;		/* the child's stdin; -1: gone */
	int			 eof;		/* close stdin once drained */
};
void	inputq_init(struct inputq *);
int	inputq_push(struct inputq *, struct inputq_owner *, const void *,
	    size_t);
size_t	inputq_write(struct inputq *);
void	inputq_drop(struct inputq *);
void	inputq_forget(struct inputq *, struct inputq_owner *);

struct client {
	LIST_ENTRY(client)	 entry;
	struct lws		*wsi;
	struct txhold		 tx;
	struct inputq_owner	 in;		/* its queued stdin */
	uint64_t		 off;		/* next byte to send */
	uint64_t		 replay_to;
	int			 readonly;
	int			 pace;		/* holds the process back */
	lws_usec_t		 moved_at;	/* its output last moved on */
	int			 queued;	/* its socket's unsent bytes */
	int			 want_size;	/* cols/rows in the query */
	int			 cols, rows;
	int			 since_set;
	uint64_t		 since;
	int			 sent_attached;
	int			 sent_live;
	int			 sent_exit;
	int			 closing;
	int			 close_queued;	/* our close frame is lws's */
	STAILQ_HEAD(, client_msg) msgs;
	size_t			 nmsgs;
	struct wsrx		 rx;
};

/* Per-connection data of the HTTP side (log requests). */
struct http_req {
	unsigned char		*body;
	size_t			 len;
	size_t			 sent;
	int			 is_ws;
	struct txhold		 tx;		/* log replies */
	struct client		*client;	/* for WebSocket connections */
};

struct worker {
	char			 id[WORKER_ID_MAX];
	int64_t			 spawn_id;	/* the request "created" answers */
	char			 rundir[512];
	char			 sockpath[600];
	struct spawnreq		 req;
	uid_t			 uid;
	gid_t			 gid;
	char			 username[SPAWNREQ_USER_MAX + 1];
	char			 home[512];
	char			 shell[256];
	char			 workdir[1024];
	time_t			 created;
	int			 created_ms;

	struct lws_context	*ctx;
	struct lws_vhost	*vh;
	struct ring		*ring;

	pid_t			 pid;		/* the session's child */
	struct contain		 group;		/* it and all it starts */
	int			 cols, rows;
	int			 out_open, err_open;
	struct worker_fd	*out, *err, *in, *sig;
	int			 listen_fd;	/* not polled: SIGIO (worker_signals) */
	int			 master_keep;	/* the PTY, held until the reap */
	struct inputq		 inq;		/* to the PTY master or stdin */

	int			 reaped;
	int			 status;	/* from waitpid */
	int			 final;		/* exited, output drained */
	int			 deleting;
	struct escalate		 ending;	/* the delete's signals */
	int			 quitting;
	lws_sorted_usec_list_t	 sul_drain;
	lws_sorted_usec_list_t	 sul_delete;
	lws_sorted_usec_list_t	 sul_update;
	lws_sorted_usec_list_t	 sul_quit;
	lws_sorted_usec_list_t	 sul_ttl;
	struct gather		 gather;	/* small output held */
	uint64_t		 reported_bytes;

	LIST_HEAD(, client)	 clients;
	int			 nclients;
	int			 npaced;	/* clients with pace */
	int			 pace_held;	/* output not read: pace.c */
	lws_sorted_usec_list_t	 sul_pace;
	LIST_HEAD(, worker_fd)	 controls;
	/* control requests waiting for the session to be gone */
	int64_t			 delete_waiters[16];
	struct worker_fd	*delete_ctl[16];
	int			 ndelete;
};

extern struct worker	*worker;

/* Limits set by the front's options, sent with each spawn request. */
struct worker_limits {
	int		 max_clients;	/* per session */
	size_t		 msg_max;	/* largest client message */
	int		 ping;		/* seconds between pings */
	int		 exited_ttl;	/* seconds an exited session stays; 0 */
};

extern struct worker_limits	worker_limits;
void	worker_limits_decode(const msgpack_object *);
void	worker_limits_pack(msgpack_packer *, size_t input_queue);

/* template.c */
void	template_main(int ctlfd, int use_cgroup) __attribute__((noreturn));
void	template_child_setup(void);
int	template_nproc(const msgpack_object *, struct rlimit *);
int	template_peer_full(const msgpack_object *, int64_t *peer,
	    int64_t *max);
void	template_sweep_later(void);

/* pool.c: workers forked ahead of need */
void	pool_fill(void);
pid_t	pool_take(const struct ctl *, int fd);
void	pool_reaped(pid_t);
void	pool_forget(void);

/* execrun.c: the commands of POST /v1/exec, run by the template */
#define EXECRUN_BACKLOG		(1024 * 1024)	/* pause reading above this */
struct pollfd;
void	execrun_start(struct ctl *, const msgpack_object *);
void	execrun_kill(const msgpack_object *);
void	execrun_forget(void);
void	execrun_end_all(void);
int	execrun_peer_count(uid_t);
int	execrun_owns_group(const char *);
int	execrun_reaped(struct ctl *, pid_t, int status);
void	execrun_reap_each(struct ctl *, void (*)(struct ctl *, pid_t));
int	execrun_nfds(void);
int	execrun_pollfds(struct pollfd *, void **tag, int max, int backlogged);
void	execrun_events(struct ctl *, struct pollfd *, void **tag, int n);
int	execrun_timeout(void);
void	execrun_timers(struct ctl *);

/* stream.c: one exec stream, its WebSocket and its child */
void	stream_main(int fd, const msgpack_object *)
	    __attribute__((noreturn));

/* worker.c */
void	worker_main(int ctlfd, const msgpack_object *spawn)
	    __attribute__((noreturn));
void	worker_pack_session(msgpack_packer *);
void	worker_broadcast_update(void);
void	worker_wake_clients(void);
void	worker_send_clients(void);
void	worker_quit(void);
void	worker_output_changed(void);
int	worker_become(const char *, uid_t, gid_t);
int	worker_signalfd(int session);
struct lws_context *worker_context(const struct lws_protocols *, rlim_t);

/* child.c */
struct child_spec {
	char		**argv;
	char		**envp;
	const char	*workdir;
	int		 pty;
	int		 cols, rows;
	int		 login;	/* argv[0] is "-shell": run SHELL */
	int		 given;		/* use fds[] for 0-2 (-1: /dev/null) */
	int		 fds[3];
	int		 setuser;	/* switch to uid/gid/groups first */
	uid_t		 uid;
	gid_t		 gid;
	const gid_t	*groups;
	int		 ngroups;
	int		 cgroup_fd;	/* cgroup.procs to join, or -1 */
	int		 set_nproc;	/* the peer's RLIMIT_NPROC */
	struct rlimit	 nproc;
};
struct child {
	pid_t		 pid;
	int		 master;	/* PTY master, or -1 */
	int		 in, out, err;	/* pipes, or -1 */
};
/* -1 and why on failure, errno ENOSPC if no pseudo-terminal is left. */
int	child_start(const struct child_spec *, struct child *, char *why,
	    size_t whylen);
int	child_limit_nproc(const struct rlimit *);
void	child_close_pair(int [2]);
/* A PTY's window size: 0, or -1 with errno. */
int	child_set_size(int master, int cols, int rows);
/* Where a signal goes: the terminal's foreground group, else the command. */
pid_t	child_signal_group(int master, pid_t);
/* r's argv, environ and directory for user: -1 when out of memory. */
int	child_spec_init(struct child_spec *, const struct spawnreq *r,
	    const char *user, const char *home, const char *shell, int pty);
void	child_spec_free(struct child_spec *);

/* session.c: the child's I/O, signals, resize, delete */
void	session_output(struct worker_fd *, int drain);
void	session_output_closing(struct worker_fd *);
void	session_reap(void);
int	session_input(struct client *, const void *, size_t);
void	session_input_closed(void);
void	session_input_eof(void);
void	session_input_flush(void);
int	session_signal(int signo, char *why, size_t whylen);
int	session_resize(int cols, int rows, char *why, size_t whylen);
void	session_delete(struct worker_fd *ctl, int64_t reqid);
void	session_check_final(void);

/* control.c: the front's connections */
void	control_read(struct worker_fd *);
struct lws *control_adopt_http(struct lws_vhost *, int fd,
	    const msgpack_object *);
void	control_send_reply(struct worker_fd *, int64_t id, int status,
	    const char *code, const char *message, int with_session);
void	control_closed(struct worker_fd *);
void	control_broadcast_gone(void);
void	control_send(struct worker_fd *, const msgpack_sbuffer *);

/* client.c: attached WebSocket clients and log requests */
int	client_callback(struct lws *, enum lws_callback_reasons, void *,
	    void *, size_t);
void	client_wake(struct client *);
void	client_output(struct client *);

#endif
