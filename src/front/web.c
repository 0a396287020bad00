/*
 * web.c: the browser terminal's static files, on the TCP listeners under
 * /ui/ (and / sends the browser there), read from --web-root.
 *
 * Only GET and HEAD of regular files below the root: no directory
 * listing, no path that leaves the root (dot segments are refused by the
 * request parser, symbolic links out of the root and magic links by the
 * kernel's RESOLVE_BENEATH), no file larger than WEB_FILE_MAX.  The files
 * themselves are public and need no token; every call the page makes does.
 * Each reply carries a Content-Security-Policy that allows no inline
 * script and no framing, and a validator (ETag, Last-Modified) so that a
 * reload costs a 304.  A root that is missing is a 404 page, not a failure
 * at start: the daemon runs without its page.
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "front.h"
#include "log.h"

#define WEB_PREFIX	"/ui/"
#define WEB_INDEX	"index.html"
#define WEB_FILE_MAX	(16 * 1024 * 1024)

/*
 * Inline styles are allowed: the terminal's DOM renderer sets its colours
 * in a style element it writes.  Scripts come only from the page's files.
 */
#define WEB_FIELDS \
	"Content-Security-Policy: default-src 'none'; script-src 'self'; " \
	"style-src 'self' 'unsafe-inline'; img-src 'self' data:; " \
	"connect-src 'self'; font-src 'self'; base-uri 'none'; " \
	"form-action 'none'; frame-ancestors 'none'\r\n" \
	"X-Content-Type-Options: nosniff\r\n" \
	"Referrer-Policy: no-referrer\r\n" \
	"X-Frame-Options: DENY\r\n" \
	"Cache-Control: no-cache\r\n"

static const struct {
	const char	*ext;
	const char	*type;
} web_types[] = {
	{ ".html", "text/html; charset=utf-8" },
	{ ".js", "text/javascript; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" },
	{ ".json", "application/json" },
	{ ".map", "application/json" },
	{ ".png", "image/png" },
	{ ".svg", "image/svg+xml" },
	{ ".ico", "image/x-icon" },
	{ ".txt", "text/plain; charset=utf-8" },
	{ ".woff2", "font/woff2" },
};

static const char *
web_type(const char *path)
{
	size_t	i, n = strlen(path), e;

	for (i = 0; i < sizeof(web_types) / sizeof(web_types[0]); i++) {
		e = strlen(web_types[i].ext);
		if (n > e && strcmp(path + n - e, web_types[i].ext) == 0)
			return (web_types[i].type);
	}
	return ("application/octet-stream");
}

/* A reply with the page's header fields; body NULL sends only the head. */
static void
web_reply(struct reply *r, int status, const char *ctype, const char *fields,
    char *body, size_t len)
{
	if (body != NULL)
		reply_body(r, status, ctype, body, len)->owned = body;
	else
		reply_head(r, status, ctype, len);
	strlcpy(r->fields, fields, sizeof(r->fields));
}

/* A small HTML page for a 404: it needs no style and no script. */
static void
web_404(struct reply *r, const char *title, const char *text, int head_only)
{
	char	*body;
	int	 n;

	if ((n = asprintf(&body, "<!DOCTYPE html>\n<html><head><meta "
	    "charset=\"utf-8\"><title>%s</title></head>\n<body><h1>%s</h1>\n"
	    "<p>%s</p></body></html>\n", title, title, text)) == -1) {
		reply_error(r, 500, "internal", "out of memory");
		return;
	}
	if (head_only) {
		free(body);
		body = NULL;
	}
	web_reply(r, 404, "text/html; charset=utf-8", WEB_FIELDS, body,
	    (size_t)n);
}

/* The path below the root, or NULL when it names no file. */
static const char *
web_relative(const char *path)
{
	const char	*rel = path + strlen(WEB_PREFIX) - 1, *p;

	while (*rel == '/')
		rel++;
	if (*rel == '\0')
		return (WEB_INDEX);
	if (rel[strlen(rel) - 1] == '/')
		return (NULL);		/* a directory: nothing is listed */
	/* The parser refuses dot segments; never rely on one check alone. */
	for (p = rel; p != NULL; p = strchr(p, '/')) {
		if (*p == '/')
			p++;
		if (p[0] == '.' && (p[1] == '/' || p[1] == '\0' ||
		    (p[1] == '.' && (p[2] == '/' || p[2] == '\0'))))
			return (NULL);
	}
	return (rel);
}

