/*
 * outjson_test.c: unit tests for output bytes as JSON string contents
 * (src/common/outjson.c).
 *
 * Fixed vectors for the escapes and the U+FFFD rule; for random bytes, the
 * length told beforehand is the length written, any piece size gives the
 * same bytes, jansson reads the result back as a valid string, and base64
 * matches libwebsockets' encoder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libwebsockets.h>

#include "outjson.h"

static uint64_t	t_rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t
t_rand(void)
{
	t_rng_state ^= t_rng_state << 13;
	t_rng_state ^= t_rng_state >> 7;
	t_rng_state ^= t_rng_state << 17;
	return ((uint32_t)t_rng_state);
}

/* The whole encoding, written in pieces of at most piece bytes. */
static char *
t_encode(const void *buf, size_t len, int base64, size_t piece,
    size_t *outlen)
{
	struct outjson	 o;
	size_t		 need = outjson_length(buf, len, base64), w = 0, n;
	char		*out = malloc(need + piece + 1);

	assert_non_null(out);
	outjson_init(&o, buf, len, base64);
	while ((n = outjson_read(&o, out + w, piece)) > 0) {
		assert_true(n <= piece);
		w += n;
		assert_true(w <= need);
	}
	assert_int_equal(w, need);
	assert_int_equal(o.off, len);
	out[w] = '\0';
	*outlen = w;
	return (out);
}

static void
t_vector(const char *in, size_t inlen, const char *want)
{
	size_t	 n;
	char	*got = t_encode(in, inlen, 0, 64, &n);

	assert_int_equal(n, strlen(want));
	assert_memory_equal(got, want, n);
	free(got);
}

static void
test_vectors(void **state)
{
	(void)state;
	t_vector("", 0, "");
	t_vector("plain text", 10, "plain text");
	t_vector("a\"b\\c/d", 7, "a\\\"b\\\\c/d");
	t_vector("\b\f\n\r\t", 5, "\\b\\f\\n\\r\\t");
	t_vector("\x00\x01\x1f\x7f", 4, "\\u0000\\u0001\\u001f\x7f");
	/* well-formed sequences pass, 4 bytes too */
	t_vector("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9,
	    "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	/* one U+FFFD per maximal subpart */
	t_vector("\xff", 1, "\xef\xbf\xbd");
	t_vector("\xe2\x82", 2, "\xef\xbf\xbd");
	t_vector("\xe2\x82x", 3, "\xef\xbf\xbdx");
	t_vector("\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	t_vector("\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd");
	t_vector("\xf4\x90\x80\x80", 4,
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

static void
test_random_text(void **state)
{
	static const size_t	 pieces[] = { OUTJSON_UNIT_MAX, 7, 13, 4096 };
	unsigned char		*in;
	char			*whole, *part, *quoted;
	size_t			 len, n, m, i, j, k;
	json_t			*js;
	json_error_t		 err;

	(void)state;
	for (i = 0; i < 300; i++) {
		len = t_rand() % 2000;
		in = malloc(len + 1);
		assert_non_null(in);
		for (j = 0; j < len; j++) {
			/* mostly ASCII and escapes, some high bytes */
			k = t_rand() % 8;
			in[j] = k < 4 ? (unsigned char)(0x20 + t_rand() % 96) :
			    k < 6 ? (unsigned char)(t_rand() % 0x20) :
			    (unsigned char)(0x80 + t_rand() % 0x80);
		}
		whole = t_encode(in, len, 0, 1 << 20, &n);
		for (k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
			part = t_encode(in, len, 0, pieces[k], &m);
			assert_int_equal(m, n);
			assert_memory_equal(part, whole, n);
			free(part);
		}
		quoted = malloc(n + 3);
		assert_non_null(quoted);
		quoted[0] = '"';
		memcpy(quoted + 1, whole, n);
		quoted[n + 1] = '"';
		js = json_loadb(quoted, n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL,
		    &err);
		assert_non_null(js);
		assert_true(json_is_string(js));
		json_decref(js);
		free(quoted);
		free(whole);
		free(in);
	}
}

static void
test_base64(void **state)
{
	unsigned char	 in[3000];
	char		*got, want[4200];
	size_t		 len, n, i;

	(void)state;
	for (i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)t_rand();
	for (len = 0; len < 40; len++) {
		got = t_encode(in, len, 1, 4, &n);
		assert_true(lws_b64_encode_string((const char *)in, (int)len,
		    want, sizeof(want)) >= 0);
		assert_int_equal(n, strlen(want));
		assert_memory_equal(got, want, n);
		free(got);
	}
	got = t_encode(in, sizeof(in) - 1, 1, 10, &n);
	assert_true(lws_b64_encode_string((const char *)in,
	    (int)sizeof(in) - 1, want, sizeof(want)) >= 0);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(got, want, n);
	free(got);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_random_text),
		cmocka_unit_test(test_base64),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
