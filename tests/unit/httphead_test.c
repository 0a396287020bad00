/*
 * httphead_test.c: unit tests for the request head parser, the decoders
 * and the router.
 *
 * Every input is copied into a heap buffer of exactly its length (no
 * terminating NUL), so ASan and valgrind catch any read past len; every
 * result other than HTTPHEAD_OK is checked to have left the buffer intact.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httphead.h"

#define LIMIT	8192

struct parsed {
	char			*buf;
	size_t			 len;
	struct httphead		 h;
	size_t			 head_len;
	const char		*why;
	enum httphead_result	 r;
};

static struct parsed	 P;

static int
reset(void **state)
{
	(void)state;
	free(P.buf);
	memset(&P, 0, sizeof(P));
	return (0);
}

/* Parse the first len bytes of s with the given limit into P. */
static enum httphead_result
parse_n(const char *s, size_t len, size_t limit)
{
	reset(NULL);
	P.buf = malloc(len > 0 ? len : 1);
	assert_non_null(P.buf);
	memcpy(P.buf, s, len);
	P.len = len;
	P.head_len = (size_t)-1;
	P.r = httphead_parse(P.buf, len, limit, &P.h, &P.head_len, &P.why);
	if (P.r != HTTPHEAD_OK) {
		assert_memory_equal(P.buf, s, len);
		assert_non_null(P.why);
		assert_int_equal(P.head_len, (size_t)-1);
	} else {
		assert_null(P.why);
		assert_true(P.head_len <= len && P.head_len <= limit);
	}
	return (P.r);
}

static enum httphead_result
parse(const char *s)
{
	return (parse_n(s, strlen(s), LIMIT));
}

/* Parse "GET / HTTP/1.1" with Host plus the given extra header lines. */
static enum httphead_result
parse_with(const char *version, const char *extra)
{
	char	buf[4096];
	int	n;

	n = snprintf(buf, sizeof(buf), "GET /x %s\r\n%s%s\r\n", version,
	    strcmp(version, "HTTP/1.1") == 0 ? "Host: h\r\n" : "", extra);
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	return (parse(buf));
}

static void
test_get_valid(void **state)
{
	const char	*req = "GET /v1/health?x=1&y=%20 HTTP/1.1\r\n"
	    "Host: example.org:8080\r\n"
	    "User-Agent: \t curl/8.0 x \t\r\n"
	    "Accept: */*\r\n"
	    "X-Empty:\r\n"
	    "X-Blank:   \r\n"
	    "\r\n";

	(void)state;
	assert_int_equal(parse(req), HTTPHEAD_OK);
	assert_int_equal(P.head_len, strlen(req));
	assert_string_equal(P.h.method, "GET");
	assert_string_equal(P.h.target, "/v1/health?x=1&y=%20");
	assert_string_equal(P.h.path, "/v1/health");
	assert_string_equal(P.h.query, "x=1&y=%20");
	assert_int_equal(P.h.minor, 1);
	assert_int_equal(P.h.nfields, 5);
	assert_string_equal(P.h.fields[0].name, "Host");
	assert_string_equal(P.h.fields[0].value, "example.org:8080");
	assert_string_equal(P.h.fields[1].name, "User-Agent");
	assert_string_equal(P.h.fields[1].value, "curl/8.0 x");
	assert_string_equal(P.h.fields[3].value, "");
	assert_string_equal(P.h.fields[4].value, "");
	assert_string_equal(httphead_field(&P.h, "host"), "example.org:8080");
	assert_string_equal(httphead_field(&P.h, "USER-AGENT"), "curl/8.0 x");
	assert_string_equal(httphead_field(&P.h, "accept"), "*/*");
	assert_null(httphead_field(&P.h, "Accept-Encoding"));
	assert_null(httphead_field(&P.h, "Accep"));
	assert_null(httphead_field(&P.h, "Hos"));
	assert_null(httphead_field(&P.h, "Hostx"));
	assert_null(httphead_field(NULL, "host"));
	assert_int_equal(P.h.content_length, -1);
	assert_int_equal(P.h.chunked, 0);
	assert_int_equal(P.h.keep_alive, 1);
	assert_int_equal(P.h.upgrade, 0);
}

static void
test_post_content_length(void **state)
{
	const char	*head = "POST /v1/exec HTTP/1.1\r\n"
	    "Host: h\r\n"
	    "Content-Type: application/json\r\n"
	    "Content-Length: 12\r\n"
	    "\r\n";
	char		 req[256];

	(void)state;
	snprintf(req, sizeof(req), "%s{\"argv\":[1]}", head);
	assert_int_equal(parse(req), HTTPHEAD_OK);
	assert_int_equal(P.head_len, strlen(head));
	assert_int_equal(P.len - P.head_len, 12);
	assert_memory_equal(P.buf + P.head_len, "{\"argv\":[1]}", 12);
	assert_string_equal(P.h.method, "POST");
	assert_string_equal(P.h.path, "/v1/exec");
	assert_string_equal(P.h.query, "");
	assert_int_equal(P.h.content_length, 12);
	assert_int_equal(P.h.chunked, 0);
	assert_string_equal(httphead_field(&P.h, "content-type"),
	    "application/json");
}

static void
test_partial_every_split(void **state)
{
	const char	*req = "PUT /a/b%20c?q=1 HTTP/1.1\r\n"
	    "Host: h\r\n"
	    "Content-Length: 4\r\n"
	    "X: \t y \r\n"
	    "\r\n"
	    "body";
	size_t		 head = strlen(req) - 4, k;

	(void)state;
	for (k = 0; k < head; k++) {
		assert_int_equal(parse_n(req, k, LIMIT), HTTPHEAD_PARTIAL);
		/* The same prefix is too large once it reaches the limit. */
		if (k > 0)
			assert_int_equal(parse_n(req, k, k),
			    HTTPHEAD_TOO_LARGE);
	}
	for (k = head; k <= strlen(req); k++) {
		assert_int_equal(parse_n(req, k, LIMIT), HTTPHEAD_OK);
		assert_int_equal(P.head_len, head);
		assert_string_equal(P.h.path, "/a/b c");
		assert_string_equal(P.h.query, "q=1");
		assert_string_equal(httphead_field(&P.h, "x"), "y");
		assert_int_equal(P.h.content_length, 4);
	}
}

static void
test_pipelined(void **state)
{
	const char	*first = "GET /v1/health HTTP/1.1\r\nHost: a\r\n\r\n";
	const char	*second = "DELETE /v1/sessions/s1 HTTP/1.1\r\n"
	    "Host: b\r\nConnection: close\r\n\r\n";
	char		 req[256];
	struct httphead	 h2;
	size_t		 hl2;
	const char	*why;

	(void)state;
	snprintf(req, sizeof(req), "%s%s", first, second);
	assert_int_equal(parse(req), HTTPHEAD_OK);
	assert_int_equal(P.head_len, strlen(first));
	assert_string_equal(P.h.method, "GET");
	assert_int_equal(P.h.nfields, 1);
	assert_string_equal(httphead_field(&P.h, "host"), "a");
	assert_null(httphead_field(&P.h, "connection"));
	assert_int_equal(P.h.keep_alive, 1);
	/* The second head is untouched and parses on its own. */
	assert_memory_equal(P.buf + P.head_len, second, strlen(second));
	assert_int_equal(httphead_parse(P.buf + P.head_len,
	    P.len - P.head_len, LIMIT, &h2, &hl2, &why), HTTPHEAD_OK);
	assert_int_equal(hl2, strlen(second));
	assert_string_equal(h2.method, "DELETE");
	assert_string_equal(h2.path, "/v1/sessions/s1");
	assert_int_equal(h2.keep_alive, 0);
}

