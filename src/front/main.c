/*
 * main.c: lodged's entry point, the front.
 *
 * The worker template is a program of its own, lodged-worker (see
 * worker/main.c), which the front starts before it serves anyone.
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "front.h"
#include "log.h"
#include "mpack.h"
#include "nofile.h"
#include "rawio.h"

extern char	**environ;

struct front	*front;

static int	front_raw_cb(struct lws *, enum lws_callback_reasons, void *,
		    void *, size_t);

static const struct lws_protocols front_protocols[] = {
	{ "lodge-front", front_raw_cb, 0, 0, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

static void __attribute__((noreturn))
usage(int status)
{
	FILE	*f = status == 0 ? stdout : stderr;

	fprintf(f,
"usage: lodged [--foreground] [--listen HOST:PORT]... [--runtime-dir DIR]\n"
"              [--token-file FILE] [--no-auth] [--max-sessions N]\n"
"              [--max-buffer-size BYTES] [--buffer-budget BYTES]\n"
"              [--max-body-size BYTES] [--max-head-size BYTES]\n"
"              [--head-timeout SECONDS] [--idle-timeout SECONDS]\n"
"              [--write-timeout SECONDS] [--max-output-bytes BYTES]\n"
"              [--max-connections N] [--max-peer-connections N]\n"
"              [--exec-memory BYTES]\n"
"              [--default-output-bytes BYTES] [--max-clients N]\n"
"              [--max-message-size BYTES] [--ping-interval SECONDS]\n"
"              [--exited-ttl SECONDS] [--socket-group GROUP]\n"
"              [--allow-origin ORIGIN]... [--allow-host NAME]...\n"
"              [--max-execs-per-user N] [--no-cgroup]\n"
"              [--web-root DIR] [--no-web]\n"
"              [-v] [--help] [--version]\n");
	exit(status);
}

/* An option refused: why, on stderr, and exit status 2. */
static void __attribute__((noreturn, format(printf, 1, 2)))
bad_option(const char *fmt, ...)
{
	va_list	ap;

	fputs("lodged: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/*
 * The options that take a number: where it goes, its default (0 for the
 * three worked out later), its bounds.
 */
#define FRONT_INT(f)	offsetof(struct front_config, f), sizeof(int)
#define FRONT_SIZE(f)	offsetof(struct front_config, f), sizeof(size_t)
static const struct front_number {
	const char	*name;
	size_t		 off, size;
	long long	 def, min, max;
} front_numbers[] = {
	{ "max-sessions", FRONT_INT(max_sessions), 1024, 1, 1000000 },
	{ "max-buffer-size", FRONT_SIZE(max_buffer), 64 << 20, 4096,
	    1LL << 34 },
	{ "buffer-budget", FRONT_SIZE(buffer_budget), 0, 4096, 1LL << 40 },
	{ "max-body-size", FRONT_SIZE(max_body), 8 << 20, 1024, 1LL << 30 },
	{ "max-head-size", FRONT_SIZE(max_head), 16384, 1024, 1 << 20 },
	{ "head-timeout", FRONT_INT(head_timeout), 10, 1, 3600 },
	{ "idle-timeout", FRONT_INT(idle_timeout), 120, 1, 86400 },
	{ "write-timeout", FRONT_INT(write_timeout), 60, 1, 86400 },
	{ "max-connections", FRONT_INT(max_conns), 0, 1, 1000000 },
	{ "max-peer-connections", FRONT_INT(max_peer_conns), 0, 1, 1000000 },
	{ "exec-memory", FRONT_SIZE(exec_memory), 1 << 30, 2, 1LL << 40 },
	{ "max-output-bytes", FRONT_SIZE(max_output), 64 << 20, 1, 1LL << 34 },
	{ "default-output-bytes", FRONT_SIZE(default_output), 16 << 20, 1,
	    1LL << 34 },
	{ "max-clients", FRONT_INT(max_clients), 256, 1, 100000 },
	{ "max-message-size", FRONT_SIZE(max_message), 1 << 20, 1024,
	    1LL << 30 },
	{ "ping-interval", FRONT_INT(ping), 30, 1, 3600 },
	{ "exited-ttl", FRONT_INT(exited_ttl), 0, 0, INT32_MAX },
	{ "max-execs-per-user", FRONT_INT(max_execs_per_user), 64, 0, 1000000 },
};
#define NNUMBERS	(sizeof(front_numbers) / sizeof(front_numbers[0]))

/* Set the option to arg, or to its default if arg is NULL. */
static void
front_set_number(struct front_config *conf, const struct front_number *n,
    const char *arg)
{
	char		*end;
	long long	 v = n->def;

	if (arg != NULL) {
		errno = 0;
		v = strtoll(arg, &end, 10);
		if (errno != 0 || *end != '\0' || end == arg ||
		    v < n->min || v > n->max)
			bad_option("--%s must be a number from %lld to %lld",
			    n->name, n->min, n->max);
	}
	if (n->size == sizeof(int))
		*(int *)((char *)conf + n->off) = (int)v;
	else
		*(size_t *)((char *)conf + n->off) = (size_t)v;
}

/* All rings together: a quarter of the machine's memory. */
static size_t
front_default_budget(void)
{
	long	pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || size <= 0)
		return ((size_t)1 << 30);
	return ((size_t)pages / 4 * (size_t)size);
}

static void
parse_options(int argc, char **argv, struct front_config *conf)
{
	enum { O_LISTEN = 256, O_RUNDIR, O_TOKEN, O_NOAUTH, O_FG, O_HELP,
	    O_VERSION, O_SOCKGRP, O_ORIGIN, O_HOST, O_NOCGROUP, O_WEBROOT,
	    O_NOWEB, O_NUMBER = 1024 /* + the index in front_numbers */ };
	static const struct option named[] = {
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "runtime-dir", required_argument, NULL, O_RUNDIR },
		{ "token-file", required_argument, NULL, O_TOKEN },
		{ "no-auth", no_argument, NULL, O_NOAUTH },
		{ "foreground", no_argument, NULL, O_FG },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{ "socket-group", required_argument, NULL, O_SOCKGRP },
		{ "allow-origin", required_argument, NULL, O_ORIGIN },
		{ "allow-host", required_argument, NULL, O_HOST },
		{ "no-cgroup", no_argument, NULL, O_NOCGROUP },
		{ "web-root", required_argument, NULL, O_WEBROOT },
		{ "no-web", no_argument, NULL, O_NOWEB },
	};
	struct option	 longopts[sizeof(named) / sizeof(named[0]) +
			    NNUMBERS + 1];
	const size_t	 nnamed = sizeof(named) / sizeof(named[0]);
	size_t		 i;
	int		 ch;

	/* Then the numbers', and the end of the list. */
	memcpy(longopts, named, sizeof(named));
	memset(longopts + nnamed, 0, sizeof(longopts) - sizeof(named));
	for (i = 0; i < NNUMBERS; i++) {
		longopts[nnamed + i].name = front_numbers[i].name;
		longopts[nnamed + i].has_arg = required_argument;
		longopts[nnamed + i].val = O_NUMBER + (int)i;
	}

	strlcpy(conf->rundir, "/run/lodge", sizeof(conf->rundir));
	strlcpy(conf->web_root, LODGE_WEBDIR, sizeof(conf->web_root));
	for (i = 0; i < NNUMBERS; i++)
		front_set_number(conf, &front_numbers[i], NULL);
	conf->buffer_budget = front_default_budget();
	while ((ch = getopt_long(argc, argv, "fhvV", longopts, NULL)) != -1) {
		switch (ch) {
		case O_LISTEN:
			if (conf->nlisten == FRONT_LISTEN_MAX)
				bad_option("too many --listen");
			strlcpy(conf->listen[conf->nlisten++], optarg,
			    sizeof(conf->listen[0]));
			break;
		case O_RUNDIR:
			if (optarg[0] != '/' || strlen(optarg) > 200)
				bad_option("--runtime-dir must be an absolute "
				    "path of at most 200 bytes");
			strlcpy(conf->rundir, optarg, sizeof(conf->rundir));
			break;
		case O_TOKEN:
			strlcpy(conf->token_file, optarg,
			    sizeof(conf->token_file));
			break;
		case O_NOAUTH:
			conf->no_auth = 1;
			break;
		case 'f':
		case O_FG:
			conf->foreground = 1;
			break;
		case 'v':
			conf->verbose++;
			break;
		case O_SOCKGRP:
			if (strlcpy(conf->socket_group, optarg,
			    sizeof(conf->socket_group)) >=
			    sizeof(conf->socket_group))
				bad_option("--socket-group: name too long");
			break;
		case O_ORIGIN:
			if (conf->norigins == FRONT_LISTEN_MAX)
				bad_option("too many --allow-origin");
			strlcpy(conf->origins[conf->norigins++], optarg,
			    sizeof(conf->origins[0]));
			break;
		case O_HOST:
			if (conf->nhosts == FRONT_LISTEN_MAX ||
			    optarg[0] == '\0' ||
			    strlen(optarg) >= sizeof(conf->hosts[0]))
				bad_option("--allow-host takes a name (no "
				    "port), at most %d times",
				    FRONT_LISTEN_MAX);
			strlcpy(conf->hosts[conf->nhosts++], optarg,
			    sizeof(conf->hosts[0]));
			break;
		case O_NOCGROUP:
			conf->no_cgroup = 1;
			break;
		case O_WEBROOT:
			if (optarg[0] == '\0' || strlcpy(conf->web_root, optarg,
			    sizeof(conf->web_root)) >= sizeof(conf->web_root))
				bad_option("--web-root: a directory of at most "
				    "%zu bytes", sizeof(conf->web_root) - 1);
			break;
		case O_NOWEB:
			conf->no_web = 1;
			break;
		case 'h':
		case O_HELP:
			usage(0);
		case 'V':
		case O_VERSION:
			printf("lodged %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			if (ch < O_NUMBER || ch >= O_NUMBER + (int)NNUMBERS)
				usage(2);
			front_set_number(conf, &front_numbers[ch - O_NUMBER],
			    optarg);
		}
	}
	if (optind != argc)
		usage(2);
	if (conf->exec_memory / 2 < conf->max_output)
		bad_option("--exec-memory must hold twice --max-output-bytes "
		    "(%zu bytes)", conf->max_output * 2);
	if (conf->nlisten == 0)
		strlcpy(conf->listen[conf->nlisten++], "127.0.0.1:5634",
		    sizeof(conf->listen[0]));
}

static int
front_raw_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct front_fd	*ffd = lws_get_opaque_user_data(wsi);

	if (ffd == NULL)
		return (0);
	if (reason == LWS_CALLBACK_RAW_CLOSE_FILE) {
		rawio_forget(wsi);
		lws_set_opaque_user_data(wsi, NULL);
	}
	switch (ffd->kind) {
	case FFD_LISTEN:
		if (reason == LWS_CALLBACK_RAW_RX_FILE)
			listener_accept(ffd->ptr);
		break;
	case FFD_CONN:
		if (reason == LWS_CALLBACK_RAW_RX_FILE)
			conn_readable(ffd->ptr);
		else if (reason == LWS_CALLBACK_RAW_WRITEABLE_FILE)
			conn_writeable(ffd->ptr);
		else if (reason == LWS_CALLBACK_RAW_CLOSE_FILE)
			conn_closed(ffd->ptr);
		break;
	case FFD_TEMPLATE:
		if (reason == LWS_CALLBACK_RAW_RX_FILE)
			spawner_readable();
		else if (reason == LWS_CALLBACK_RAW_WRITEABLE_FILE)
			spawner_writeable();
		else if (reason == LWS_CALLBACK_RAW_CLOSE_FILE)
			spawner_closed();
		break;
	}
	return (0);
}

