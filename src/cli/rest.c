/*
 * rest.c: one blocking HTTP/1.1 request to lodged and its reply.
 *
 * One connection per call, closed after the reply.  Replies carry
 * Content-Length (or end at EOF); chunked replies are refused.  A reply's
 * head is bounded; its body is either kept (bounded too) or, for the log,
 * written through to a file descriptor as it arrives, so a large ring never
 * sits in our memory.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

#define REST_HEAD_MAX	(64 * 1024)
#define REST_BODY_MAX	(64 * 1024 * 1024)

struct rest_conn {
	int		 fd;
	char		 buf[16384];
	size_t		 len;		/* bytes in buf */
	size_t		 off;		/* consumed */
};

static int
rest_write_all(int fd, const char *p, size_t len, int sock)
{
	ssize_t	n;

	while (len > 0) {
		if (sock)
			n = send(fd, p, len, MSG_NOSIGNAL);
		else
			n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return (-1);
		}
		p += n;
		len -= (size_t)n;
	}
	return (0);
}

/* More bytes into the buffer; 0 at EOF, -1 on error. */
static ssize_t
rest_fill(struct rest_conn *c)
{
	ssize_t	n;

	if (c->off > 0) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->len == sizeof(c->buf))
		return (-1);
	do {
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
	} while (n == -1 && errno == EINTR);
	if (n > 0)
		c->len += (size_t)n;
	return (n);
}

static int
rest_parse_u64(const char *v, uint64_t *out)
{
	char			*end;
	unsigned long long	 n;

	if (!isdigit((unsigned char)*v))
		return (-1);
	errno = 0;
	n = strtoull(v, &end, 10);
	while (*end == ' ' || *end == '\t')
		end++;
	if (errno != 0 || *end != '\0')
		return (-1);
	*out = n;
	return (0);
}

/* Status line and the headers we care about; -1 if malformed. */
static int
rest_parse_head(char *head, struct rest_reply *r, int64_t *clen,
    int *chunked)
{
	char		*line, *next, *v;
	uint64_t	 n;

	*clen = -1;
	*chunked = 0;
	if ((next = strstr(head, "\r\n")) == NULL)
		return (-1);
	*next = '\0';
	next += 2;
	if (strncmp(head, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)
	    head[7]) || head[8] != ' ' || !isdigit((unsigned char)head[9]) ||
	    !isdigit((unsigned char)head[10]) ||
	    !isdigit((unsigned char)head[11]))
		return (-1);
	r->status = (head[9] - '0') * 100 + (head[10] - '0') * 10 +
	    (head[11] - '0');
	for (line = next; *line != '\0'; line = next) {
		if ((next = strstr(line, "\r\n")) == NULL)
			return (-1);
		*next = '\0';
		next += 2;
		if ((v = strchr(line, ':')) == NULL)
			return (-1);
		*v++ = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		if (strcasecmp(line, "Content-Length") == 0) {
			if (rest_parse_u64(v, &n) == -1 || n > INT64_MAX)
				return (-1);
			*clen = (int64_t)n;
		} else if (strcasecmp(line, "Transfer-Encoding") == 0)
			*chunked = 1;
		else if (strcasecmp(line, "Lodge-Log-Start") == 0) {
			if (rest_parse_u64(v, &r->log_start) == -1)
				return (-1);
			r->have_range |= 1;
		} else if (strcasecmp(line, "Lodge-Log-End") == 0) {
			if (rest_parse_u64(v, &r->log_end) == -1)
				return (-1);
			r->have_range |= 2;
		}
	}
	r->have_range = r->have_range == 3;
	return (0);
}