static void
test_bad_request_line(void **state)
{
	static const char *bad[] = {
		"get / HTTP/1.1\r\nHost: h\r\n\r\n",
		"Get / HTTP/1.1\r\nHost: h\r\n\r\n",
		"ABCDEFGHIJKLMNOP / HTTP/1.1\r\nHost: h\r\n\r\n",
		" / HTTP/1.1\r\nHost: h\r\n\r\n",
		" GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"G(T / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET  / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /  HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
		"CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET a/b HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /a\tb HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /a\x80 HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /a#frag HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /a?b#frag HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /\r\nHost: h\r\n\r\n",
		"GET / \r\nHost: h\r\n\r\n",
		"GET\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1 \r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1 x\r\nHost: h\r\n\r\n",
		"GET / http/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.10\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.\r\nHost: h\r\n\r\n",
		"GET / HTTP/1\r\nHost: h\r\n\r\n",
		"GET / HTTP/2\r\nHost: h\r\n\r\n",
		"GET / HTTP/11.1\r\nHost: h\r\n\r\n",
		"GET / HTTPS/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1,1\r\nHost: h\r\n\r\n",
		"GET / HTTP/a.1\r\nHost: h\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"\r\n\r\n",
	};
	static const char nul[] = "GET /\0 HTTP/1.1\r\nHost: h\r\n\r\n";
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i]) != HTTPHEAD_BAD)
			fail_msg("not BAD: case %zu", i);
	}
	assert_int_equal(parse_n(nul, sizeof(nul) - 1, LIMIT), HTTPHEAD_BAD);
	assert_string_equal(P.why, "NUL byte in request head");
	assert_int_equal(parse("GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_string_equal(P.why, "fragment in request target");
	assert_int_equal(parse("GET / HTTP/1.1 \r\nHost: h\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_string_equal(P.why, "malformed request line");
}

static void
test_methods(void **state)
{
	(void)state;
	assert_int_equal(parse("ABCDEFGHIJKLMNO / HTTP/1.1\r\nHost: h\r\n\r\n"),
	    HTTPHEAD_OK);
	assert_string_equal(P.h.method, "ABCDEFGHIJKLMNO");
	assert_int_equal(parse("M-SEARCH / HTTP/1.1\r\nHost: h\r\n\r\n"),
	    HTTPHEAD_OK);
	assert_string_equal(P.h.method, "M-SEARCH");
	assert_int_equal(parse("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n"),
	    HTTPHEAD_OK);
	assert_string_equal(P.h.method, "HEAD");
}

static void
test_versions(void **state)
{
	static const char *unsupported[] = {
		"HTTP/2.0", "HTTP/0.9", "HTTP/1.2", "HTTP/3.0", "HTTP/9.9",
	};
	char	req[128];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		snprintf(req, sizeof(req), "GET / %s\r\nHost: h\r\n\r\n",
		    unsupported[i]);
		assert_int_equal(parse(req), HTTPHEAD_BAD_VERSION);
		assert_string_equal(P.why, "unsupported HTTP version");
		/* Known as soon as the request line is complete. */
		snprintf(req, sizeof(req), "GET / %s\r\n", unsupported[i]);
		assert_int_equal(parse(req), HTTPHEAD_BAD_VERSION);
	}
	assert_int_equal(parse("GET / HTTP/1.0\r\n\r\n"), HTTPHEAD_OK);
	assert_int_equal(P.h.minor, 0);
	assert_int_equal(P.h.nfields, 0);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n"),
	    HTTPHEAD_OK);
	assert_int_equal(P.h.minor, 1);
	/* A bare CR after an unsupported version is still malformed. */
	assert_int_equal(parse("GET / HTTP/2.0\rX"), HTTPHEAD_BAD);
}

static void
test_line_endings(void **state)
{
	static const char *bad[] = {
		"GET / HTTP/1.1\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\n\n",
		"GET / HTTP/1.1\n\n",
		"GET / HTTP/1.1\r\nHost: h\r\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\nb\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\n\rX\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX\r: y\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: y\r\n\r\r\n",
		"GET / HTTP/1.1\rHost: h\r\n\r\n",
		"GET /a\rb HTTP/1.1\r\nHost: h\r\n\r\n",
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i]) != HTTPHEAD_BAD)
			fail_msg("not BAD: case %zu", i);
	}
	assert_int_equal(parse(bad[0]), HTTPHEAD_BAD);
	assert_string_equal(P.why, "bare LF in request head");
	assert_int_equal(parse(bad[5]), HTTPHEAD_BAD);
	assert_string_equal(P.why, "bare CR in request head");
}

static void
test_bad_headers(void **state)
{
	static const char *bad[] = {
		"Host : h\r\n",
		"Host\t: h\r\n",
		"Host h\r\n",
		"Host\r\n",
		": h\r\n",
		"Ho(st: h\r\n",
		"Ho/st: h\r\n",
		"Ho\x80st: h\r\n",
		"X: a\x01z\r\n",
		"X: a\x7fz\r\n",
		"X: a\x1b[0m\r\n",
		"X: a\r\n b\r\n",
		"X: a\r\n\tb\r\n",
		" X: a\r\n",
	};
	char	req[256];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(req, sizeof(req),
		    "GET / HTTP/1.1\r\nHost: h\r\n%s\r\n", bad[i]);
		if (parse(req) != HTTPHEAD_BAD)
			fail_msg("not BAD: case %zu", i);
	}
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost : h\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_string_equal(P.why, "header name has invalid characters");
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: h\r\n x\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_string_equal(P.why, "obsolete line folding");
	/* A NUL in a header value. */
	assert_int_equal(parse_n("GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n", 28,
	    LIMIT), HTTPHEAD_BAD);
	assert_string_equal(P.why, "NUL byte in request head");
}

static void
test_header_values(void **state)
{
	(void)state;
	assert_int_equal(parse_with("HTTP/1.1",
	    "X-A:\t\tin  side\t \r\n"
	    "X-B:\xc3\xa9t\xc3\xa9\r\n"
	    "x-weird!#$%&'*+-.^_`|~09: \"quoted\", (c) <a> [b] {c}\r\n"),
	    HTTPHEAD_OK);
	assert_string_equal(httphead_field(&P.h, "x-a"), "in  side");
	assert_string_equal(httphead_field(&P.h, "x-b"), "\xc3\xa9t\xc3\xa9");
	assert_string_equal(httphead_field(&P.h, "X-WEIRD!#$%&'*+-.^_`|~09"),
	    "\"quoted\", (c) <a> [b] {c}");
	/* First of duplicates wins in httphead_field. */
	assert_int_equal(parse_with("HTTP/1.1", "X: 1\r\nx: 2\r\n"),
	    HTTPHEAD_OK);
	assert_string_equal(httphead_field(&P.h, "X"), "1");
	assert_int_equal(P.h.nfields, 3);
}

