/*
 * httphead.c: HTTP/1.x request head parsing, percent-decoding and API
 * routing.
 *
 * This file owns everything between the bytes read off a socket and the
 * route a request is dispatched to: the request line, the header fields,
 * message framing (Content-Length, Transfer-Encoding), connection
 * persistence and upgrade, the decoded path and query lookups.  It is
 * deliberately strict: anything ambiguous is rejected rather than guessed
 * at, because a lenient parser in front of other parsers invites request
 * smuggling.  No allocation, no locale, no mutable globals.
 */
#include <sys/types.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "httphead.h"
#include "spawnreq.h"	/* SPAWNREQ_SIZE_MAX, the attach's cols and rows */

#define HTTPHEAD_METHOD_MAX	15
#define HTTPHEAD_CL_MAX		((int64_t)1 << 62)

/* RFC 9110 tchar: the characters of a method and a field name. */
static int
httphead_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	    (c >= 'a' && c <= 'z'))
		return (1);
	return (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* VCHAR: visible ASCII, what a request target may hold raw. */
static int
httphead_vchar(unsigned char c)
{
	return (c >= 0x21 && c <= 0x7e);
}

/* Where the pieces of a head lie in the buffer, before anything is written. */
struct httphead_span {
	size_t	 off;
	size_t	 len;
};

struct httphead_scan {
	struct httphead_span	 method;
	struct httphead_span	 target;
	struct httphead_span	 version;
	size_t			 nfields;
	struct httphead_span	 name[HTTPHEAD_MAX_HEADERS];
	struct httphead_span	 value[HTTPHEAD_MAX_HEADERS];
	size_t			 end;	/* head length, blank line too */
};

enum httphead_state {
	HS_METHOD,
	HS_TARGET0,
	HS_TARGET,
	HS_VERSION,
	HS_RL_LF,
	HS_LINE,
	HS_NAME,
	HS_VALUE0,
	HS_VALUE,
	HS_FIELD_LF,
	HS_END_LF,
};

static enum httphead_result
httphead_fail(enum httphead_result r, const char *what, const char **why)
{
	if (why != NULL)
		*why = what;
	return (r);
}

static int
httphead_lower(int c)
{
	if (c >= 'A' && c <= 'Z')
		return (c - 'A' + 'a');
	return (c);
}

static int
httphead_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	c = httphead_lower(c);
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	return (-1);
}

/* Case-insensitive comparison of a span against a NUL-terminated word. */
static int
httphead_span_is(const char *s, size_t len, const char *word)
{
	size_t	i;

	for (i = 0; i < len; i++) {
		if (word[i] == '\0')
			return (0);
		if (httphead_lower((unsigned char)s[i]) !=
		    httphead_lower((unsigned char)word[i]))
			return (0);
	}
	return (word[len] == '\0');
}

static int
httphead_casecmp(const char *a, const char *b)
{
	int	ca, cb;

	do {
		ca = httphead_lower((unsigned char)*a++);
		cb = httphead_lower((unsigned char)*b++);
	} while (ca == cb && ca != '\0');
	return (ca - cb);
}

/*
 * Byte-at-a-time scan of the head: works the same on a complete head and on
 * a prefix of one, so garbage is refused as soon as it arrives.  Returns
 * HTTPHEAD_PARTIAL when the n bytes end before the blank line.
 */