static int
rest_send_request(const struct endpoint *ep, int fd, const char *method,
    const char *path, const char *body, size_t len)
{
	char	 head[2048], clen[80] = "";
	int	 n;

	if (body != NULL)
		snprintf(clen, sizeof(clen), "Content-Type: application/json"
		    "\r\nContent-Length: %zu\r\n", len);
	else if (strcmp(method, "GET") != 0)
		strlcpy(clen, "Content-Length: 0\r\n", sizeof(clen));
	n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: %s\r\n"
	    "User-Agent: lodge/%s\r\nConnection: close\r\n%s%s%s%s\r\n",
	    method, path, ep->unix_path[0] != '\0' ? "localhost" :
	    endpoint_name(ep), PACKAGE_VERSION, ep->token[0] != '\0' ?
	    "Authorization: Bearer " : "", ep->token, ep->token[0] != '\0' ?
	    "\r\n" : "", clen);
	if (n < 0 || (size_t)n >= sizeof(head)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	if (rest_write_all(fd, head, (size_t)n, 1) == -1)
		return (-1);
	if (body != NULL && rest_write_all(fd, body, len, 1) == -1)
		return (-1);
	return (0);
}

/* The body: kept in r, or written to sink when the reply is 200. */
static int
rest_read_body(struct rest_conn *c, struct rest_reply *r, int64_t clen,
    int sink)
{
	size_t	 want, got = 0, cap = 0, n;
	ssize_t	 rd;
	char	*nb;

	if (r->status == 204 || r->status == 304 || r->status < 200)
		clen = 0;
	if (r->status != 200)
		sink = -1;
	if (clen > REST_BODY_MAX && sink == -1) {
		report_errorx("the reply from lodged is too large");
		return (-1);
	}
	for (;;) {
		n = c->len - c->off;
		if (clen >= 0 && (uint64_t)clen - got < n)
			n = (size_t)((uint64_t)clen - got);
		if (n > 0) {
			if (sink != -1) {
				if (rest_write_all(sink, c->buf + c->off, n,
				    0) == -1) {
					if (errno != EPIPE)
						report_error("write");
					return (-1);
				}
			} else {
				want = r->len + n + 1;
				if (want > REST_BODY_MAX) {
					report_errorx("the reply from lodged "
					    "is too large");
					return (-1);
				}
				if (want > cap) {
					cap = want < 4096 ? 4096 : want * 2;
					if ((nb = realloc(r->body, cap)) ==
					    NULL) {
						report_error("realloc");
						return (-1);
					}
					r->body = nb;
				}
				memcpy(r->body + r->len, c->buf + c->off, n);
				r->len += n;
				r->body[r->len] = '\0';
			}
			c->off += n;
			got += n;
		}
		if (clen >= 0 && got == (uint64_t)clen)
			break;
		if ((rd = rest_fill(c)) == 0) {
			if (clen >= 0) {
				report_errorx("lodged closed the connection "
				    "in the middle of a reply");
				return (-1);
			}
			break;
		}
		if (rd == -1) {
			report_error("read from lodged");
			return (-1);
		}
	}
	if (sink == -1 && r->body == NULL) {
		if ((r->body = strdup("")) == NULL) {
			report_error("strdup");
			return (-1);
		}
	}
	return (0);
}

/*
 * Make one request.  body (may be NULL) is sent as JSON.  A 200 reply's body
 * goes to sink when sink is not -1.  Returns REST_OK with r filled (any
 * status), REST_NOCONNECT when the endpoint did not answer (errno set,
 * nothing reported), or REST_FAIL (reported).
 */