static void
test_nul_and_early_bad(void **state)
{
	(void)state;
	/* Malformed prefixes are refused before the head is complete. */
	assert_int_equal(parse("get"), HTTPHEAD_BAD);
	assert_int_equal(parse("GET x"), HTTPHEAD_BAD);
	assert_int_equal(parse("GET / HTTP/2"), HTTPHEAD_PARTIAL);
	assert_int_equal(parse("GET / HTTPX"), HTTPHEAD_BAD);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: h\r\nBad Name"),
	    HTTPHEAD_BAD);
	assert_int_equal(parse("GET / HTTP/1.1\n"), HTTPHEAD_BAD);
	assert_int_equal(parse_n("GET /\0", 6, LIMIT), HTTPHEAD_BAD);
	assert_string_equal(P.why, "NUL byte in request head");
	assert_int_equal(parse_n("\0", 1, LIMIT), HTTPHEAD_BAD);
	assert_int_equal(parse_n("GET / HTTP/1.1\r\nHost: h\r\n\0", 26,
	    LIMIT), HTTPHEAD_BAD);
	/* Well-formed prefixes wait for more. */
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: h\r\n"),
	    HTTPHEAD_PARTIAL);
	assert_string_equal(P.why, "incomplete request head");
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: h\r\n\r"),
	    HTTPHEAD_PARTIAL);
	assert_int_equal(parse(""), HTTPHEAD_PARTIAL);
	/* A NUL after the head is body, not head. */
	assert_int_equal(parse_n("GET / HTTP/1.0\r\n\r\n\0", 19, LIMIT),
	    HTTPHEAD_OK);
	assert_int_equal(P.head_len, 18);
}

static void
test_too_large(void **state)
{
	char	req[2048];
	size_t	len;

	(void)state;
	snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: h\r\nX: %0900d"
	    "\r\n\r\n", 0);
	len = strlen(req);
	assert_int_equal(parse_n(req, len, len), HTTPHEAD_OK);
	assert_int_equal(P.head_len, len);
	assert_int_equal(parse_n(req, len, len - 1), HTTPHEAD_TOO_LARGE);
	assert_string_equal(P.why, "request head too large");
	assert_int_equal(parse_n(req, len, 512), HTTPHEAD_TOO_LARGE);
	assert_int_equal(parse_n(req, 511, 512), HTTPHEAD_PARTIAL);
	assert_int_equal(parse_n(req, 512, 512), HTTPHEAD_TOO_LARGE);
	assert_int_equal(parse_n(req, 600, 512), HTTPHEAD_TOO_LARGE);
	assert_int_equal(parse_n(req, len, 0), HTTPHEAD_TOO_LARGE);
	/* The blank line past the limit does not count. */
	assert_int_equal(parse_n("GET / HTTP/1.0\r\n\r\n", 18, 17),
	    HTTPHEAD_TOO_LARGE);
	assert_int_equal(parse_n("GET / HTTP/1.0\r\n\r\n", 18, 18),
	    HTTPHEAD_OK);
	/* Garbage within the limit is BAD even when the limit is reached. */
	assert_int_equal(parse_n("GET /\x01xxxxxxxxx", 15, 10), HTTPHEAD_BAD);
}

static void
test_field_count(void **state)
{
	char	 req[8192], *p;
	size_t	 i;
	int	 n;

	(void)state;
	p = req;
	p += sprintf(p, "GET / HTTP/1.1\r\nHost: h\r\n");
	for (i = 1; i < HTTPHEAD_MAX_HEADERS; i++)
		p += sprintf(p, "X-%zu: %zu\r\n", i, i);
	strcpy(p, "\r\n");
	assert_int_equal(parse(req), HTTPHEAD_OK);
	assert_int_equal(P.h.nfields, HTTPHEAD_MAX_HEADERS);
	assert_string_equal(httphead_field(&P.h, "x-63"), "63");
	assert_string_equal(P.h.fields[HTTPHEAD_MAX_HEADERS - 1].name, "X-63");

	n = sprintf(p, "X-64: 64\r\n\r\n");
	assert_true(n > 0);
	assert_int_equal(parse(req), HTTPHEAD_TOO_LARGE);
	assert_string_equal(P.why, "too many header fields");
	/* Known before the blank line arrives. */
	p[n - 2] = '\0';
	assert_int_equal(parse(req), HTTPHEAD_TOO_LARGE);
	/* Exactly at the edge of the 65th name, still only partial. */
	p[0] = '\0';
	assert_int_equal(parse(req), HTTPHEAD_PARTIAL);
}

static void
test_content_length(void **state)
{
	static const struct {
		const char	*hdr;
		int64_t		 want;	/* -2: BAD */
	} t[] = {
		{ "Content-Length: 0\r\n", 0 },
		{ "Content-Length: 42\r\n", 42 },
		{ "content-length:\t42 \r\n", 42 },
		{ "Content-Length: 0042\r\n", 42 },
		{ "Content-Length: 4611686018427387903\r\n",
		    INT64_C(4611686018427387903) },
		{ "Content-Length: 4611686018427387904\r\n", -2 },
		{ "Content-Length: 9223372036854775807\r\n", -2 },
		{ "Content-Length: 99999999999999999999999999\r\n", -2 },
		{ "Content-Length: +5\r\n", -2 },
		{ "Content-Length: -1\r\n", -2 },
		{ "Content-Length: 5 5\r\n", -2 },
		{ "Content-Length: 5,5\r\n", -2 },
		{ "Content-Length: 0x10\r\n", -2 },
		{ "Content-Length: 1e3\r\n", -2 },
		{ "Content-Length:\r\n", -2 },
		{ "Content-Length: 5\r\nContent-Length: 5\r\n", 5 },
		{ "Content-Length: 5\r\nContent-Length: 005\r\n", 5 },
		{ "Content-Length: 5\r\nContent-Length: 6\r\n", -2 },
		{ "Content-Length: 5\r\nContent-Length: x\r\n", -2 },
		{ "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", -2 },
		{ "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", -2 },
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (t[i].want == -2) {
			if (parse_with("HTTP/1.1", t[i].hdr) != HTTPHEAD_BAD)
				fail_msg("not BAD: case %zu", i);
			continue;
		}
		if (parse_with("HTTP/1.1", t[i].hdr) != HTTPHEAD_OK)
			fail_msg("not OK: case %zu: %s", i, P.why);
		assert_int_equal(P.h.content_length, t[i].want);
	}
	parse_with("HTTP/1.1", "Content-Length: -1\r\n");
	assert_string_equal(P.why, "Content-Length is invalid");
	parse_with("HTTP/1.1", "Content-Length: 1\r\nContent-Length: 2\r\n");
	assert_string_equal(P.why, "conflicting Content-Length");
	parse_with("HTTP/1.1",
	    "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n");
	assert_string_equal(P.why, "Content-Length with Transfer-Encoding");
}

