/*
 * runas_test.c: unit tests for the policy of whom a client may run a
 * process as (src/common/runas.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "runas.h"

static void
test_root_unrestricted(void **state)
{
	struct runas_policy	p = { 0, 0, 0 };

	(void)state;
	assert_int_equal(runas_default(&p), 0);
	assert_int_equal(runas_check(&p, 0), RUNAS_OK);
	assert_int_equal(runas_check(&p, 65534), RUNAS_OK);
	assert_int_equal(runas_check(&p, 1000), RUNAS_OK);
	assert_null(runas_why(RUNAS_OK));
}

static void
test_restricted_peer(void **state)
{
	struct runas_policy	p = { 0, 1, 65534 };

	(void)state;
	/* By default as itself, the uid from the socket. */
	assert_int_equal(runas_default(&p), 65534);
	assert_int_equal(runas_check(&p, 65534), RUNAS_OK);
	assert_int_equal(runas_check(&p, 0), RUNAS_NOT_SELF);
	assert_int_equal(runas_check(&p, 1), RUNAS_NOT_SELF);
	assert_int_equal(runas_check(&p, 65533), RUNAS_NOT_SELF);
	assert_string_equal(runas_why(RUNAS_NOT_SELF), "on the Unix socket "
	    "you may only run processes as yourself");
}

static void
test_lodged_not_root(void **state)
{
	struct runas_policy	p = { 1000, 0, 0 };

	(void)state;
	assert_int_equal(runas_default(&p), 1000);
	assert_int_equal(runas_check(&p, 1000), RUNAS_OK);
	assert_int_equal(runas_check(&p, 0), RUNAS_NEEDS_ROOT);
	assert_int_equal(runas_check(&p, 1001), RUNAS_NEEDS_ROOT);
	assert_string_equal(runas_why(RUNAS_NEEDS_ROOT),
	    "'user' needs lodged to run as root");
}

static void
test_lodged_not_root_restricted_peer(void **state)
{
	struct runas_policy	self = { 1000, 1, 1000 };
	struct runas_policy	other = { 1000, 1, 1001 };

	(void)state;
	assert_int_equal(runas_check(&self, 1000), RUNAS_OK);
	/* lodged's limit is said first: nobody else could be run either. */
	assert_int_equal(runas_check(&self, 0), RUNAS_NEEDS_ROOT);
	assert_int_equal(runas_default(&other), 1001);
	assert_int_equal(runas_check(&other, 1001), RUNAS_NEEDS_ROOT);
	assert_int_equal(runas_check(&other, 1000), RUNAS_NOT_SELF);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_root_unrestricted),
		cmocka_unit_test(test_restricted_peer),
		cmocka_unit_test(test_lodged_not_root),
		cmocka_unit_test(test_lodged_not_root_restricted_peer),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
