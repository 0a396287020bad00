/*
 * utf8_test.c: unit tests for making bytes valid UTF-8 (src/common/utf8.c):
 * utf8_copy, through which every error message quoting a client goes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define T_BYTES(s)	(s), (sizeof(s) - 1)

static void
test_copy_valid(void **state)
{
	char	out[64];

	(void)state;
	assert_int_equal(utf8_copy(out, sizeof(out), T_BYTES("abc")), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(utf8_copy(out, sizeof(out),
	    T_BYTES("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80")), 9);
	assert_string_equal(out, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	assert_int_equal(utf8_copy(out, sizeof(out), "", 0), 0);
	assert_string_equal(out, "");
}

static void
test_copy_replaces(void **state)
{
	char	out[64];

	(void)state;
	/* A lone continuation, a bad lead, a truncated sequence, NUL. */
	utf8_copy(out, sizeof(out), T_BYTES("a\x80" "b\xff" "c\xe2\x82"));
	assert_string_equal(out, "a\xef\xbf\xbd" "b\xef\xbf\xbd"
	    "c\xef\xbf\xbd");
	utf8_copy(out, sizeof(out), T_BYTES("x\0y"));
	assert_string_equal(out, "x\xef\xbf\xbdy");
	/* Surrogates and overlongs are ill-formed too. */
	utf8_copy(out, sizeof(out), T_BYTES("\xed\xa0\x80"));
	assert_string_equal(out, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	utf8_copy(out, sizeof(out), T_BYTES("\xc0\xaf"));
	assert_string_equal(out, "\xef\xbf\xbd\xef\xbf\xbd");
	/* The same as utf8_sanitize, which output goes through. */
	{
		const char	 in[] = "ok\xf4\x90\x80\x80\xe0\x80?";
		size_t		 len;
		char		*s;

		s = utf8_sanitize((const unsigned char *)in, sizeof(in) - 1,
		    &len);
		assert_non_null(s);
		utf8_copy(out, sizeof(out), in, sizeof(in) - 1);
		assert_string_equal(out, s);
		free(s);
	}
}

static void
test_copy_cuts_at_boundary(void **state)
{
	char	out[5];

	(void)state;
	/* "ab" + é + é: only "ab" and one é fit in 4 bytes + NUL. */
	assert_int_equal(utf8_copy(out, sizeof(out),
	    T_BYTES("ab\xc3\xa9\xc3\xa9")), 4);
	assert_string_equal(out, "ab\xc3\xa9");
	/* A replacement that does not fit is left out whole. */
	assert_int_equal(utf8_copy(out, sizeof(out), T_BYTES("abc\xff")), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(utf8_copy(out, 1, T_BYTES("abc")), 0);
	assert_string_equal(out, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_valid),
		cmocka_unit_test(test_copy_replaces),
		cmocka_unit_test(test_copy_cuts_at_boundary),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