static void
test_transfer_encoding(void **state)
{
	static const char *bad[] = {
		"Transfer-Encoding: gzip\r\n",
		"Transfer-Encoding: identity\r\n",
		"Transfer-Encoding: gzip, chunked\r\n",
		"Transfer-Encoding: chunked, gzip\r\n",
		"Transfer-Encoding: chunked, chunked\r\n",
		"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: chunked;x=1\r\n",
		"Transfer-Encoding: chunkedx\r\n",
		"Transfer-Encoding: chunked,\r\n",
		"Transfer-Encoding:\r\n",
		"Transfer-Encoding: \"chunked\"\r\n",
	};
	size_t	i;

	(void)state;
	assert_int_equal(parse_with("HTTP/1.1",
	    "Transfer-Encoding: chunked\r\n"), HTTPHEAD_OK);
	assert_int_equal(P.h.chunked, 1);
	assert_int_equal(P.h.content_length, -1);
	assert_int_equal(parse_with("HTTP/1.1",
	    "transfer-encoding:  ChUnKeD \r\n"), HTTPHEAD_OK);
	assert_int_equal(P.h.chunked, 1);
	assert_int_equal(parse_with("HTTP/1.1", "X: y\r\n"), HTTPHEAD_OK);
	assert_int_equal(P.h.chunked, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse_with("HTTP/1.1", bad[i]) != HTTPHEAD_BAD)
			fail_msg("not BAD: case %zu", i);
		assert_string_equal(P.why, "unsupported Transfer-Encoding");
	}
	assert_int_equal(parse_with("HTTP/1.0",
	    "Transfer-Encoding: chunked\r\n"), HTTPHEAD_BAD);
	assert_string_equal(P.why, "Transfer-Encoding in HTTP/1.0 request");
}

static void
test_keep_alive(void **state)
{
	static const struct {
		const char	*version;
		const char	*conn;	/* NULL: no Connection */
		int		 want;
	} t[] = {
		{ "HTTP/1.1", NULL, 1 },
		{ "HTTP/1.1", "Connection: close\r\n", 0 },
		{ "HTTP/1.1", "Connection: CLOSE\r\n", 0 },
		{ "HTTP/1.1", "Connection: keep-alive\r\n", 1 },
		{ "HTTP/1.1", "Connection: upgrade, close\r\n", 0 },
		{ "HTTP/1.1", "Connection: Upgrade ,\tClose ,\r\n", 0 },
		{ "HTTP/1.1", "Connection: keep-alive\r\nConnection: close\r\n",
		    0 },
		{ "HTTP/1.1", "Connection: closed\r\n", 1 },
		{ "HTTP/1.1", "Connection: xclose\r\n", 1 },
		{ "HTTP/1.1", "Connection: \"close\"\r\n", 1 },
		{ "HTTP/1.1", "X-Connection: close\r\n", 1 },
		{ "HTTP/1.0", NULL, 0 },
		{ "HTTP/1.0", "Connection: keep-alive\r\n", 1 },
		{ "HTTP/1.0", "Connection: Keep-Alive\r\n", 1 },
		{ "HTTP/1.0", "Connection: foo, keep-alive\r\n", 1 },
		{ "HTTP/1.0", "Connection: close\r\n", 0 },
		{ "HTTP/1.0", "Connection: keep-alive, close\r\n", 0 },
		{ "HTTP/1.0", "Connection: keep-alived\r\n", 0 },
		{ "HTTP/1.0", "Connection:\r\n", 0 },
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(parse_with(t[i].version,
		    t[i].conn != NULL ? t[i].conn : ""), HTTPHEAD_OK);
		if (P.h.keep_alive != t[i].want)
			fail_msg("keep_alive %d, case %zu", P.h.keep_alive, i);
	}
}

static void
test_upgrade(void **state)
{
	static const struct {
		const char	*version;
		const char	*hdrs;
		int		 want;
	} t[] = {
		{ "HTTP/1.1", "Upgrade: websocket\r\nConnection: Upgrade\r\n",
		    1 },
		{ "HTTP/1.1", "upgrade: WebSocket\r\nconnection: upgrade\r\n",
		    1 },
		{ "HTTP/1.1", "Connection: keep-alive, Upgrade\r\n"
		    "Upgrade: h2c, websocket\r\n", 1 },
		{ "HTTP/1.1", "Connection: keep-alive\r\n"
		    "Connection: upgrade\r\n"
		    "Upgrade: websocket\r\n", 1 },
		{ "HTTP/1.1", "Upgrade: websocket\r\n", 0 },
		{ "HTTP/1.1", "Connection: upgrade\r\n", 0 },
		{ "HTTP/1.1", "Upgrade: websocket\r\nConnection: close\r\n",
		    0 },
		{ "HTTP/1.1", "Upgrade: websockets\r\nConnection: upgrade\r\n",
		    0 },
		{ "HTTP/1.1", "Upgrade: h2c\r\nConnection: upgrade\r\n", 0 },
		{ "HTTP/1.1", "Upgrade: websocket\r\nConnection: upgrades\r\n",
		    0 },
		{ "HTTP/1.0", "Upgrade: websocket\r\nConnection: upgrade\r\n",
		    0 },
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(parse_with(t[i].version, t[i].hdrs),
		    HTTPHEAD_OK);
		if (P.h.upgrade != t[i].want)
			fail_msg("upgrade %d, case %zu", P.h.upgrade, i);
	}
	/* "Connection: upgrade, close" upgrades yet does not keep alive. */
	assert_int_equal(parse_with("HTTP/1.1",
	    "Upgrade: websocket\r\nConnection: upgrade, close\r\n"),
	    HTTPHEAD_OK);
	assert_int_equal(P.h.upgrade, 1);
	assert_int_equal(P.h.keep_alive, 0);
}

static void
test_host(void **state)
{
	(void)state;
	assert_int_equal(parse("GET / HTTP/1.1\r\n\r\n"), HTTPHEAD_BAD);
	assert_string_equal(P.why, "missing Host header");
	assert_int_equal(parse("GET / HTTP/1.1\r\nX-Host: h\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_string_equal(P.why, "duplicate Host header");
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nhOST: b\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_int_equal(parse("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_int_equal(parse("GET / HTTP/1.0\r\n\r\n"), HTTPHEAD_OK);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHOST: a\r\n\r\n"),
	    HTTPHEAD_OK);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost:\r\n\r\n"),
	    HTTPHEAD_OK);
	assert_string_equal(httphead_field(&P.h, "host"), "");
}

static void
test_authorization_once(void **state)
{
	(void)state;
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer x\r\n\r\n"), HTTPHEAD_OK);
	assert_string_equal(httphead_field(&P.h, "authorization"),
	    "Bearer x");
	/* Two tokens, the same or not, in any case: refused. */
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer x\r\nAuthorization: Bearer y\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_string_equal(P.why, "duplicate Authorization header");
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer x\r\nauthorization: Bearer x\r\n\r\n"),
	    HTTPHEAD_BAD);
	assert_int_equal(parse("GET / HTTP/1.0\r\n"
	    "Authorization: a\r\nAUTHORIZATION: b\r\n\r\n"), HTTPHEAD_BAD);
}

