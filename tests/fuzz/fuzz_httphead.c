/*
 * fuzz_httphead.c: libFuzzer target for the request head parser.
 *
 * Parses a copy of the input (of exactly its size, so any read past len is
 * caught), checks the parser's promises, and on success exercises the field
 * lookup, the query decoder and the router on what it produced.
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/common \
 *	    src/common/httphead.c tests/fuzz/fuzz_httphead.c -o fuzz_httphead
 *	./fuzz_httphead tests/fuzz/corpus/httphead
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httphead.h"

#define FUZZ_LIMIT	8192

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
fuzz_check(int ok)
{
	if (!ok)
		abort();
}

/* Every string the parser hands back must lie in the head and be ended. */
static void
fuzz_inside(const char *buf, size_t head_len, const char *s)
{
	fuzz_check(s >= buf && s < buf + head_len);
	fuzz_check(memchr(s, '\0', buf + head_len - s) != NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char	*keys[] = { "", "a", "since", "tty", "q" };
	static const char	*names[] = { "host", "connection", "upgrade",
	    "content-length", "transfer-encoding", "sec-websocket-key" };
	struct httphead		 h;
	struct httphead_attach	 aq;
	enum httphead_result	 r;
	enum httphead_route	 route;
	char			*buf, out[64], ref[HTTPHEAD_REF_MAX];
	const char		*why, *v;
	size_t			 head_len, i, limit;
	int			 n;

	buf = malloc(size > 0 ? size : 1);
	if (buf == NULL)
		return (0);
	memcpy(buf, data, size);

	/* Vary the limit too, from the input's first byte. */
	limit = FUZZ_LIMIT;
	if (size > 0 && data[0] & 1)
		limit = size / 2;

	head_len = 0;
	why = NULL;
	r = httphead_parse(buf, size, limit, &h, &head_len, &why);
	if (r != HTTPHEAD_OK) {
		fuzz_check(why != NULL);
		fuzz_check(memcmp(buf, data, size) == 0);
		free(buf);
		return (0);
	}

	fuzz_check(why == NULL);
	fuzz_check(head_len >= 4 && head_len <= size && head_len <= limit);
	fuzz_check(memcmp(data + head_len - 4, "\r\n\r\n", 4) == 0);
	fuzz_check(memcmp(buf + head_len, data + head_len,
	    size - head_len) == 0);
	fuzz_check(h.minor == 0 || h.minor == 1);
	fuzz_check(h.nfields <= HTTPHEAD_MAX_HEADERS);
	fuzz_check(h.content_length >= -1);
	fuzz_check(!(h.chunked && h.content_length != -1));
	fuzz_check(h.path[0] == '/');
	fuzz_check(strstr(h.path, "//") == NULL);
	fuzz_check(strstr(h.path, "/./") == NULL);
	fuzz_check(strstr(h.path, "/../") == NULL);
	fuzz_inside(buf, head_len, h.method);
	fuzz_inside(buf, head_len, h.target);
	fuzz_check(h.query[0] == '\0' ||
	    (h.query > h.target && h.query[-1] == '?'));
	for (i = 0; i < h.nfields; i++) {
		fuzz_inside(buf, head_len, h.fields[i].name);
		fuzz_inside(buf, head_len, h.fields[i].value);
		fuzz_check(h.fields[i].name[0] != '\0');
	}

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((v = httphead_field(&h, names[i])) != NULL)
			fuzz_inside(buf, head_len, v);
	}
	if (h.nfields > 0)
		fuzz_check(httphead_field(&h, h.fields[0].name) ==
		    h.fields[0].value);

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		n = httphead_query(h.query, keys[i], out, sizeof(out));
		fuzz_check(n >= -2 && n < (int)sizeof(out));
		if (n >= 0)
			fuzz_check(strlen(out) == (size_t)n);
	}
	/* A tiny output buffer must fail cleanly, never overflow. */
	n = httphead_query(h.query, "a", out, 2);
	fuzz_check(n >= -2 && n <= 1);

	/* The attach query: within its limits, or refused with a reason. */
	why = NULL;
	if (httphead_attach_query(h.query, &aq, &why) == 0) {
		fuzz_check(why == NULL);
		fuzz_check(aq.since_set || aq.since == 0);
		fuzz_check(aq.since <= HTTPHEAD_SINCE_MAX);
		fuzz_check(aq.cols >= 0 && aq.cols <= 10000);
		fuzz_check(aq.rows >= 0 && aq.rows <= 10000);
		fuzz_check(aq.readonly == 0 || aq.readonly == 1);
		/* Each value is the one httphead_query() finds. */
		if (aq.since_set) {
			fuzz_check(httphead_query(h.query, "since", out,
			    sizeof(out)) > 0);
			fuzz_check(strtoull(out, NULL, 10) == aq.since);
		} else
			fuzz_check(httphead_query(h.query, "since", out,
			    sizeof(out)) == -1);
	} else
		fuzz_check(why != NULL && why[0] == '\'');

	route = httphead_route(h.method, h.path, ref, sizeof(ref));
	fuzz_check(route >= ROUTE_NONE && route < ROUTE_COUNT);
	fuzz_check(strlen(ref) < sizeof(ref) && strchr(ref, '/') == NULL);
	route = httphead_route(h.method, h.path, ref, 4);
	fuzz_check(strlen(ref) < 4);

	free(buf);
	return (0);
}