static enum httphead_result
httphead_scan(const char *buf, size_t n, struct httphead_scan *sc,
    const char **why)
{
	static const char	 vpat[] = "HTTP/D.D";
	enum httphead_state	 st = HS_METHOD;
	const char		*v;
	size_t			 i, k;
	unsigned char		 c;

	memset(sc, 0, sizeof(*sc));
	for (i = 0; i < n; i++) {
		c = (unsigned char)buf[i];
		if (c == '\0')
			return (httphead_fail(HTTPHEAD_BAD,
			    "NUL byte in request head", why));
		if (st == HS_RL_LF || st == HS_FIELD_LF || st == HS_END_LF) {
			if (c != '\n')
				return (httphead_fail(HTTPHEAD_BAD,
				    "bare CR in request head", why));
		} else if (c == '\n')
			return (httphead_fail(HTTPHEAD_BAD,
			    "bare LF in request head", why));

		switch (st) {
		case HS_METHOD:
			if (c == ' ' && sc->method.len > 0) {
				st = HS_TARGET0;
				break;
			}
			if (!httphead_tchar(c) || (c >= 'a' && c <= 'z') ||
			    sc->method.len == HTTPHEAD_METHOD_MAX)
				return (httphead_fail(HTTPHEAD_BAD,
				    "malformed request line", why));
			sc->method.len++;
			break;
		case HS_TARGET0:
			if (c != '/')
				return (httphead_fail(HTTPHEAD_BAD,
				    "request target is not a path", why));
			sc->target.off = i;
			sc->target.len = 1;
			st = HS_TARGET;
			break;
		case HS_TARGET:
			if (c == ' ') {
				sc->version.off = i + 1;
				st = HS_VERSION;
				break;
			}
			if (c == '#')
				return (httphead_fail(HTTPHEAD_BAD,
				    "fragment in request target", why));
			if (!httphead_vchar(c))
				return (httphead_fail(HTTPHEAD_BAD,
				    "request target has invalid characters",
				    why));
			sc->target.len++;
			break;
		case HS_VERSION:
			if (c == '\r') {
				st = HS_RL_LF;
				break;
			}
			k = sc->version.len;
			if (k >= sizeof(vpat) - 1 ||
			    (vpat[k] == 'D' && !(c >= '0' && c <= '9')) ||
			    (vpat[k] != 'D' && c != (unsigned char)vpat[k]))
				return (httphead_fail(HTTPHEAD_BAD,
				    "malformed request line", why));
			sc->version.len++;
			break;
		case HS_RL_LF:
			/* The request line is whole: judge the version now. */
			v = buf + sc->version.off;
			if (sc->version.len != sizeof(vpat) - 1)
				return (httphead_fail(HTTPHEAD_BAD,
				    "malformed request line", why));
			if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
				return (httphead_fail(HTTPHEAD_BAD_VERSION,
				    "unsupported HTTP version", why));
			st = HS_LINE;
			break;
		case HS_LINE:
			if (c == '\r') {
				st = HS_END_LF;
				break;
			}
			if (c == ' ' || c == '\t')
				return (httphead_fail(HTTPHEAD_BAD,
				    "obsolete line folding", why));
			if (!httphead_tchar(c))
				return (httphead_fail(HTTPHEAD_BAD,
				    "header name has invalid characters", why));
			if (sc->nfields == HTTPHEAD_MAX_HEADERS)
				return (httphead_fail(HTTPHEAD_TOO_LARGE,
				    "too many header fields", why));
			sc->name[sc->nfields].off = i;
			sc->name[sc->nfields].len = 1;
			st = HS_NAME;
			break;
		case HS_NAME:
			if (c == ':') {
				st = HS_VALUE0;
				break;
			}
			if (!httphead_tchar(c))
				return (httphead_fail(HTTPHEAD_BAD,
				    "header name has invalid characters", why));
			sc->name[sc->nfields].len++;
			break;
		case HS_VALUE0:
		case HS_VALUE:
			if (c == '\r') {
				if (st == HS_VALUE0)
					sc->value[sc->nfields].off = i;
				sc->nfields++;
				st = HS_FIELD_LF;
				break;
			}
			if (c == ' ' || c == '\t')
				break;
			/* obs-text (0x80-0xff) is allowed here alone. */
			if (!httphead_vchar(c) && c < 0x80)
				return (httphead_fail(HTTPHEAD_BAD,
				    "header value has invalid characters",
				    why));
			if (st == HS_VALUE0) {
				sc->value[sc->nfields].off = i;
				st = HS_VALUE;
			}
			/* Trailing whitespace is trimmed: it is not counted. */
			sc->value[sc->nfields].len =
			    i + 1 - sc->value[sc->nfields].off;
			break;
		case HS_FIELD_LF:
			st = HS_LINE;
			break;
		case HS_END_LF:
			sc->end = i + 1;
			return (HTTPHEAD_OK);
		}
	}
	return (httphead_fail(HTTPHEAD_PARTIAL, "incomplete request head",
	    why));
}