/* Open rel below the root, never outside it; -1 and errno. */
static int
web_open(int root, const char *rel)
{
	struct open_how	how;

	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
	return ((int)syscall(SYS_openat2, root, rel, &how, sizeof(how)));
}

/* Read the whole of a regular file of size bytes; NULL on failure. */
static char *
web_read(int fd, size_t size)
{
	char	*buf;
	size_t	 got = 0;
	ssize_t	 n;

	if ((buf = malloc(size + 1)) == NULL)
		return (NULL);
	while (got < size) {
		n = read(fd, buf + got, size - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return (NULL);
		}
		got += (size_t)n;
	}
	return (buf);
}

static void
web_file(struct conn *c, const char *rel, int head_only, struct reply *r)
{
	struct stat	 st;
	struct tm	 tm;
	const char	*inm;
	char		 etag[96], date[64], fields[sizeof(WEB_FIELDS) + 256];
	char		*body = NULL;
	int		 root, fd;

	if ((root = open(front->conf.web_root, O_PATH | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		web_404(r, "No web terminal here", "lodged has no page to "
		    "serve: its web root (--web-root) is missing.", head_only);
		return;
	}
	fd = web_open(root, rel);
	close(root);
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		if (fd == -1 && errno != ENOENT && errno != ENOTDIR &&
		    errno != EXDEV && errno != ELOOP)
			log_warn("web root: %s", rel);
		if (fd != -1)
			close(fd);
		web_404(r, "Not found", "No such file.", head_only);
		return;
	}
	if (st.st_size > WEB_FILE_MAX) {
		close(fd);
		log_warnx("web root: %s is larger than %d bytes", rel,
		    WEB_FILE_MAX);
		web_404(r, "Not found", "No such file.", head_only);
		return;
	}
	snprintf(etag, sizeof(etag), "\"%llx-%lx-%llx\"",
	    (unsigned long long)st.st_mtim.tv_sec,
	    (unsigned long)st.st_mtim.tv_nsec,
	    (unsigned long long)st.st_size);
	gmtime_r(&st.st_mtim.tv_sec, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	snprintf(fields, sizeof(fields), "%sETag: %s\r\nLast-Modified: %s\r\n",
	    WEB_FIELDS, etag, date);
	inm = httphead_field(&c->h, "If-None-Match");
	if (inm != NULL && strcmp(inm, etag) == 0) {
		close(fd);
		web_reply(r, 304, NULL, fields, NULL, (size_t)st.st_size);
		return;
	}
	if (!head_only && (body = web_read(fd, (size_t)st.st_size)) == NULL) {
		close(fd);
		log_warn("web root: %s", rel);
		reply_error(r, 500, "internal", "cannot read the file");
		return;
	}
	close(fd);
	web_reply(r, 200, web_type(rel), fields, body, (size_t)st.st_size);
}

/*
 * 1 when the request is for the page (and is answered), 0 when it is an
 * API call.  The Unix socket has no page, and --no-web none anywhere.
 */
int
web_request(struct conn *c, struct reply *r)
{
	const char	*path = c->h.path, *rel;
	int		 head_only;

	if (front->conf.no_web || c->l->is_unix)
		return (0);
	if (strcmp(path, "/") != 0 && strcmp(path, "/ui") != 0 &&
	    strncmp(path, WEB_PREFIX, strlen(WEB_PREFIX)) != 0)
		return (0);
	head_only = strcmp(c->h.method, "HEAD") == 0;
	if (strcmp(c->h.method, "GET") != 0 && !head_only)
		reply_error(r, 405, "method_not_allowed", "%s is not allowed "
		    "on %s", c->h.method, path);
	else if (strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0)
		web_reply(r, 302, NULL, WEB_FIELDS "Location: " WEB_PREFIX
		    "\r\n", NULL, 0);
	else if ((rel = web_relative(path)) == NULL)
		web_404(r, "Not found", "No such file.", head_only);
	else
		web_file(c, rel, head_only, r);
	return (1);
}