static void
front_signal(int sig)
{
	if (front == NULL)
		return;
	if (sig == SIGHUP)
		front->reload = 1;
	else
		front->quit = 1;
	if (front->ctx != NULL)
		lws_cancel_service(front->ctx);
}

/*
 * lodged-worker lives beside lodged in a build tree, and in libexecdir
 * once installed.
 */
static void
front_find_worker(void)
{
	char	*slash;

	strlcpy(front->worker, front->self, sizeof(front->worker));
	if ((slash = strrchr(front->worker, '/')) != NULL)
		slash[1] = '\0';
	strlcat(front->worker, "lodged-worker", sizeof(front->worker));
	if (access(front->worker, X_OK) == 0)
		return;
	strlcpy(front->worker, LODGE_LIBEXECDIR "/lodged-worker",
	    sizeof(front->worker));
	if (access(front->worker, X_OK) == -1)
		fatal("%s", front->worker);
}

/* The limits every worker applies, sent with each spawn request. */
void
front_pack_limits(msgpack_packer *pk)
{
	const struct {
		const char	*key;
		int64_t		 value;
	} limits[] = {
		{ "maxClients", front->conf.max_clients },
		{ "messageMax", (int64_t)front->conf.max_message },
		{ "ping", front->conf.ping },
		{ "exitedTtl", front->conf.exited_ttl },
	};
	size_t	i, n = sizeof(limits) / sizeof(limits[0]);

	mpack_str(pk, "limits");
	msgpack_pack_map(pk, n);
	for (i = 0; i < n; i++)
		mpack_kv_int(pk, limits[i].key, limits[i].value);
}

