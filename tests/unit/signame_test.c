/*
 * signame_test.c: unit tests for signal names (src/common/signame.c),
 * real-time signals by name included, and the values a request may give.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <msgpack.h>

#include "signame.h"

static int
parse(const char *s)
{
	return (signame_parse(s, strlen(s)));
}

static void
test_classic(void **state)
{
	(void)state;
	assert_int_equal(parse("INT"), SIGINT);
	assert_int_equal(parse("sigint"), SIGINT);
	assert_int_equal(parse("SIGKILL"), SIGKILL);
	assert_int_equal(parse("9"), 9);
	assert_int_equal(parse("64"), 64);
	assert_int_equal(parse("65"), -1);
	assert_int_equal(parse("0"), -1);
	assert_int_equal(parse(""), -1);
	assert_int_equal(parse("SIG"), -1);
	assert_int_equal(parse("NOPE"), -1);
	assert_string_equal(signame_name(SIGTERM), "TERM");
	assert_null(signame_name(0));
	assert_null(signame_name(65));
}

static void
test_realtime_names(void **state)
{
	(void)state;
	assert_int_equal(parse("RTMIN"), SIGRTMIN);
	assert_int_equal(parse("SIGRTMIN"), SIGRTMIN);
	assert_int_equal(parse("rtmin+3"), SIGRTMIN + 3);
	assert_int_equal(parse("RTMIN+3"), SIGRTMIN + 3);
	assert_int_equal(parse("RTMAX"), SIGRTMAX);
	assert_int_equal(parse("RTMAX-2"), SIGRTMAX - 2);
	assert_int_equal(parse("SIGRTMAX-2"), SIGRTMAX - 2);
	/* The whole range from either end, nothing past it. */
	assert_int_equal(parse("RTMIN+30"), SIGRTMIN + 30 <= SIGRTMAX ?
	    SIGRTMIN + 30 : -1);
	assert_int_equal(parse("RTMIN+31"), SIGRTMIN + 31 <= SIGRTMAX ?
	    SIGRTMIN + 31 : -1);
	assert_int_equal(parse("RTMAX-40"), -1);
	assert_int_equal(parse("RTMIN-1"), -1);
	assert_int_equal(parse("RTMAX+1"), -1);
	assert_int_equal(parse("RTMIN+"), -1);
	assert_int_equal(parse("RTMIN+x"), -1);
	assert_int_equal(parse("RTMIN+100"), -1);
	assert_int_equal(parse("RTMINX"), -1);
}

static void
test_realtime_round_trip(void **state)
{
	const char	*name;
	int		 signo;

	(void)state;
	assert_string_equal(signame_name(SIGRTMIN), "RTMIN");
	assert_string_equal(signame_name(SIGRTMIN + 3), "RTMIN+3");
	assert_string_equal(signame_name(SIGRTMAX), "RTMAX");
	assert_string_equal(signame_name(SIGRTMAX - 2), "RTMAX-2");
	/* Every real-time signal has a name, and the name parses back. */
	for (signo = SIGRTMIN; signo <= SIGRTMAX; signo++) {
		name = signame_name(signo);
		assert_non_null(name);
		assert_int_equal(parse(name), signo);
	}
	/* Every named signal parses back. */
	for (signo = 1; signo <= 64; signo++)
		if ((name = signame_name(signo)) != NULL)
			assert_int_equal(parse(name), signo);
}

static int
from_double(double d)
{
	msgpack_object	o;

	memset(&o, 0, sizeof(o));
	o.type = MSGPACK_OBJECT_FLOAT64;
	o.via.f64 = d;
	return (signame_from_object(&o));
}

static void
test_objects(void **state)
{
	msgpack_object	o;

	(void)state;
	assert_int_equal(from_double(9.0), 9);
	assert_int_equal(from_double(64.0), 64);
	assert_int_equal(from_double(9.5), -1);
	assert_int_equal(from_double(0.0), -1);
	assert_int_equal(from_double(65.0), -1);
	assert_int_equal(from_double(-9.0), -1);
	assert_int_equal(from_double(NAN), -1);
	assert_int_equal(from_double(INFINITY), -1);
	memset(&o, 0, sizeof(o));
	o.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
	o.via.u64 = 15;
	assert_int_equal(signame_from_object(&o), 15);
	o.type = MSGPACK_OBJECT_STR;
	o.via.str.ptr = "RTMIN+3";
	o.via.str.size = 7;
	assert_int_equal(signame_from_object(&o), SIGRTMIN + 3);
	o.type = MSGPACK_OBJECT_BOOLEAN;
	assert_int_equal(signame_from_object(&o), -1);
	assert_int_equal(signame_from_object(NULL), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classic),
		cmocka_unit_test(test_realtime_names),
		cmocka_unit_test(test_realtime_round_trip),
		cmocka_unit_test(test_objects),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
