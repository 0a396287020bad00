/*
 * base64_test.c: unit tests for the strict base64 check
 * (src/common/base64.c) that POST .../input's dataBase64 passes first.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base64.h"

#define T_VALID(s)	assert_int_equal(base64_valid((s), strlen(s)), 1)
#define T_INVALID(s)	assert_int_equal(base64_valid((s), strlen(s)), 0)

static void
test_valid(void **state)
{
	(void)state;
	T_VALID("");
	T_VALID("YQ==");		/* "a" */
	T_VALID("YWI=");		/* "ab" */
	T_VALID("YWJj");		/* "abc" */
	T_VALID("YQ");			/* padding optional */
	T_VALID("YWI");
	T_VALID("AAECAwQFBgcICQoLDA0ODw+/");
	T_VALID("AAECAwQFBgcICQoLDA0ODw-_");	/* URL-safe */
	T_VALID("SGVsbG8sIHdvcmxkIQ==");
}

static void
test_invalid(void **state)
{
	(void)state;
	T_INVALID("Y");			/* one character over */
	T_INVALID("YWJjZ");
	T_INVALID("YQ=");		/* padded, not a multiple of 4 */
	T_INVALID("Y===");		/* three '=' */
	T_INVALID("====");
	T_INVALID("YQ==YQ==");		/* data after padding */
	T_INVALID("YW=j");
	T_INVALID("YW J");		/* space */
	T_INVALID("YWJj\n");
	T_INVALID("YW.j");
	T_INVALID("YW*j");
	T_INVALID("\xc3\xa9YWI");
	/* A NUL inside: the length is the caller's, not strlen's. */
	assert_int_equal(base64_valid("YW\0j", 4), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