/*
 * Walk a comma-separated list, calling back for each element with
 * surrounding whitespace trimmed (empty elements included).
 */
static int
httphead_list(const char *s, size_t len,
    int (*cb)(const char *, size_t, void *), void *arg)
{
	size_t	i = 0, start, end;

	for (;;) {
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		start = i;
		while (i < len && s[i] != ',')
			i++;
		end = i;
		while (end > start && (s[end - 1] == ' ' || s[end - 1] == '\t'))
			end--;
		if (cb(s + start, end - start, arg) != 0)
			return (-1);
		if (i >= len)
			return (0);
		i++;	/* the comma */
	}
}

struct httphead_tokens {
	int	 close;
	int	 keepalive;
	int	 upgrade;
	int	 websocket;
	int	 chunked;	/* count of "chunked" */
};

static int
httphead_conn_cb(const char *s, size_t len, void *arg)
{
	struct httphead_tokens	*t = arg;

	if (httphead_span_is(s, len, "close"))
		t->close = 1;
	else if (httphead_span_is(s, len, "keep-alive"))
		t->keepalive = 1;
	else if (httphead_span_is(s, len, "upgrade"))
		t->upgrade = 1;
	return (0);
}

static int
httphead_upgrade_cb(const char *s, size_t len, void *arg)
{
	struct httphead_tokens	*t = arg;

	if (httphead_span_is(s, len, "websocket"))
		t->websocket = 1;
	return (0);
}

/* Only chunked is understood, and only once; anything else is refused. */
static int
httphead_te_cb(const char *s, size_t len, void *arg)
{
	struct httphead_tokens	*t = arg;

	if (!httphead_span_is(s, len, "chunked"))
		return (-1);
	t->chunked++;
	return (0);
}

static int64_t
httphead_content_length(const char *s, size_t len)
{
	int64_t	v = 0;
	size_t	i;
	int	d;

	if (len == 0)
		return (-1);
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		d = s[i] - '0';
		if (v > (HTTPHEAD_CL_MAX - 1 - d) / 10)
			return (-1);
		v = v * 10 + d;
	}
	return (v);
}

/*
 * Decode one byte of src at *i: %XX, and '+' as space when plus is set.
 * Returns the byte, or -1 for a bad escape or an encoded NUL.
 */
static int
httphead_decode1(const char *src, size_t srclen, size_t *i, int plus)
{
	int	hi, lo, c;

	c = (unsigned char)src[*i];
	if (c == '\0')
		return (-1);
	if (c == '+' && plus) {
		(*i)++;
		return (' ');
	}
	if (c != '%') {
		(*i)++;
		return (c);
	}
	if (srclen - *i < 3)
		return (-1);
	hi = httphead_hexval((unsigned char)src[*i + 1]);
	lo = httphead_hexval((unsigned char)src[*i + 2]);
	if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
		return (-1);
	*i += 3;
	return (hi * 16 + lo);
}

/* Dot segments and empty segments have no meaning in this API. */
static const char *
httphead_check_path(const char *p)
{
	size_t	i, seg;

	for (i = 0; p[i] != '\0'; i++) {
		if (p[i] != '/')
			continue;
		if (p[i + 1] == '/')
			return ("request path has empty segments");
		seg = i + 1;
		if (p[seg] == '.' && (p[seg + 1] == '/' || p[seg + 1] == '\0'))
			return ("request path has dot segments");
		if (p[seg] == '.' && p[seg + 1] == '.' &&
		    (p[seg + 2] == '/' || p[seg + 2] == '\0'))
			return ("request path has dot segments");
	}
	return (NULL);
}

/* Framing, persistence, Host and path: everything needing the whole head. */
static enum httphead_result
httphead_meaning(const char *buf, const struct httphead_scan *sc,
    struct httphead *h, const char **why)
{
	struct httphead_tokens	 t;
	const char		*name, *value, *msg;
	size_t			 i, nlen, vlen, plen;
	int64_t			 cl;
	int			 host = 0, te = 0, auth = 0;

