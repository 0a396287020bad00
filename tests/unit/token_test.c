/*
 * token_test.c: unit tests for the token compare (src/common/token.c)
 * that every request on TCP passes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "token.h"

static const char	token[] =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static void
test_equal(void **state)
{
	char	copy[sizeof(token)];

	(void)state;
	memcpy(copy, token, sizeof(token));
	assert_int_equal(token_equal(copy, strlen(copy), token,
	    strlen(token)), 1);
	assert_int_equal(token_equal("", 0, "", 0), 1);
}

static void
test_one_byte_off_anywhere(void **state)
{
	char	w[sizeof(token)];
	size_t	i, n = strlen(token);
	int	bit;

	(void)state;
	for (i = 0; i < n; i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(w, token, sizeof(token));
			w[i] ^= (char)(1 << bit);
			assert_int_equal(token_equal(w, n, token, n), 0);
		}
	}
}

static void
test_lengths(void **state)
{
	size_t	n = strlen(token);

	(void)state;
	/* A prefix, the token and more, nothing. */
	assert_int_equal(token_equal(token, n - 1, token, n), 0);
	assert_int_equal(token_equal(token, 1, token, n), 0);
	assert_int_equal(token_equal("", 0, token, n), 0);
	assert_int_equal(token_equal(token, n, token, n - 1), 0);
	/* Bytes past the given length are not read as part of it. */
	assert_int_equal(token_equal("0123x", 4, "0123", 4), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_one_byte_off_anywhere),
		cmocka_unit_test(test_lengths),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