static void
test_attach_query(void **state)
{
	struct httphead_attach	 q;
	const char		*why;

	(void)state;
	assert_int_equal(httphead_attach_query("", &q, &why), 0);
	assert_false(q.since_set);
	assert_int_equal(q.cols, 0);
	assert_false(q.readonly);
	assert_int_equal(httphead_attach_query("since=12&cols=80&rows=%32%34"
	    "&readOnly&access_token=x", &q, &why), 0);
	assert_true(q.since_set);
	assert_int_equal(q.since, 12);
	assert_int_equal(q.cols, 80);
	assert_int_equal(q.rows, 24);
	assert_true(q.readonly);
	assert_int_equal(httphead_attach_query("readOnly=0", &q, &why), 0);
	assert_false(q.readonly);
	assert_int_equal(httphead_attach_query("readOnly=false", &q, &why), 0);
	assert_false(q.readonly);
	assert_int_equal(httphead_attach_query("readOnly=1", &q, &why), 0);
	assert_true(q.readonly);
	/* The largest offset, and one past it. */
	assert_int_equal(httphead_attach_query("since=9223372036854775807", &q,
	    &why), 0);
	assert_int_equal(q.since, INT64_MAX);
	assert_int_equal(httphead_attach_query("since=9223372036854775808", &q,
	    &why), -1);
	assert_string_equal(why, "'since' must be an offset: a decimal integer "
	    "from 0 to 9223372036854775807");
	assert_int_equal(httphead_attach_query("since=18446744073709551616",
	    &q, &why), -1);
	assert_int_equal(httphead_attach_query("since=99999999999999999999999",
	    &q, &why), -1);
	assert_int_equal(httphead_attach_query("since=", &q, &why), -1);
	assert_int_equal(httphead_attach_query("since", &q, &why), -1);
	assert_int_equal(httphead_attach_query("since=-1", &q, &why), -1);
	assert_int_equal(httphead_attach_query("since=+1", &q, &why), -1);
	assert_int_equal(httphead_attach_query("since=%zz", &q, &why), -1);
	assert_int_equal(httphead_attach_query("since=1&since=2", &q, &why),
	    -1);
	assert_string_equal(why, "'since' is given twice");
	assert_int_equal(httphead_attach_query("cols=0", &q, &why), -1);
	assert_string_equal(why, "'cols' must be an integer from 1 to 10000");
	assert_int_equal(httphead_attach_query("rows=10001", &q, &why), -1);
	assert_string_equal(why, "'rows' must be an integer from 1 to 10000");
	assert_int_equal(httphead_attach_query("rows=10000", &q, &why), 0);
	assert_int_equal(q.rows, 10000);
	/* An encoded key is the key; a long unknown one is ignored. */
	assert_int_equal(httphead_attach_query("%73ince=5", &q, &why), 0);
	assert_int_equal(q.since, 5);
	assert_int_equal(httphead_attach_query("averyveryverylongparameter=1",
	    &q, &why), 0);
	/* One parameter at a time, as a worker gets them from its library. */
	httphead_attach_init(&q);
	assert_int_equal(httphead_attach_param(&q, "since", "7", &why), 0);
	assert_int_equal(httphead_attach_param(&q, "other", NULL, &why), 0);
	assert_int_equal(httphead_attach_param(&q, "since", "7", &why), -1);
	assert_int_equal(q.since, 7);
}