/* Who a worker or a command runs as, sent with spawn and exec. */
void
front_pack_user(msgpack_packer *pk, const struct passwd *pw)
{
	mpack_kv_int(pk, "uid", pw->pw_uid);
	mpack_kv_int(pk, "gid", pw->pw_gid);
	mpack_kv_str(pk, "user", pw->pw_name);
	mpack_kv_str(pk, "home", pw->pw_dir);
	mpack_kv_str(pk, "shell", pw->pw_shell != NULL &&
	    pw->pw_shell[0] != '\0' ? pw->pw_shell : "/bin/sh");
}

/*
 * Connections held by the front: by default 1024, or half the descriptors
 * it may open when that is fewer; a peer's share a quarter of that.
 */
static void
front_conn_limits(struct front_config *conf)
{
	struct rlimit	rl;
	int		half = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < (rlim_t)half)
		half = (int)(rl.rlim_cur / 2);
	if (conf->max_conns == 0)
		conf->max_conns = half > 16 ? half : 16;
	if (conf->max_peer_conns == 0)
		conf->max_peer_conns = conf->max_conns / 4 > 1 ?
		    conf->max_conns / 4 : 1;
}

struct lws *
front_adopt(int fd, struct front_fd *ffd)
{
	lws_sock_file_fd_type	 u;
	struct lws		*wsi;

	u.filefd = fd;
	wsi = lws_adopt_descriptor_vhost(front->vh, LWS_ADOPT_RAW_FILE_DESC,
	    u, "lodge-front", NULL);
	if (wsi != NULL)
		lws_set_opaque_user_data(wsi, ffd);
	return (wsi);
}

