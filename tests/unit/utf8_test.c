/*
 * utf8_test.c: unit tests for making bytes valid UTF-8 (src/common/utf8.c):
 * utf8_copy, through which every error message quoting a client goes, and
 * utf8_valid_len, by which output becomes JSON (outjson.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

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
	/* One U+FFFD per maximal subpart: F4 90 is ill-formed at its
	 * second byte, E0 80 too (Unicode 3.9, table 3-8). */
	utf8_copy(out, sizeof(out), T_BYTES("ok\xf4\x90\x80\x80\xe0\x80?"));
	assert_string_equal(out, "ok\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd?");
	utf8_copy(out, sizeof(out), T_BYTES("\xf0\x9f\x98" "a"));
	assert_string_equal(out, "\xef\xbf\xbd" "a");
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

static void
test_valid_len(void **state)
{
	const struct {
		const char	*in;
		size_t		 len, valid, subpart;	/* subpart: when 0 */
	} cases[] = {
		{ T_BYTES("a"), 1, 1 },
		{ T_BYTES("\x7f"), 1, 1 },
		{ T_BYTES("\xc2\x80"), 2, 1 },
		{ T_BYTES("\xdf\xbf"), 2, 1 },
		{ T_BYTES("\xe0\xa0\x80"), 3, 1 },
		{ T_BYTES("\xed\x9f\xbf"), 3, 1 },	/* U+D7FF */
		{ T_BYTES("\xef\xbf\xbf"), 3, 1 },
		{ T_BYTES("\xf0\x90\x80\x80"), 4, 1 },
		{ T_BYTES("\xf4\x8f\xbf\xbf"), 4, 1 },	/* U+10FFFF */
		/* Ill-formed: the bytes one U+FFFD stands for. */
		{ T_BYTES("\x80"), 0, 1 },
		{ T_BYTES("\xc0\x80"), 0, 1 },	/* overlong lead */
		{ T_BYTES("\xc1\xbf"), 0, 1 },
		{ T_BYTES("\xe0\x9f\x80"), 0, 1 },	/* overlong */
		{ T_BYTES("\xed\xa0\x80"), 0, 1 },	/* surrogate */
		{ T_BYTES("\xf0\x8f\x80\x80"), 0, 1 },	/* overlong */
		{ T_BYTES("\xf4\x90\x80\x80"), 0, 1 },	/* above U+10FFFF */
		{ T_BYTES("\xf5\x80\x80\x80"), 0, 1 },
		{ T_BYTES("\xff"), 0, 1 },
		{ T_BYTES("\xe2\x82"), 0, 2 },	/* truncated */
		{ T_BYTES("\xe2\x82" "a"), 0, 2 },
		{ T_BYTES("\xf0\x9f\x98"), 0, 3 },
		{ T_BYTES("\xf0\x9f\x98" "a"), 0, 3 },
	};
	size_t	i, sub;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sub = 99;
		assert_int_equal(utf8_valid_len((const unsigned char *)
		    cases[i].in, cases[i].len, &sub), cases[i].valid);
		if (cases[i].valid == 0)
			assert_int_equal(sub, cases[i].subpart);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_valid),
		cmocka_unit_test(test_copy_replaces),
		cmocka_unit_test(test_copy_cuts_at_boundary),
		cmocka_unit_test(test_valid_len),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