static void
test_path_decoding(void **state)
{
	static const struct {
		const char	*target;
		const char	*path;	/* NULL: BAD */
	} t[] = {
		{ "/", "/" },
		{ "/a%20b", "/a b" },
		{ "/%41%62%7e", "/Ab~" },
		{ "/%c3%A9", "/\xc3\xa9" },
		{ "/a+b", "/a+b" },
		{ "/a%2Bb", "/a+b" },
		{ "/a%2Fb", "/a/b" },
		{ "/a%3Fb?c", "/a?b" },
		{ "/a%0a", "/a\n" },
		{ "/.well-known", "/.well-known" },
		{ "/a/..b/c..", "/a/..b/c.." },
		{ "/a/.../b", "/a/.../b" },
		{ "/a/", "/a/" },
		{ "/a%00", NULL },
		{ "/a%", NULL },
		{ "/a%2", NULL },
		{ "/a%2g", NULL },
		{ "/a%g2", NULL },
		{ "/a%%20", NULL },
		{ "/..", NULL },
		{ "/.", NULL },
		{ "/../x", NULL },
		{ "/./x", NULL },
		{ "/a/..", NULL },
		{ "/a/.", NULL },
		{ "/a/../b", NULL },
		{ "/a/./b", NULL },
		{ "/a/..?q", NULL },
		{ "//", NULL },
		{ "//a", NULL },
		{ "/a//b", NULL },
		{ "/a/b//", NULL },
		{ "/%2e%2e/x", NULL },
		{ "/a/%2E", NULL },
		{ "/a/.%2e", NULL },
		{ "/a%2f%2fb", NULL },
		{ "/a%2f..", NULL },
		{ "/%2F", NULL },
	};
	char	req[256];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: h\r\n\r\n",
		    t[i].target);
		if (t[i].path == NULL) {
			if (parse(req) != HTTPHEAD_BAD)
				fail_msg("not BAD: %s", t[i].target);
			continue;
		}
		if (parse(req) != HTTPHEAD_OK)
			fail_msg("not OK: %s: %s", t[i].target, P.why);
		assert_string_equal(P.h.path, t[i].path);
		assert_string_equal(P.h.target, t[i].target);
	}
	parse("GET /a%zz HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_string_equal(P.why, "request path has invalid escapes");
	parse("GET /a/../b HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_string_equal(P.why, "request path has dot segments");
	parse("GET /a//b HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_string_equal(P.why, "request path has empty segments");
}

static void
test_path_length(void **state)
{
	char	req[4096], *p;
	size_t	plen = sizeof(P.h.path) - 1, i;

	(void)state;
	/* The longest path that fits, with room for the NUL. */
	p = req + sprintf(req, "GET /");
	memset(p, 'a', plen - 1);
	p += plen - 1;
	strcpy(p, "?q=1 HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_int_equal(parse(req), HTTPHEAD_OK);
	assert_int_equal(strlen(P.h.path), plen);
	assert_string_equal(P.h.query, "q=1");
	/* One more byte does not fit. */
	p = req + sprintf(req, "GET /");
	memset(p, 'a', plen);
	p += plen;
	strcpy(p, " HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_int_equal(parse(req), HTTPHEAD_BAD);
	assert_string_equal(P.why, "request path too long");
	/* Escapes count once decoded: 3 * 1023 raw bytes still fit. */
	p = req + sprintf(req, "GET /");
	for (i = 0; i < plen - 1; i++)
		p += sprintf(p, "%%41");
	strcpy(p, " HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_int_equal(parse(req), HTTPHEAD_OK);
	assert_int_equal(strlen(P.h.path), plen);
	assert_int_equal(P.h.path[plen - 1], 'A');
}

static void
test_query_in_target(void **state)
{
	(void)state;
	assert_int_equal(parse("GET /p HTTP/1.1\r\nHost: h\r\n\r\n"),
	    HTTPHEAD_OK);
	assert_string_equal(P.h.query, "");
	assert_int_equal(parse("GET /p? HTTP/1.1\r\nHost: h\r\n\r\n"),
	    HTTPHEAD_OK);
	assert_string_equal(P.h.path, "/p");
	assert_string_equal(P.h.query, "");
	assert_int_equal(parse("GET /p?a=%zz/..//?b HTTP/1.1\r\nHost: h\r\n"
	    "\r\n"), HTTPHEAD_OK);
	assert_string_equal(P.h.path, "/p");
	assert_string_equal(P.h.query, "a=%zz/..//?b");
	assert_string_equal(P.h.target, "/p?a=%zz/..//?b");
	assert_int_equal(parse("GET /?x HTTP/1.1\r\nHost: h\r\n\r\n"),
	    HTTPHEAD_OK);
	assert_string_equal(P.h.path, "/");
	assert_string_equal(P.h.query, "x");
}

static void
test_unescape(void **state)
{
	char	out[8];

	(void)state;
	assert_int_equal(httphead_unescape("a%41b", 5, out, sizeof(out)), 3);
	assert_string_equal(out, "aAb");
	/* srclen is honoured: src need not be terminated. */
	assert_int_equal(httphead_unescape("abcdef", 2, out, sizeof(out)), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(httphead_unescape("%4", 2, out, sizeof(out)), -1);
	assert_int_equal(httphead_unescape("%41", 2, out, sizeof(out)), -1);
	assert_int_equal(httphead_unescape("%", 1, out, sizeof(out)), -1);
	assert_int_equal(httphead_unescape("%00", 3, out, sizeof(out)), -1);
	assert_int_equal(httphead_unescape("a\0b", 3, out, sizeof(out)), -1);
	assert_int_equal(httphead_unescape("%ff%FF", 6, out, sizeof(out)), 2);
	assert_memory_equal(out, "\xff\xff", 3);
	assert_int_equal(httphead_unescape("a+b", 3, out, sizeof(out)), 3);
	assert_string_equal(out, "a+b");
	/* Room: seven bytes and a NUL fit, eight do not. */
	assert_int_equal(httphead_unescape("1234567", 7, out, sizeof(out)), 7);
	assert_int_equal(httphead_unescape("12345678", 8, out, sizeof(out)),
	    -1);
	assert_string_equal(out, "");
	assert_int_equal(httphead_unescape("%31%32%33%34%35%36%37", 21, out,
	    sizeof(out)), 7);
	assert_string_equal(out, "1234567");
	assert_int_equal(httphead_unescape("", 0, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(httphead_unescape("", 0, out, 1), 0);
	assert_int_equal(httphead_unescape("", 0, out, 0), -1);
	assert_int_equal(httphead_unescape("a", 1, out, 1), -1);
}

static void
test_query(void **state)
{
	static const struct {
		const char	*query;
		const char	*key;
		int		 ret;
		const char	*val;
	} t[] = {
		{ "a=1&b=2", "a", 1, "1" },
		{ "a=1&b=2", "b", 1, "2" },
		{ "a=1&b=2", "c", -1, "" },
		{ "a=1&b=2", "", -1, "" },
		{ "", "a", -1, "" },
		{ "a", "a", 0, "" },
		{ "x&a&b=1", "a", 0, "" },
		{ "a=", "a", 0, "" },
		{ "a=1&a=2", "a", 1, "1" },
		{ "a&a=2", "a", 0, "" },
		{ "a=%zz&a=2", "a", -2, "" },
		{ "a=%00", "a", -2, "" },
		{ "a=%4", "a", -2, "" },
		{ "q=hello+world%21", "q", 12, "hello world!" },
		{ "q=a%2Bb", "q", 3, "a+b" },
		{ "q=a%26b%3Dc", "q", 5, "a&b=c" },
		{ "q=b=c", "q", 3, "b=c" },
		{ "my%20key=1", "my key", 1, "1" },
		{ "my+key=2", "my key", 1, "2" },
		{ "%61=3", "a", 1, "3" },
		{ "ab=1&a=2", "a", 1, "2" },
		{ "a=1", "ab", -1, "" },
		{ "A=1&a=2", "a", 1, "2" },
		{ "x%zz=1&a=2", "a", 1, "2" },
		{ "%00=1&a=2", "a", 1, "2" },
		{ "&&a=1&", "a", 1, "1" },
		{ "=1&a=2", "a", 1, "2" },
		{ "b=1&=2", "", 1, "2" },
		{ "a=/x/../y?z", "a", 9, "/x/../y?z" },
		{ "a=%c3%a9", "a", 2, "\xc3\xa9" },
	};
	char	out[32];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(out, 'X', sizeof(out));
		if (httphead_query(t[i].query, t[i].key, out, sizeof(out)) !=
		    t[i].ret)
			fail_msg("case %zu: %s / %s", i, t[i].query, t[i].key);
		assert_string_equal(out, t[i].val);
	}
	/* Room for the value and its NUL, and one byte less. */
	assert_int_equal(httphead_query("a=abc", "a", out, 4), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(httphead_query("a=abc", "a", out, 3), -2);
	assert_int_equal(httphead_query("a=%41%42%43", "a", out, 4), 3);
	assert_string_equal(out, "ABC");
	assert_int_equal(httphead_query("a", "a", out, 1), 0);
	assert_int_equal(httphead_query("a", "a", out, 0), -2);
	assert_int_equal(httphead_query("a=1", "a", NULL, 0), -2);
	assert_int_equal(httphead_query("b=1", "a", NULL, 0), -1);
	assert_int_equal(httphead_query(NULL, "a", out, sizeof(out)), -1);
}

static void
test_query_from_parse(void **state)
{
	char	out[64];

	(void)state;
	assert_int_equal(parse("GET /v1/sessions/s1/attach?since=42&tty=1"
	    "&name=a+b%2Fc HTTP/1.1\r\nHost: h\r\n\r\n"), HTTPHEAD_OK);
	assert_int_equal(httphead_query(P.h.query, "since", out,
	    sizeof(out)), 2);
	assert_string_equal(out, "42");
	assert_int_equal(httphead_query(P.h.query, "name", out,
	    sizeof(out)), 5);
	assert_string_equal(out, "a b/c");
	assert_int_equal(httphead_query(P.h.query, "tt", out, sizeof(out)),
	    -1);
}

static void
test_routes(void **state)
{
	static const struct {
		const char		*method;
		const char		*path;
		enum httphead_route	 want;
		const char		*ref;
	} t[] = {
		{ "GET", "/v1/health", ROUTE_HEALTH, "" },
		{ "POST", "/v1/exec", ROUTE_EXEC, "" },
		{ "GET", "/v1/exec/stream", ROUTE_EXEC_STREAM, "" },
		{ "GET", "/v1/sessions", ROUTE_SESSIONS_LIST, "" },
		{ "POST", "/v1/sessions", ROUTE_SESSIONS_CREATE, "" },
		{ "GET", "/v1/sessions/abc", ROUTE_SESSION_GET, "abc" },
		{ "DELETE", "/v1/sessions/s-1.x_y", ROUTE_SESSION_DELETE,
		    "s-1.x_y" },
		{ "POST", "/v1/sessions/abc/signal", ROUTE_SESSION_SIGNAL,
		    "abc" },
		{ "POST", "/v1/sessions/abc/input", ROUTE_SESSION_INPUT,
		    "abc" },
		{ "POST", "/v1/sessions/abc/resize", ROUTE_SESSION_RESIZE,
		    "abc" },
		{ "GET", "/v1/sessions/abc/log", ROUTE_SESSION_LOG, "abc" },
		{ "GET", "/v1/sessions/abc/attach", ROUTE_SESSION_ATTACH,
		    "abc" },
		{ "GET", "/v1/sessions/abc/wait", ROUTE_SESSION_WAIT, "abc" },
		{ "POST", "/v1/sessions/abc/wait", ROUTE_BAD_METHOD, "abc" },
		/* Ref characters are the caller's to judge. */
		{ "GET", "/v1/sessions/a b?\xff", ROUTE_SESSION_GET,
		    "a b?\xff" },
		{ "GET", "/v1/sessions/./log", ROUTE_SESSION_LOG, "." },
		{ "GET", "/v1/sessions/log", ROUTE_SESSION_GET, "log" },
		{ "GET", "/v1/sessions/x/log", ROUTE_SESSION_LOG, "x" },
	};
	char	ref[HTTPHEAD_REF_MAX];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(ref, 'X', sizeof(ref));
		if (httphead_route(t[i].method, t[i].path, ref, sizeof(ref)) !=
		    t[i].want)
			fail_msg("case %zu: %s %s", i, t[i].method, t[i].path);
		assert_string_equal(ref, t[i].ref);
	}
}

static void
test_route_bad_method(void **state)
{
	static const struct {
		const char	*method;
		const char	*path;
	} t[] = {
		{ "HEAD", "/v1/health" },
		{ "POST", "/v1/health" },
		{ "get", "/v1/health" },
		{ "GETX", "/v1/health" },
		{ "", "/v1/health" },
		{ "GET", "/v1/exec" },
		{ "PUT", "/v1/exec" },
		{ "POST", "/v1/exec/stream" },
		{ "HEAD", "/v1/exec/stream" },
		{ "DELETE", "/v1/sessions" },
		{ "PUT", "/v1/sessions" },
		{ "HEAD", "/v1/sessions" },
		{ "POST", "/v1/sessions/abc" },
		{ "PATCH", "/v1/sessions/abc" },
		{ "HEAD", "/v1/sessions/abc" },
		{ "GET", "/v1/sessions/abc/signal" },
		{ "GET", "/v1/sessions/abc/input" },
		{ "DELETE", "/v1/sessions/abc/resize" },
		{ "POST", "/v1/sessions/abc/log" },
		{ "POST", "/v1/sessions/abc/attach" },
		{ "HEAD", "/v1/sessions/abc/attach" },
	};
	char	ref[HTTPHEAD_REF_MAX];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (httphead_route(t[i].method, t[i].path, ref, sizeof(ref)) !=
		    ROUTE_BAD_METHOD)
			fail_msg("case %zu: %s %s", i, t[i].method, t[i].path);
	}
}

static void
test_route_none(void **state)
{
	static const char *paths[] = {
		"", "/", "/v1", "/v1/", "/v2/health", "/v1/health/",
		"/v1/healthz", "/v1/Health", "/V1/health", "v1/health",
		"/v1/health?x", "/v1/exec/", "/v1/exec/streams",
		"/v1/exec/stream/", "/v1/sessions/", "/v1/sessionsx",
		"/v1/sessions//log", "/v1/sessions/abc/",
		"/v1/sessions/abc/log/",
		"/v1/sessions/abc/LOG", "/v1/sessions/abc/logs",
		"/v1/sessions/abc/x/log", "/v1/sessions/abc/log/x",
		"/v1/sessions/abc/signal/", "//v1/health", "/v1//health",
	};
	char	ref[HTTPHEAD_REF_MAX];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (httphead_route("GET", paths[i], ref, sizeof(ref)) !=
		    ROUTE_NONE || httphead_route("POST", paths[i], ref,
		    sizeof(ref)) != ROUTE_NONE)
			fail_msg("case %zu: %s", i, paths[i]);
		assert_string_equal(ref, "");
	}
	assert_int_equal(httphead_route(NULL, "/v1/health", ref, sizeof(ref)),
	    ROUTE_NONE);
	assert_int_equal(httphead_route("GET", NULL, ref, sizeof(ref)),
	    ROUTE_NONE);
}

static void
test_route_ref_size(void **state)
{
	char	path[512], ref[HTTPHEAD_REF_MAX], small[4];
	size_t	n;

	(void)state;
	/* HTTPHEAD_REF_MAX - 1 bytes and the NUL fit exactly. */
	n = (size_t)snprintf(path, sizeof(path), "/v1/sessions/");
	memset(path + n, 'r', HTTPHEAD_REF_MAX - 1);
	strcpy(path + n + HTTPHEAD_REF_MAX - 1, "/attach");
	assert_int_equal(httphead_route("GET", path, ref, sizeof(ref)),
	    ROUTE_SESSION_ATTACH);
	assert_int_equal(strlen(ref), HTTPHEAD_REF_MAX - 1);
	assert_memory_equal(ref, path + n, HTTPHEAD_REF_MAX - 1);
	/* One more does not: empty ref, same route. */
	memset(path + n, 'r', HTTPHEAD_REF_MAX);
	strcpy(path + n + HTTPHEAD_REF_MAX, "/attach");
	memset(ref, 'X', sizeof(ref));
	assert_int_equal(httphead_route("GET", path, ref, sizeof(ref)),
	    ROUTE_SESSION_ATTACH);
	assert_string_equal(ref, "");
	path[n + HTTPHEAD_REF_MAX] = '\0';
	memset(ref, 'X', sizeof(ref));
	assert_int_equal(httphead_route("DELETE", path, ref, sizeof(ref)),
	    ROUTE_SESSION_DELETE);
	assert_string_equal(ref, "");

	assert_int_equal(httphead_route("GET", "/v1/sessions/abc", small,
	    sizeof(small)), ROUTE_SESSION_GET);
	assert_string_equal(small, "abc");
	assert_int_equal(httphead_route("GET", "/v1/sessions/abcd", small,
	    sizeof(small)), ROUTE_SESSION_GET);
	assert_string_equal(small, "");
	assert_int_equal(httphead_route("POST", "/v1/sessions/abcd/input",
	    small, sizeof(small)), ROUTE_SESSION_INPUT);
	assert_string_equal(small, "");
	/* No room at all is still routed, and nothing is written. */
	assert_int_equal(httphead_route("GET", "/v1/sessions/a/log", NULL, 0),
	    ROUTE_SESSION_LOG);
	small[0] = 'X';
	assert_int_equal(httphead_route("GET", "/v1/sessions/a/log", small,
	    0), ROUTE_SESSION_LOG);
	assert_int_equal(small[0], 'X');
}

static void
test_parse_then_route(void **state)
{
	char	ref[HTTPHEAD_REF_MAX];

	(void)state;
	/* Escapes in the ref are decoded before routing. */
	assert_int_equal(parse("POST /v1/sessions/s%2D1/resize?x=1 HTTP/1.1\r\n"
	    "Host: h\r\nContent-Length: 2\r\n\r\n{}"), HTTPHEAD_OK);
	assert_int_equal(httphead_route(P.h.method, P.h.path, ref,
	    sizeof(ref)), ROUTE_SESSION_RESIZE);
	assert_string_equal(ref, "s-1");
	assert_int_equal(parse("GET /v1/exec/stream HTTP/1.1\r\nHost: h\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n\r\n"), HTTPHEAD_OK);
	assert_int_equal(P.h.upgrade, 1);
	assert_int_equal(httphead_route(P.h.method, P.h.path, ref,
	    sizeof(ref)), ROUTE_EXEC_STREAM);
	assert_string_equal(httphead_field(&P.h, "sec-websocket-key"),
	    "dGhlIHNhbXBsZSBub25jZQ==");
}

/* Written out again: the same request, without what carries the token. */
static void
test_without_token(void **state)
{
	char	out[512];
	size_t	n;

	(void)state;
	assert_int_equal(parse("GET /v1/sessions/a/attach?since=3&"
	    "access_token=SECRET&cols=80 HTTP/1.1\r\nHost: h\r\n"
	    "authorization: Bearer SECRET\r\nUpgrade:websocket\r\n\r\n"),
	    HTTPHEAD_OK);
	n = httphead_without_token(&P.h, out, sizeof(out));
	assert_string_equal(out, "GET /v1/sessions/a/attach?since=3&cols=80 "
	    "HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n");
	assert_int_equal(n, strlen(out));
	/* An escaped name is the same parameter; a lone one leaves no '?'. */
	assert_int_equal(parse("GET /v1/exec/stream?access%5Ftoken=S HTTP/1.0"
	    "\r\n\r\n"), HTTPHEAD_OK);
	httphead_without_token(&P.h, out, sizeof(out));
	assert_string_equal(out, "GET /v1/exec/stream HTTP/1.0\r\n\r\n");
	assert_int_equal(parse("GET /x?access_token&a=1&&access_token=2 "
	    "HTTP/1.1\r\nHost: h\r\n\r\n"), HTTPHEAD_OK);
	httphead_without_token(&P.h, out, sizeof(out));
	assert_string_equal(out, "GET /x?a=1 HTTP/1.1\r\nHost: h\r\n\r\n");
	/* Too small an output: 0, never a part. */
	assert_int_equal(httphead_without_token(&P.h, out, 10), 0);
	assert_int_equal(httphead_without_token(&P.h, out, 0), 0);
}

/*
 * Every byte in each place the head's character classes judge, against the
 * classes as RFC 9110 writes them: tchar in the method (upper case only)
 * and a field name, VCHAR in the target (no '#'), VCHAR, obs-text, SP and
 * HTAB in a field value.
 */
static int
rfc_tchar(int c)
{
	return ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	    (c >= 'a' && c <= 'z') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL));
}

static int
rfc_vchar(int c)
{
	return (c >= 0x21 && c <= 0x7e);
}

static void
test_every_byte_class(void **state)
{
	char	buf[128];
	int	c, n;

	(void)state;
	for (c = 0; c < 256; c++) {
		n = snprintf(buf, sizeof(buf),
		    "G%cT / HTTP/1.1\r\nHost: h\r\n\r\n", c);
		assert_int_equal(parse_n(buf, n, LIMIT) == HTTPHEAD_OK,
		    rfc_tchar(c) && !(c >= 'a' && c <= 'z'));
		n = snprintf(buf, sizeof(buf),
		    "GET /a%c41 HTTP/1.1\r\nHost: h\r\n\r\n", c);
		assert_int_equal(parse_n(buf, n, LIMIT) == HTTPHEAD_OK,
		    rfc_vchar(c) && c != '#');
		n = snprintf(buf, sizeof(buf),
		    "GET / HTTP/1.1\r\nHost: h\r\n%cX: v\r\n\r\n", c);
		assert_int_equal(parse_n(buf, n, LIMIT) == HTTPHEAD_OK,
		    rfc_tchar(c));
		n = snprintf(buf, sizeof(buf),
		    "GET / HTTP/1.1\r\nHost: h\r\nX: a%cb\r\n\r\n", c);
		assert_int_equal(parse_n(buf, n, LIMIT) == HTTPHEAD_OK,
		    rfc_vchar(c) || c >= 0x80 || c == ' ' || c == '\t');
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_get_valid, reset),
		cmocka_unit_test_teardown(test_post_content_length, reset),
		cmocka_unit_test_teardown(test_partial_every_split, reset),
		cmocka_unit_test_teardown(test_pipelined, reset),
		cmocka_unit_test_teardown(test_bad_request_line, reset),
		cmocka_unit_test_teardown(test_methods, reset),
		cmocka_unit_test_teardown(test_versions, reset),
		cmocka_unit_test_teardown(test_line_endings, reset),
		cmocka_unit_test_teardown(test_bad_headers, reset),
		cmocka_unit_test_teardown(test_header_values, reset),
		cmocka_unit_test_teardown(test_nul_and_early_bad, reset),
		cmocka_unit_test_teardown(test_every_byte_class, reset),
		cmocka_unit_test_teardown(test_too_large, reset),
		cmocka_unit_test_teardown(test_field_count, reset),
		cmocka_unit_test_teardown(test_content_length, reset),
		cmocka_unit_test_teardown(test_transfer_encoding, reset),
		cmocka_unit_test_teardown(test_keep_alive, reset),
		cmocka_unit_test_teardown(test_upgrade, reset),
		cmocka_unit_test_teardown(test_host, reset),
		cmocka_unit_test_teardown(test_authorization_once, reset),
		cmocka_unit_test_teardown(test_attach_query, reset),
		cmocka_unit_test_teardown(test_path_decoding, reset),
		cmocka_unit_test_teardown(test_path_length, reset),
		cmocka_unit_test_teardown(test_query_in_target, reset),
		cmocka_unit_test_teardown(test_unescape, reset),
		cmocka_unit_test_teardown(test_query, reset),
		cmocka_unit_test_teardown(test_query_from_parse, reset),
		cmocka_unit_test_teardown(test_routes, reset),
		cmocka_unit_test_teardown(test_route_bad_method, reset),
		cmocka_unit_test_teardown(test_route_none, reset),
		cmocka_unit_test_teardown(test_route_ref_size, reset),
		cmocka_unit_test_teardown(test_parse_then_route, reset),
		cmocka_unit_test_teardown(test_without_token, reset),
	};

	return (cmocka_run_group_tests(tests, NULL, reset));
}
