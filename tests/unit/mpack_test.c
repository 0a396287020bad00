/*
 * mpack_test.c: unit tests for the msgpack helpers (src/common/mpack.c):
 * the typed lookups every message goes through, integral floats at the
 * edges of int64, and mpack_validate, which runs before msgpack-c sees a
 * byte from a peer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mpack.h"

/* One map {"v": <packed by pack>}, unpacked into up. */
static const msgpack_object *
t_map(msgpack_sbuffer *sb, msgpack_unpacked *up,
    void (*pack)(msgpack_packer *, double), double x)
{
	msgpack_packer	pk;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	mpack_str(&pk, "v");
	pack(&pk, x);
	msgpack_unpacked_init(up);
	assert_int_equal(mpack_validate(sb->data, sb->size), 0);
	assert_int_equal(msgpack_unpack_next(up, sb->data, sb->size, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	return (&up->data);
}

static void
t_double(msgpack_packer *pk, double x)
{
	msgpack_pack_double(pk, x);
}

static void
t_u64_max(msgpack_packer *pk, double x)
{
	(void)x;
	msgpack_pack_uint64(pk, UINT64_MAX);
}

static int
t_get_int(void (*pack)(msgpack_packer *, double), double x, int64_t *n)
{
	msgpack_sbuffer		 sb;
	msgpack_unpacked	 up;
	int			 rc;

	rc = mpack_get_int(t_map(&sb, &up, pack, x), "v", INT64_MIN,
	    INT64_MAX, n);
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sb);
	return (rc);
}

static void
test_get_int_floats(void **state)
{
	int64_t	n = 0;

	(void)state;
	assert_int_equal(t_get_int(t_double, 80.0, &n), 1);
	assert_int_equal(n, 80);
	assert_int_equal(t_get_int(t_double, -1.0, &n), 1);
	assert_int_equal(n, -1);
	assert_int_equal(t_get_int(t_double, 80.5, &n), -1);
	assert_int_equal(t_get_int(t_double, NAN, &n), -1);
	assert_int_equal(t_get_int(t_double, INFINITY, &n), -1);
	/* 2^63 is not an int64, -2^63 is; the largest double below 2^63 is. */
	assert_int_equal(t_get_int(t_double, 9223372036854775808.0, &n), -1);
	assert_int_equal(t_get_int(t_double, -9223372036854775808.0, &n), 1);
	assert_true(n == INT64_MIN);
	assert_int_equal(t_get_int(t_double, 9223372036854774784.0, &n), 1);
	assert_true(n == INT64_C(9223372036854774784));
	assert_int_equal(t_get_int(t_u64_max, 0, &n), -1);
}

static void
test_typed_lookups(void **state)
{
	msgpack_sbuffer		 sb;
	msgpack_packer		 pk;
	msgpack_unpacked	 up;
	const msgpack_object	*o;
	const char		*p;
	size_t			 len;
	int64_t			 n;
	double			 d;
	int			 b;
	char			 buf[8];

	(void)state;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 7);
	mpack_kv_str(&pk, "type", "input");
	mpack_kv_int(&pk, "cols", 80);
	mpack_kv_bool(&pk, "pty", 1);
	mpack_kv_nil(&pk, "gone");
	mpack_kv_bin(&pk, "data", "a\0b", 3);
	mpack_kv_str(&pk, "empty", "");
	mpack_str(&pk, "nul");
	msgpack_pack_str(&pk, 3);
	msgpack_pack_str_body(&pk, "a\0b", 3);
	msgpack_unpacked_init(&up);
	assert_int_equal(mpack_validate(sb.data, sb.size), 0);
	assert_int_equal(msgpack_unpack_next(&up, sb.data, sb.size, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	o = &up.data;

	assert_true(mpack_streq(mpack_get(o, "type"), "input"));
	assert_false(mpack_streq(mpack_get(o, "type"), "inpu"));
	assert_null(mpack_get(o, "missing"));
	assert_null(mpack_get(mpack_get(o, "cols"), "x"));	/* not a map */

	assert_int_equal(mpack_get_str(o, "type", &p, &len), 1);
	assert_int_equal(len, 5);
	assert_memory_equal(p, "input", 5);
	assert_int_equal(mpack_get_str(o, "empty", &p, &len), 1);
	assert_int_equal(len, 0);
	assert_non_null(p);
	assert_int_equal(mpack_get_str(o, "cols", &p, &len), -1);
	assert_int_equal(mpack_get_str(o, "gone", &p, &len), 0);
	assert_int_equal(mpack_get_str(o, "missing", &p, &len), 0);

	assert_int_equal(mpack_get_bin(o, "data", &p, &len), 1);
	assert_int_equal(len, 3);
	assert_memory_equal(p, "a\0b", 3);
	assert_int_equal(mpack_get_bin(o, "type", &p, &len), -1);

	assert_int_equal(mpack_get_int(o, "cols", 1, 1000, &n), 1);
	assert_int_equal(n, 80);
	assert_int_equal(mpack_get_int(o, "cols", 81, 1000, &n), -1);
	assert_int_equal(mpack_get_int(o, "cols", 1, 79, &n), -1);
	assert_int_equal(mpack_get_int(o, "type", 1, 1000, &n), -1);
	assert_int_equal(mpack_get_int(o, "gone", 1, 1000, &n), 0);

	assert_int_equal(mpack_get_bool(o, "pty", &b), 1);
	assert_int_equal(b, 1);
	assert_int_equal(mpack_get_bool(o, "cols", &b), -1);
	assert_int_equal(mpack_get_num(o, "cols", &d), 1);
	assert_true(d == 80.0);
	assert_int_equal(mpack_get_num(o, "type", &d), -1);

	assert_int_equal(mpack_strcpy(mpack_get(o, "type"), buf,
	    sizeof(buf)), 0);
	assert_string_equal(buf, "input");
	assert_int_equal(mpack_strcpy(mpack_get(o, "type"), buf, 5), -1);
	assert_int_equal(mpack_strcpy(mpack_get(o, "nul"), buf,
	    sizeof(buf)), -1);
	assert_int_equal(mpack_strcpy(mpack_get(o, "cols"), buf,
	    sizeof(buf)), -1);
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sb);
}

static void
test_validate(void **state)
{
	/* A map declaring 2^32 - 1 entries in five bytes. */
	static const unsigned char	huge_map[] = { 0xdf, 0xff, 0xff, 0xff,
	    0xff };
	/* A str declaring 255 bytes with 1 there. */
	static const unsigned char	short_str[] = { 0xd9, 0xff, 'a' };
	/* {"a": 1} and one byte more. */
	static const unsigned char	trailing[] = { 0x81, 0xa1, 'a', 0x01,
	    0x01 };
	static const unsigned char	ok[] = { 0x81, 0xa1, 'a', 0x01 };
	unsigned char			deep[MPACK_DEPTH_MAX + 2];

	(void)state;
	assert_int_equal(mpack_validate(ok, sizeof(ok)), 0);
	assert_int_equal(mpack_validate(huge_map, sizeof(huge_map)), -1);
	assert_int_equal(mpack_validate(short_str, sizeof(short_str)), -1);
	assert_int_equal(mpack_validate(trailing, sizeof(trailing)), -1);
	assert_int_equal(mpack_validate(ok, 0), -1);
	assert_int_equal(mpack_validate(ok, sizeof(ok) - 1), -1);
	/* Arrays of one nested MPACK_DEPTH_MAX deep pass, one more not. */
	memset(deep, 0x91, sizeof(deep));
	deep[MPACK_DEPTH_MAX] = 0x01;
	assert_int_equal(mpack_validate(deep, MPACK_DEPTH_MAX + 1), 0);
	deep[MPACK_DEPTH_MAX] = 0x91;
	deep[MPACK_DEPTH_MAX + 1] = 0x01;
	assert_int_equal(mpack_validate(deep, MPACK_DEPTH_MAX + 2), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_int_floats),
		cmocka_unit_test(test_typed_lookups),
		cmocka_unit_test(test_validate),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
