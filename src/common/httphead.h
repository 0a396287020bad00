/*
 * httphead.h: HTTP/1.1 request head parsing and API routing.
 *
 * Pure code: no sockets, no allocation.  The parser reads a request head
 * (request line and headers up to the blank line) out of a caller's buffer
 * and points into it; the router maps a method and path onto an API call.
 * Everything that comes from the network is bounded here.
 */
#ifndef HTTPHEAD_H
#define HTTPHEAD_H

#include <stddef.h>
#include <stdint.h>

#define HTTPHEAD_MAX_HEADERS	64

struct httphead_field {
	const char	*name;		/* NUL-terminated, as sent */
	const char	*value;		/* NUL-terminated, trimmed */
};

struct httphead {
	const char	*method;	/* "GET", "POST", ... */
	const char	*target;	/* request target as sent: path?query */
	char		 path[1024];	/* percent-decoded path, no query */
	const char	*query;		/* raw query after '?', or "" */
	int		 minor;		/* HTTP/1.minor */
	size_t		 nfields;
	struct httphead_field fields[HTTPHEAD_MAX_HEADERS];

	int64_t		 content_length; /* -1 if absent, else < 2^62 */
	int		 chunked;	/* Transfer-Encoding: chunked */
	int		 keep_alive;	/* per version and Connection: */
	int		 upgrade;	/* Upgrade: websocket, Connection: upgrade */
};

enum httphead_result {
	HTTPHEAD_OK = 0,	/* complete head parsed */
	HTTPHEAD_PARTIAL,	/* no blank line yet: read more */
	HTTPHEAD_BAD,		/* malformed: 400 */
	HTTPHEAD_TOO_LARGE,	/* head longer than the limit: 431 */
	HTTPHEAD_BAD_VERSION,	/* not HTTP/1.x: 505 */
};

/*
 * Parse the head at the start of buf (len bytes, of which at most limit
 * may be head).  The buffer is modified in place (NULs written) only when
 * the result is HTTPHEAD_OK; *head_len then gets the head's length including
 * the blank line (bytes after it, such as a body or a pipelined request, are
 * not looked at).  On failure *why names the problem in a short phrase; on
 * success it is set to NULL.  head_len and why may be NULL.  The struct
 * httphead is filled only as far as is useful on HTTPHEAD_OK; on any other
 * result its contents are unspecified.
 *
 * Strict: CRLF only, origin-form targets only, no obs-fold, no NUL, at most
 * HTTPHEAD_MAX_HEADERS fields.  A prefix that is already malformed is BAD
 * (or BAD_VERSION once the request line is complete) without waiting for the
 * rest.  Transfer-Encoding must be exactly one "chunked" (and is refused in
 * HTTP/1.0 and alongside Content-Length); Upgrade is ignored in HTTP/1.0.
 * Host and Authorization may each appear once.
 * The path is percent-decoded and must hold no NUL, dot or empty segment.
 */
enum httphead_result httphead_parse(char *buf, size_t len, size_t limit,
		    struct httphead *, size_t *head_len, const char **why);

/* Value of header name (case-insensitive), or NULL. */
const char	*httphead_field(const struct httphead *, const char *name);

/*
 * Find key in a raw query string (k=v&k2=v2) and percent-decode its value
 * into out (NUL-terminated; '+' is a space).  Keys are compared exactly
 * after the same decoding; the first occurrence wins; a key without '='
 * has the empty value.  Returns the value's length, -1 when absent, -2 when
 * the value is malformed (bad escape, %00) or does not fit.  out is "" on
 * failure.
 */
int		 httphead_query(const char *query, const char *key, char *out,
		    size_t outlen);

/*
 * Write a parsed head back out (CRLF, "Name: value"), without what carries
 * the token: every Authorization field and every access_token query
 * parameter.  Returns the length written to out (NUL-terminated), or 0 when
 * it does not fit; the length of the head as sent, plus two bytes a field,
 * always does.
 */
size_t		 httphead_without_token(const struct httphead *, char *out,
		    size_t outlen);

/*
 * Percent-decode srclen bytes of src into dst ('+' is kept as is).  Returns
 * the decoded length; -1 on bad escapes, NUL bytes (raw or %00) or no room,
 * with dst set to "" when dstlen allows.
 */
int		 httphead_unescape(const char *src, size_t srclen, char *dst,
		    size_t dstlen);

/*
 * The query of an attach or a log call, the same at the front and at a
 * worker: since (an offset), cols and rows (an attach's PTY size), readOnly
 * and pace, which a read-only client may not ask for.  Other parameters are
 * ignored; each of these may be given once.
 */
struct httphead_attach {
	int		 since_set;
	uint64_t	 since;		/* at most HTTPHEAD_SINCE_MAX */
	int		 cols;		/* 0 when not given */
	int		 rows;
	int		 readonly;
	int		 pace;		/* hold the process back for it */
	unsigned	 seen;
};

#define HTTPHEAD_SINCE_MAX	INT64_MAX

/* Start q empty. */
void		 httphead_attach_init(struct httphead_attach *q);
/*
 * Take one decoded parameter (key and value NUL-terminated; value NULL for
 * a bare key).  0, or -1 with *why naming the parameter and its rule.
 */
int		 httphead_attach_param(struct httphead_attach *q,
		    const char *key, const char *value, const char **why);
/* Every parameter of a raw query string, decoded, through the above. */
int		 httphead_attach_query(const char *query,
		    struct httphead_attach *q, const char **why);

enum httphead_route {
	ROUTE_NONE = 0,		/* no such path: 404 */
	ROUTE_BAD_METHOD,	/* path exists, method does not: 405 */
	ROUTE_HEALTH,		/* GET /v1/health */
	ROUTE_EXEC,		/* POST /v1/exec */
	ROUTE_EXEC_STREAM,	/* GET /v1/exec/stream */
	ROUTE_SESSIONS_LIST,	/* GET /v1/sessions */
	ROUTE_SESSIONS_CREATE,	/* POST /v1/sessions */
	ROUTE_SESSION_GET,	/* GET /v1/sessions/{ref} */
	ROUTE_SESSION_DELETE,	/* DELETE /v1/sessions/{ref} */
	ROUTE_SESSION_SIGNAL,	/* POST /v1/sessions/{ref}/signal */
	ROUTE_SESSION_INPUT,	/* POST /v1/sessions/{ref}/input */
	ROUTE_SESSION_RESIZE,	/* POST /v1/sessions/{ref}/resize */
	ROUTE_SESSION_LOG,	/* GET /v1/sessions/{ref}/log */
	ROUTE_SESSION_ATTACH,	/* GET /v1/sessions/{ref}/attach */
	ROUTE_SESSION_WAIT,	/* GET /v1/sessions/{ref}/wait */
	ROUTE_METRICS,		/* GET /metrics */
	ROUTE_COUNT
};

#define HTTPHEAD_REF_MAX	128

/*
 * Route a method (case-sensitive; HEAD is not special) and a decoded path
 * (exact match; trailing slashes are not accepted).  A known path with
 * another method is ROUTE_BAD_METHOD; anything else is ROUTE_NONE.  For
 * session routes {ref} is the single non-empty path segment after
 * /v1/sessions/, so it never holds a '/'; it is copied to ref (refmax bytes
 * including the NUL).  A ref that does not fit leaves ref "" and still
 * routes: the caller answers 400 for an empty ref.  Ref characters are not
 * validated here; the caller does that.  ref is "" for other routes.
 */
enum httphead_route httphead_route(const char *method, const char *path,
		    char *ref, size_t refmax);

#endif
