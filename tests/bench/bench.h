/*
 * bench.h: lodge-bench, the benchmark driver behind `make bench`.
 *
 * One process drives a private lodged over loopback TCP with raw sockets: an
 * HTTP/1.1 keep-alive client for the REST calls and a small WebSocket client
 * (masked client frames, server frames parsed in place, msgpack-c to decode)
 * for attach and exec streams.  Every figure is measured over several runs,
 * each run next to its floor (the same work done without lodged), so the
 * ratio is taken between numbers measured seconds apart on the same machine.
 */
#ifndef BENCH_H
#define BENCH_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <msgpack.h>

#define BENCH_MAXRUNS	16
#define KIB		1024ULL
#define MIB		(1024ULL * 1024)
#define GIB		(1024ULL * 1024 * 1024)

/* options and the daemon under test (main.c) */
extern int		 bench_runs;
extern int		 bench_quick;
extern int		 bench_keep_damon;
extern int		 bench_port;
extern char		 bench_token[256];
extern volatile int	 bench_interrupted;	/* the signal */

/* util.c: time, samples, processes, /proc */
double	 now_ms(void);
void	 fatalx(const char *, ...) __attribute__((noreturn, format(printf, 1, 2)));
void	 progress(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 check_interrupt(void);
int	 bench_more_runs(const char *, int done, double budget_s);
extern double	 bench_section_t0;
void	 bench_cleanup(void);	/* main.c: deletes sessions, stops lodged */

struct samples {
	double	*v;
	size_t	 n;
	size_t	 cap;
};
void	 samples_add(struct samples *, double);
double	 samples_pct(struct samples *, double);	/* nearest rank, 0..100 */
void	 samples_reset(struct samples *);
void	 samples_free(struct samples *);

void	 pids_track(pid_t);
void	 pids_untrack(pid_t);
void	 pids_kill_all(void);
pid_t	 spawn_cmd(char *const argv[], int in, int out, int err);
int	 wait_pid(pid_t, int *status);
long	 proc_field_kb(pid_t, const char *file, const char *field);
pid_t	 proc_ppid(pid_t);
int	 proc_alive(pid_t);
int	 proc_alive_since(pid_t, unsigned long long);
unsigned long long proc_start(pid_t);
int	 proc_cmdline(pid_t, char *, size_t);
int	 proc_sched(pid_t, double *cpu_ns, double *slices);
double	 proc_cpu_ns(pid_t);
pid_t	 proc_child_named(pid_t, const char *);
pid_t	 bench_front_pid(void);
pid_t	 bench_template_pid(void);
void	 bench_lodged_restart(void);
void	 bench_side_start(void);
void	 bench_side_stop(void);
void	 bench_side_swap(void);

/* client.c: HTTP and WebSocket over TCP, msgpack helpers */
int	 tcp_connect(int port);

struct http {
	int	 fd;
	char	*buf;
	size_t	 len;
	size_t	 cap;
	int	 status;
	char	*body;		/* into buf, NUL-terminated, until next call */
	size_t	 body_len;
};
int	 http_open(struct http *);
void	 http_reserve(struct http *, size_t);
void	 http_close(struct http *);
int	 http_send(struct http *, const char *method, const char *path,
	    const char *body);
int	 http_recv(struct http *);
int	 http_call(struct http *, const char *method, const char *path,
	    const char *body);

struct ws {
	int		 fd;
	unsigned char	*buf;
	size_t		 cap, start, end;
	unsigned char	*frag;
	size_t		 fraglen, fragcap;
	int		 fragging;
	int		 closed;
	int		 close_code;
	uint32_t	 rng;
	const char	*proto;		/* Sec-WebSocket-Protocol, or NULL */
	msgpack_unpacked up;
};
extern size_t ws_bufsize;
int	 ws_open(struct ws *, const char *path);
int	 ws_open_port(struct ws *, int port, const char *path);
int	 ws_open_proto(struct ws *, int port, const char *path,
	    const char *proto);
int	 ws_handshake_send(struct ws *, const char *path, char *key,
	    size_t keylen);
int	 ws_handshake_recv(struct ws *, const char *key);
void	 ws_close(struct ws *);
int	 ws_send(struct ws *, const void *, size_t);
int	 ws_next(struct ws *, const unsigned char **, size_t *);
ssize_t	 ws_fill(struct ws *);
int	 ws_recv(struct ws *, const unsigned char **, size_t *);
const msgpack_object *ws_decode(struct ws *, const unsigned char *, size_t);

const msgpack_object *mp_get(const msgpack_object *, const char *);
int	 mp_type_is(const msgpack_object *, const char *);
int64_t	 mp_int(const msgpack_object *, const char *, int64_t dflt);
int	 mp_bin(const msgpack_object *, const char *, const char **, size_t *);
void	 sha1(const void *, size_t, unsigned char out[20]);
void	 base64(const unsigned char *, size_t, char *);

/* floor.c: the same work without lodged */
void	 floor_spawn_true(struct samples *, int n);
double	 floor_pipe_cmd(char *const argv[], uint64_t *bytes);
double	 floor_pipe_c2c(uint64_t total, size_t blk);
double	 floor_tcp_c2c(uint64_t total, size_t blk);
double	 floor_pty_cmd(const char *cmd, uint64_t expect);
void	 floor_pty_keys(const char *cmd, struct samples *, int n);

/* A command on a PTY of the bench's, typed into (floor.c). */
struct pty_term {
	int	master;
	pid_t	pid;
};
void	 pty_term_open(struct pty_term *, const char *cmd);
void	 pty_term_keys(struct pty_term *, struct samples *, int n, int warm);
void	 pty_term_close(struct pty_term *);

void	 floor_tcp_echo(struct samples *, int n);
void	 floor_tcp_fetch(struct samples *, int n, size_t bytes);
int	 floor_listen(int *port);
pid_t	 floor_pty_start(const char *cmd, int *master, int *slave);
int	 floor_dtach_pss(const char *dir, int n, double *pss_kb,
	    double *rss_kb, double *dirty_kb);

/* relay.c: B4's floor, a minimal WebSocket-to-PTY relay */
pid_t	 relay_start(const char *cmd, int *port, pid_t *cmd_pid);
void	 relay_stop(pid_t relay, pid_t cmd);
int	 relay_client(int argc, char **argv);

/* ttyd.c: B4's peer, given LODGE_BENCH_TTYD */
pid_t	 ttyd_start(const char *ttyd, const char *cmd, int *port);
void	 ttyd_stop(pid_t);
void	 ttyd_open(struct ws *, int port);
void	 ttyd_keystrokes(struct ws *, struct samples *, int n, int warm);

/* main.c: figures, notes, sessions */
struct figure {
	const char	*id;		/* "B1" */
	char		 name[96];
	const char	*unit;
	char		 base[96];	/* the floor's name; "" if none */
	const char	*op;		/* "<=", ">=" or NULL: no target */
	double		 target;
	int		 absolute;	/* target on the value, not the ratio */
	double		 v[BENCH_MAXRUNS];
	double		 b[BENCH_MAXRUNS];
	int		 n;
};
struct figure	*fig_new(const char *id, const char *name, const char *unit,
		    const char *base, const char *op, double target,
		    int absolute);
void		 fig_run(struct figure *, double value, double floor);
void		 note(const char *, ...) __attribute__((format(printf, 1, 2)));

struct sess {
	char	id[64];
	pid_t	child;		/* the session's command */
	pid_t	worker;		/* its parent, "lodged: session ID" */
	unsigned long long worker_start;	/* proc_start(worker) */
};
extern struct sess	*sessions;
extern int		 nsessions;
struct sess	*sess_create(struct http *, const char *body, double *ms);
json_t		*sess_get(struct http *, const struct sess *);
double		 sess_create_many(const char *body, int n, int nconn);
double		 sess_delete_all(void);
uint64_t	 sess_attach(struct ws *, const struct sess *, const char *);
void		 pack_stdin(msgpack_sbuffer *, const void *, size_t);

/* the benchmarks: exec.c (B1, B2), pty.c (B3, B4, B5), scale.c (B6),
 * fanout.c (B7), scale.c (B8) */
void	 bench_b1(void);
void	 bench_b2(void);
void	 bench_b3(void);
void	 bench_b4(void);
void	 bench_b5(void);
void	 bench_b6(void);
void	 bench_b7(void);
void	 bench_b8(void);
int	 bench_b8_sessions(void);
void	 write_sessions_dat(const char *outdir);

/* the measurements B1, B2 and B4 share with the SDK figures (sdkmode.c) */
void	 exec_latency(struct http *, struct samples *, int n);
double	 exec_stream(char *const argv[], uint64_t *bytes, long *hwm_kb);
void	 keystroke_session(struct http *, struct ws *);
void	 keystrokes(struct ws *, struct samples *, int n, int warm);
int	 sdk_figures(int argc, char **argv);
extern char	 bench_workdir[256];

#endif