	memset(&t, 0, sizeof(t));
	h->minor = buf[sc->version.off + 7] - '0';
	h->content_length = -1;
	for (i = 0; i < sc->nfields; i++) {
		name = buf + sc->name[i].off;
		nlen = sc->name[i].len;
		value = buf + sc->value[i].off;
		vlen = sc->value[i].len;
		if (httphead_span_is(name, nlen, "content-length")) {
			cl = httphead_content_length(value, vlen);
			if (cl < 0)
				return (httphead_fail(HTTPHEAD_BAD,
				    "Content-Length is invalid", why));
			if (h->content_length != -1 && h->content_length != cl)
				return (httphead_fail(HTTPHEAD_BAD,
				    "conflicting Content-Length", why));
			h->content_length = cl;
		} else if (httphead_span_is(name, nlen, "transfer-encoding")) {
			te = 1;
			if (httphead_list(value, vlen, httphead_te_cb, &t) != 0)
				return (httphead_fail(HTTPHEAD_BAD,
				    "unsupported Transfer-Encoding", why));
		} else if (httphead_span_is(name, nlen, "connection"))
			httphead_list(value, vlen, httphead_conn_cb, &t);
		else if (httphead_span_is(name, nlen, "upgrade"))
			httphead_list(value, vlen, httphead_upgrade_cb, &t);
		else if (httphead_span_is(name, nlen, "host")) {
			if (host)
				return (httphead_fail(HTTPHEAD_BAD,
				    "duplicate Host header", why));
			host = 1;
		} else if (httphead_span_is(name, nlen, "authorization")) {
			/* Two tokens: which one would a proxy have checked? */
			if (auth)
				return (httphead_fail(HTTPHEAD_BAD,
				    "duplicate Authorization header", why));
			auth = 1;
		}
	}

	if (te) {
		if (t.chunked != 1)
			return (httphead_fail(HTTPHEAD_BAD,
			    "unsupported Transfer-Encoding", why));
		/* RFC 9112 6.1: HTTP/1.0 framing with it cannot be trusted. */
		if (h->minor == 0)
			return (httphead_fail(HTTPHEAD_BAD,
			    "Transfer-Encoding in HTTP/1.0 request", why));
		if (h->content_length != -1)
			return (httphead_fail(HTTPHEAD_BAD,
			    "Content-Length with Transfer-Encoding", why));
	}
	h->chunked = te;
	if (h->minor == 1 && !host)
		return (httphead_fail(HTTPHEAD_BAD, "missing Host header",
		    why));

	if (t.close)
		h->keep_alive = 0;
	else if (h->minor == 1)
		h->keep_alive = 1;
	else
		h->keep_alive = t.keepalive;
	/* RFC 9110 7.8: Upgrade in an HTTP/1.0 request is ignored. */
	h->upgrade = h->minor == 1 && t.websocket && t.upgrade;

	plen = 0;
	while (plen < sc->target.len && buf[sc->target.off + plen] != '?')
		plen++;
	if (httphead_unescape(buf + sc->target.off, plen, h->path,
	    sizeof(h->path)) < 0) {
		/* Tell a bad escape from an overlong path, for a better why. */
		for (i = 0; i < plen;)
			if (httphead_decode1(buf + sc->target.off, plen, &i,
			    0) < 0)
				return (httphead_fail(HTTPHEAD_BAD,
				    "request path has invalid escapes", why));
		return (httphead_fail(HTTPHEAD_BAD,
		    "request path too long", why));
	}
	if ((msg = httphead_check_path(h->path)) != NULL)
		return (httphead_fail(HTTPHEAD_BAD, msg, why));
	return (HTTPHEAD_OK);
}