int
main(int argc, char **argv)
{
	struct lws_context_creation_info	 info;
	uv_loop_t				 front_loop;
	void					*foreign_loops[1];
	struct listener				*l;
	char					 path[600];
	int					 i, activated;
	ssize_t					 n;

	setproctitle_init(argc, argv, environ);
	if ((front = calloc(1, sizeof(*front))) == NULL)
		err(1, NULL);
	/* The limit lodged started with, for a template started later. */
	nofile_save();
	parse_options(argc, argv, &front->conf);
	log_init("lodged", front->conf.foreground, front->conf.verbose);

	if ((n = readlink("/proc/self/exe", front->self,
	    sizeof(front->self) - 1)) == -1)
		fatal("readlink /proc/self/exe");
	front->self[n] = '\0';
	front_find_worker();

	for (i = 0; i < front->conf.nlisten; i++) {
		if (front->conf.no_auth &&
		    !listener_is_loopback(front->conf.listen[i]))
			fatalx("--no-auth is refused: %s is not a loopback "
			    "address", front->conf.listen[i]);
	}
	umask(022);
	/* Before daemon(): a refused directory is said where it was asked. */
	if (rundir_open() == -1 || auth_init() == -1)
		exit(1);
	if (!front->conf.foreground && daemon(0, 0) == -1)
		fatal("daemon");

	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, front_signal);
	signal(SIGINT, front_signal);
	signal(SIGHUP, SIG_IGN);

	/* The template starts before any socket or lws state exists. */
	if (spawner_start() == -1)
		fatalx("cannot start the worker template");

	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	info.protocols = front_protocols;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	/* A direct lookup table (see nofile.h) sized for the sessions. */
	nofile_set((rlim_t)front->conf.max_sessions * 2 + 4096);
	front_conn_limits(&front->conf);
	/*
	 * ... but lws's table covers the clients' descriptors only, as lws
	 * walks all of it at each descriptor it closes: the workers' links,
	 * not lws's (link.c), are numbered above it, and the limit is
	 * raised past them once the context has its table.
	 */
	front->link_fd_base = front->conf.max_conns + 256;	/* root's, the rest */
	nofile_set((rlim_t)front->link_fd_base);
	info.vhost_name = "default";
	/*
	 * An epoll loop (libuv's, lws's event lib): lws's own poll() walks
	 * every descriptor on each wakeup, and the front holds one for each
	 * session.  The loop is ours (foreign), so it returns to check quit.
	 */
	if (uv_loop_init(&front_loop) != 0)
		fatalx("cannot create the event loop");
	foreign_loops[0] = &front_loop;
	front->loop = &front_loop;
	info.foreign_loops = foreign_loops;
	info.options |= LWS_SERVER_OPTION_LIBUV;
	info.pcontext = &front->ctx;	/* NULL once destroyed for good */
	log_lws_init();
	if ((front->ctx = lws_create_context(&info)) == NULL)
		fatalx("cannot create the event loop");
	front->vh = lws_get_vhost_by_name(front->ctx, "default");
	nofile_set((rlim_t)front->link_fd_base +
	    (rlim_t)front->conf.max_sessions * 2 + 4096);
	/* lws sets SIGPIPE to ignored; ours are set again for clarity. */
	signal(SIGTERM, front_signal);
	signal(SIGINT, front_signal);
	signal(SIGHUP, front_signal);

	/* Socket activation replaces --listen. */
	activated = notify_listeners();
	for (i = 0; !activated && i < front->conf.nlisten; i++) {
		if (listener_open(front->conf.listen[i], &l) == -1)
			exit(1);
		if ((l->wsi = front_adopt(l->fd, &l->ffd)) == NULL)
			fatalx("cannot adopt listener");
		log_info("listening on %s", l->name);
	}
	snprintf(path, sizeof(path), "%s/lodged.sock", front->conf.rundir);
	if (listener_open_unix(path, &l) == -1)
		exit(1);
	if ((l->wsi = front_adopt(l->fd, &l->ffd)) == NULL)
		fatalx("cannot adopt listener");
	log_info("listening on %s", path);
	/*
	 * Listeners first: finding the sessions again happens in the loop,
	 * bounded, so no worker can keep the front from serving.
	 */
	discover_start();
	setproctitle("front");
	notify_ready();

	while (!front->quit) {
		(void)uv_run(&front_loop, UV_RUN_ONCE);
		if (front->reload) {
			front->reload = 0;
			auth_reload();
		}
	}
	notify_stopping();
	log_info("exiting; sessions keep running");
	(void)unlink(path);
	/*
	 * On a loop of ours, lws closes its handles through the loop: run it
	 * until they are closed, then destroy again to free what is left.
	 */
	/* The workers' links are the loop's own (link.c): closed first. */
	for (i = 0; i < 1000 && registry_close_links() > 0; i++)
		(void)uv_run(&front_loop, UV_RUN_NOWAIT);
	lws_context_destroy(front->ctx);
	for (i = 0; i < 1000 && uv_run(&front_loop, UV_RUN_NOWAIT) != 0; i++)
		;
	if (front->ctx != NULL)
		lws_context_destroy(front->ctx);
	for (i = 0; i < 1000 && uv_run(&front_loop, UV_RUN_NOWAIT) != 0; i++)
		;
	(void)uv_loop_close(&front_loop);
	listener_free_all();
	free(front);
	return (0);
}
