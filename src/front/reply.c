/*
 * reply.c: an HTTP reply of the front, made where a request is decided
 * (api.c, web.c, exec.c, registry.c) and sent by conn.c, which alone
 * writes to a connection.
 */
#include <sys/types.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "utf8.h"

/*
 * A reply's head; alone, a reply to HEAD or a 304: the length of a body
 * it does not send.
 */
struct reply *
reply_head(struct reply *r, int status, const char *ctype, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->kind = REPLY_SEND;
	r->status = status;
	r->ctype = ctype;
	r->len = len;
	return (r);
}

/* body is the caller's, and must stay until the reply is handed on. */
struct reply *
reply_body(struct reply *r, int status, const char *ctype, const char *body,
    size_t len)
{
	reply_head(r, status, ctype, len)->body = body != NULL ? body : "";
	return (r);
}

struct reply *
reply_empty(struct reply *r, int status)
{
	return (reply_body(r, status, NULL, "", 0));
}

/* j is taken; a reply that cannot be made closes the connection. */
struct reply *
reply_json(struct reply *r, int status, json_t *j)
{
	char	*s = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (s == NULL) {
		memset(r, 0, sizeof(*r));	/* REPLY_CLOSE */
		return (r);
	}
	reply_body(r, status, "application/json", s, strlen(s))->owned = s;
	return (r);
}

/* The protocol's error object. */
struct reply *
reply_error(struct reply *r, int status, const char *code, const char *fmt,
    ...)
{
	char	 raw[512], msg[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* A message may quote a client's bytes: JSON strings are UTF-8. */
	utf8_copy(msg, sizeof(msg), raw, strlen(raw));
	return (reply_json(r, status, json_pack("{s:{s:s,s:s}}", "error",
	    "code", code, "message", msg)));
}

/* The session object as the front knows it (see registry_take). */
struct reply *
reply_session(struct reply *r, struct session *s)
{
	if (s->json == NULL)
		return (reply_error(r, 500, "internal", "no session object"));
	return (reply_body(r, 200, "application/json", s->json, s->json_len));
}

/*
 * A body of len bytes that src produces while the socket takes them;
 * src belongs to the reply, then to the connection.
 */
struct reply *
reply_stream(struct reply *r, int status, const char *ctype, size_t len,
    const struct conn_source *src)
{
	reply_head(r, status, ctype, len)->src = *src;
	return (r);
}