enum httphead_result
httphead_parse(char *buf, size_t len, size_t limit, struct httphead *h,
    size_t *head_len, const char **why)
{
	struct httphead_scan	 sc;
	enum httphead_result	 r;
	size_t			 i, n;
	char			*q;

	if (why != NULL)
		*why = NULL;
	if (buf == NULL || h == NULL)
		return (httphead_fail(HTTPHEAD_BAD, "no request head", why));

	n = len < limit ? len : limit;
	r = httphead_scan(buf, n, &sc, why);
	if (r == HTTPHEAD_PARTIAL && len >= limit)
		return (httphead_fail(HTTPHEAD_TOO_LARGE,
		    "request head too large", why));
	if (r != HTTPHEAD_OK)
		return (r);
	if ((r = httphead_meaning(buf, &sc, h, why)) != HTTPHEAD_OK)
		return (r);

	/* Everything is valid: only now terminate the strings in place. */
	buf[sc.method.off + sc.method.len] = '\0';
	h->method = buf + sc.method.off;
	buf[sc.target.off + sc.target.len] = '\0';
	h->target = buf + sc.target.off;
	q = strchr(h->target, '?');
	h->query = q != NULL ? q + 1 : "";
	h->nfields = sc.nfields;
	for (i = 0; i < sc.nfields; i++) {
		buf[sc.name[i].off + sc.name[i].len] = '\0';
		buf[sc.value[i].off + sc.value[i].len] = '\0';
		h->fields[i].name = buf + sc.name[i].off;
		h->fields[i].value = buf + sc.value[i].off;
	}
	if (head_len != NULL)
		*head_len = sc.end;
	return (HTTPHEAD_OK);
}

const char *
httphead_field(const struct httphead *h, const char *name)
{
	size_t	i;

	if (h == NULL || name == NULL)
		return (NULL);
	for (i = 0; i < h->nfields && i < HTTPHEAD_MAX_HEADERS; i++) {
		if (httphead_casecmp(h->fields[i].name, name) == 0)
			return (h->fields[i].value);
	}
	return (NULL);
}

static int
httphead_decode(const char *src, size_t srclen, char *dst, size_t dstlen,
    int plus)
{
	size_t	i = 0, o = 0;
	int	c;

	if (dst == NULL || dstlen == 0)
		return (-1);
	dst[0] = '\0';
	if (src == NULL)
		return (srclen == 0 ? 0 : -1);
	while (i < srclen) {
		if ((c = httphead_decode1(src, srclen, &i, plus)) < 0 ||
		    o + 1 >= dstlen || o >= INT_MAX) {
			dst[0] = '\0';
			return (-1);
		}
		dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return ((int)o);
}

int
httphead_unescape(const char *src, size_t srclen, char *dst, size_t dstlen)
{
	return (httphead_decode(src, srclen, dst, dstlen, 0));
}

/* Does the encoded key src[0..len) decode exactly to key? */
static int
httphead_query_key(const char *src, size_t len, const char *key)
{
	size_t	i = 0, k = 0;
	int	c;

	while (i < len) {
		if ((c = httphead_decode1(src, len, &i, 1)) < 0)
			return (0);
		if (key[k] == '\0' || (unsigned char)key[k] != c)
			return (0);
		k++;
	}
	return (key[k] == '\0');
}

int
httphead_query(const char *query, const char *key, char *out, size_t outlen)
{
	const char	*p, *amp, *eq;
	size_t		 elen;

	if (out != NULL && outlen > 0)
		out[0] = '\0';
	if (query == NULL || key == NULL)
		return (-1);
	for (p = query; *p != '\0'; p = amp + 1) {
		amp = p + strcspn(p, "&");
		elen = amp - p;
		eq = memchr(p, '=', elen);
		if (elen != 0 &&
		    httphead_query_key(p, eq != NULL ? (size_t)(eq - p) : elen,
		    key)) {
			if (out == NULL)
				return (-2);
			if (eq == NULL) {
				/* A bare key: empty value, if there is room. */
				if (httphead_decode(p, 0, out, outlen, 1) < 0)
					return (-2);
				return (0);
			}
			if (httphead_decode(eq + 1, amp - eq - 1, out, outlen,
			    1) < 0)
				return (-2);
			return ((int)strlen(out));
		}
		if (*amp == '\0')
			break;
	}
	return (-1);
}

void
httphead_attach_init(struct httphead_attach *q)
{
	memset(q, 0, sizeof(*q));
}

/* A decimal number of digits only, at most max; -1 if not. */
static int
httphead_decimal(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t	v = 0;
	size_t		i;

	if (s == NULL || s[0] == '\0')
		return (-1);
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		if (v > (max - (uint64_t)(s[i] - '0')) / 10)
			return (-1);
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return (0);
}

int
httphead_attach_param(struct httphead_attach *q, const char *key,
    const char *value, const char **why)
{
	static const char *const names[] = { "since", "cols", "rows",
	    "readOnly", "pace" };
	uint64_t	 v;
	unsigned	 i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(key, names[i]) == 0)
			break;
	if (i == sizeof(names) / sizeof(names[0]))
		return (0);
	if (q->seen & (1u << i)) {
		*why = i == 0 ? "'since' is given twice" : i == 1 ?
		    "'cols' is given twice" : i == 2 ? "'rows' is given twice" :
		    i == 3 ? "'readOnly' is given twice" :
		    "'pace' is given twice";
		return (-1);
	}
	q->seen |= 1u << i;
	switch (i) {
	case 0:
		if (httphead_decimal(value, HTTPHEAD_SINCE_MAX, &v) == -1) {
			*why = "'since' must be an offset: a decimal integer "
			    "from 0 to 9223372036854775807";
			return (-1);
		}
		q->since_set = 1;
		q->since = v;
		return (0);
	case 1:
	case 2:
		if (httphead_decimal(value, SPAWNREQ_SIZE_MAX, &v) == -1 ||
		    v == 0) {
			*why = i == 1 ? "'cols' must be an integer from 1 to "
			    "10000" : "'rows' must be an integer from 1 to "
			    "10000";
			return (-1);
		}
		if (i == 1)
			q->cols = (int)v;
		else
			q->rows = (int)v;
		return (0);
	default:
		if (value == NULL || (strcmp(value, "0") != 0 &&
		    strcmp(value, "false") != 0))
			*(i == 3 ? &q->readonly : &q->pace) = 1;
		/* Whichever comes second sees the other. */
		if (q->readonly && q->pace) {
			*why = "'pace' is for a client that may type: a "
			    "read-only client cannot hold the process back";
			return (-1);
		}
		return (0);
	}
}