int
rest_call(const struct endpoint *ep, const char *method, const char *path,
    json_t *body, int sink, struct rest_reply *r)
{
	struct rest_conn	 conn, *c = &conn;
	char			*text = NULL, *end;
	int64_t			 clen;
	int			 chunked, saved, rc = REST_FAIL;
	ssize_t			 rd;

	memset(r, 0, sizeof(*r));
	c->len = c->off = 0;
	if ((c->fd = endpoint_connect(ep)) == -1)
		return (REST_NOCONNECT);
	if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL) {
		report_errorx("cannot encode the request");
		goto out;
	}
	if (rest_send_request(ep, c->fd, method, path, text,
	    text != NULL ? strlen(text) : 0) == -1) {
		if (errno == EPIPE || errno == ECONNRESET) {
			/* A front that closes at once did not answer. */
			rc = REST_NOCONNECT;
			goto out;
		}
		report_error("write to lodged");
		goto out;
	}
	for (;;) {
		c->buf[c->len] = '\0';
		if ((end = memmem(c->buf, c->len, "\r\n\r\n", 4)) != NULL) {
			/* The body may hold NULs; the head may not. */
			if (memchr(c->buf, '\0', (size_t)(end - c->buf)) !=
			    NULL) {
				report_errorx("malformed reply from lodged");
				goto out;
			}
			break;
		}
		if (c->len >= sizeof(c->buf) - 1 || c->len > REST_HEAD_MAX) {
			report_errorx("the reply head from lodged is too "
			    "large");
			goto out;
		}
		if ((rd = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 -
		    c->len, 0)) == -1) {
			if (errno == EINTR)
				continue;
			if (errno == ECONNRESET && c->len == 0) {
				rc = REST_NOCONNECT;
				goto out;
			}
			report_error("read from lodged");
			goto out;
		}
		if (rd == 0) {
			if (c->len == 0) {
				errno = ECONNRESET;
				rc = REST_NOCONNECT;
				goto out;
			}
			report_errorx("lodged closed the connection without "
			    "a complete reply");
			goto out;
		}
		c->len += (size_t)rd;
	}
	end[2] = '\0';
	c->off = (size_t)(end + 4 - c->buf);
	if (rest_parse_head(c->buf, r, &clen, &chunked) == -1) {
		report_errorx("malformed reply from lodged");
		goto out;
	}
	if (chunked) {
		report_errorx("lodged sent a chunked reply, which lodge "
		    "does not read");
		goto out;
	}
	if (rest_read_body(c, r, clen, sink) == -1)
		goto out;
	rc = REST_OK;
out:
	saved = errno;
	if (rc != REST_OK)
		rest_reply_free(r);
	free(text);
	close(c->fd);
	errno = saved;
	return (rc);
}

void
rest_reply_free(struct rest_reply *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

/* The reply's body as JSON, or NULL (reported). */
json_t *
rest_json(const struct rest_reply *r)
{
	json_error_t	 err;
	json_t		*j;

	if (r->body == NULL || (j = json_loadb(r->body, r->len, 0,
	    &err)) == NULL) {
		report_errorx("lodged sent a reply that is not JSON");
		return (NULL);
	}
	return (j);
}

/* Say what a non-2xx reply means, in the server's words. */
void
rest_report(const struct rest_reply *r)
{
	json_t		*j = NULL;
	const char	*msg = NULL;

	if (r->body != NULL)
		j = json_loadb(r->body, r->len, 0, NULL);
	if (j != NULL)
		msg = json_string_value(json_object_get(json_object_get(j,
		    "error"), "message"));
	if (r->status == 401)
		report_errorx("%s (give --token or LODGE_TOKEN, or use the "
		    "Unix socket)", msg != NULL ? msg : "unauthorized");
	else if (msg != NULL)
		report_errorx("%s", msg);
	else
		report_errorx("lodged answered HTTP %d", r->status);
	json_decref(j);
}

/*
 * A call (as rest_call's) whose reply must have status expect: 0 with r
 * filled, or -1 with the failure reported (r then needs no freeing).
 */
int
rest_expect(const struct endpoint *ep, const char *method, const char *path,
    json_t *body, int sink, int expect, struct rest_reply *r)
{
	int	rc;

	if ((rc = rest_call(ep, method, path, body, sink, r)) == REST_NOCONNECT)
		rest_report_noconnect(ep);
	if (rc != REST_OK)
		return (-1);
	if (r->status != expect) {
		rest_report(r);
		rest_reply_free(r);
		return (-1);
	}
	return (0);
}

void
rest_report_noconnect(const struct endpoint *ep)
{
	report_error("cannot connect to lodged at %s", endpoint_name(ep));
}

/* Percent-encode a path segment. */
char *
rest_escape(const char *s)
{
	static const char	 hex[] = "0123456789ABCDEF";
	char			*out, *p;

	if ((out = malloc(strlen(s) * 3 + 1)) == NULL)
		return (NULL);
	for (p = out; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || ch == '-' || ch == '.' || ch == '_' ||
		    ch == '~')
			*p++ = (char)ch;
		else {
			*p++ = '%';
			*p++ = hex[ch >> 4];
			*p++ = hex[ch & 15];
		}
	}
	*p = '\0';
	return (out);
}