int
httphead_attach_query(const char *query, struct httphead_attach *q,
    const char **why)
{
	const char	*p, *amp, *eq;
	char		 key[16], value[64];
	size_t		 elen, klen;

	httphead_attach_init(q);
	for (p = query; p != NULL && *p != '\0'; p = amp + 1) {
		amp = p + strcspn(p, "&");
		elen = (size_t)(amp - p);
		eq = memchr(p, '=', elen);
		klen = eq != NULL ? (size_t)(eq - p) : elen;
		/* A key too long or badly escaped is none of ours. */
		if (elen > 0 && httphead_decode(p, klen, key, sizeof(key),
		    1) >= 0) {
			if (eq != NULL && httphead_decode(eq + 1,
			    (size_t)(amp - eq - 1), value, sizeof(value),
			    1) < 0)
				/* Malformed or too long: no valid value. */
				memcpy(value, "-", 2);
			if (httphead_attach_param(q, key, eq != NULL ? value :
			    NULL, why) == -1)
				return (-1);
		}
		if (*amp == '\0')
			break;
	}
	return (0);
}

/* Append len bytes to out, if they fit; the offset, or -1. */
static ssize_t
httphead_put(char *out, size_t outlen, size_t off, const char *s, size_t len)
{
	if (off == (size_t)-1 || len >= outlen - off)
		return (-1);
	memcpy(out + off, s, len);
	out[off + len] = '\0';
	return ((ssize_t)(off + len));
}

size_t
httphead_without_token(const struct httphead *h, char *out, size_t outlen)
{
	const char	*q, *p, *amp, *eq;
	size_t		 i, elen;
	ssize_t		 off = 0;
	int		 first = 1;
	char		 line[32];

	if (outlen == 0)
		return (0);
	q = strchr(h->target, '?');
	off = httphead_put(out, outlen, 0, h->method, strlen(h->method));
	off = httphead_put(out, outlen, off, " ", 1);
	off = httphead_put(out, outlen, off, h->target, q != NULL ?
	    (size_t)(q - h->target) : strlen(h->target));
	for (p = h->query; off != -1 && *p != '\0'; p = amp + 1) {
		amp = p + strcspn(p, "&");
		elen = amp - p;
		eq = memchr(p, '=', elen);
		if (elen != 0 && !httphead_query_key(p, eq != NULL ?
		    (size_t)(eq - p) : elen, "access_token")) {
			off = httphead_put(out, outlen, off, first ? "?" : "&",
			    1);
			off = httphead_put(out, outlen, off, p, elen);
			first = 0;
		}
		if (*amp == '\0')
			break;
	}
	snprintf(line, sizeof(line), " HTTP/1.%d\r\n", h->minor);
	off = httphead_put(out, outlen, off, line, strlen(line));
	for (i = 0; off != -1 && i < h->nfields; i++) {
		if (httphead_casecmp(h->fields[i].name, "Authorization") == 0)
			continue;
		off = httphead_put(out, outlen, off, h->fields[i].name,
		    strlen(h->fields[i].name));
		off = httphead_put(out, outlen, off, ": ", 2);
		off = httphead_put(out, outlen, off, h->fields[i].value,
		    strlen(h->fields[i].value));
		off = httphead_put(out, outlen, off, "\r\n", 2);
	}
	off = httphead_put(out, outlen, off, "\r\n", 2);
	return (off == -1 ? 0 : (size_t)off);
}

/*
 * A session's path is looked up with its {ref} as "*"; the ref itself is
 * copied to ref, or "" when it does not fit.
 */
enum httphead_route
httphead_route(const char *method, const char *path, char *ref,
    size_t refmax)
{
	static const char	 prefix[] = "/v1/sessions/";
	static const struct {
		const char		*path, *method;
		enum httphead_route	 route;
	} ways[] = {
		{ "/v1/health", "GET", ROUTE_HEALTH },
		{ "/metrics", "GET", ROUTE_METRICS },
		{ "/v1/exec", "POST", ROUTE_EXEC },
		{ "/v1/exec/stream", "GET", ROUTE_EXEC_STREAM },
		{ "/v1/sessions", "GET", ROUTE_SESSIONS_LIST },
		{ "/v1/sessions", "POST", ROUTE_SESSIONS_CREATE },
		{ "/v1/sessions/*", "GET", ROUTE_SESSION_GET },
		{ "/v1/sessions/*", "DELETE", ROUTE_SESSION_DELETE },
		{ "/v1/sessions/*/signal", "POST", ROUTE_SESSION_SIGNAL },
		{ "/v1/sessions/*/input", "POST", ROUTE_SESSION_INPUT },
		{ "/v1/sessions/*/resize", "POST", ROUTE_SESSION_RESIZE },
		{ "/v1/sessions/*/log", "GET", ROUTE_SESSION_LOG },
		{ "/v1/sessions/*/attach", "GET", ROUTE_SESSION_ATTACH },
		{ "/v1/sessions/*/wait", "GET", ROUTE_SESSION_WAIT },
	};
	enum httphead_route	 r = ROUTE_NONE;
	const char		*seg = NULL, *name = path;
	char			 key[32];
	size_t			 seglen = 0, i;

	if (ref != NULL && refmax > 0)
		ref[0] = '\0';
	if (method == NULL || path == NULL)
		return (ROUTE_NONE);
	if (strncmp(path, prefix, sizeof(prefix) - 1) == 0) {
		seg = path + sizeof(prefix) - 1;
		if ((seglen = strcspn(seg, "/")) == 0 ||
		    snprintf(key, sizeof(key), "%s*%s", prefix,
		    seg + seglen) >= (int)sizeof(key))
			return (ROUTE_NONE);
		name = key;
	}
	for (i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		if (strcmp(name, ways[i].path) != 0)
			continue;
		if (strcmp(method, ways[i].method) == 0) {
			r = ways[i].route;
			break;
		}
		r = ROUTE_BAD_METHOD;
	}
	if (seg != NULL && r != ROUTE_NONE && ref != NULL && refmax > 0) {
		if (seglen >= refmax)
			seglen = 0;
		memcpy(ref, seg, seglen);
		ref[seglen] = '\0';
	}
	return (r);
}
