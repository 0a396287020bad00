/*
 * fields_test.c: unit tests for the defined-field tables
 * (src/common/fields.c) and the tables of the decoders that use them
 * (spawnreq.c, wsmsg.c): the closeness rule, unknown, repeated and
 * mistyped fields, and the messages that name them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <msgpack.h>

#include "fields.h"
#include "spawnreq.h"
#include "wsmsg.h"

static const struct field t_table[] = {
	{ "type", FIELD_STR, NULL },
	{ "workDir", FIELD_STR, NULL },
	{ "timeoutSeconds", FIELD_NUM, NULL },
	{ "cols", FIELD_INT, NULL },
	{ "pty", FIELD_BOOL, NULL },
	{ "env", FIELD_MAP, NULL },
	{ "args", FIELD_ARRAY, NULL },
	{ "data", FIELD_DATA, NULL },
	{ "signal", FIELD_SIGNAL, NULL },
	{ "stdin", FIELD_REFUSED, "does not apply here" },
};
#define T_N	(sizeof(t_table) / sizeof(t_table[0]))

/* A literal's bytes and length, NUL bytes inside included. */
#define T_BYTES(s)	(s), (sizeof(s) - 1)

static msgpack_sbuffer	t_sb;
static msgpack_unpacked	t_up;

/* Pack a one-key map {key: value}; value is packed by the callback. */
static const msgpack_object *
t_map(const char *key, size_t keylen, void (*val)(msgpack_packer *))
{
	msgpack_packer	pk;
	size_t		off = 0;

	msgpack_sbuffer_destroy(&t_sb);
	msgpack_unpacked_destroy(&t_up);
	msgpack_sbuffer_init(&t_sb);
	msgpack_unpacked_init(&t_up);
	msgpack_packer_init(&pk, &t_sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str(&pk, keylen);
	msgpack_pack_str_body(&pk, key, keylen);
	val(&pk);
	assert_int_equal(msgpack_unpack_next(&t_up, t_sb.data, t_sb.size,
	    &off), MSGPACK_UNPACK_SUCCESS);
	return (&t_up.data);
}

static void v_str(msgpack_packer *pk) { msgpack_pack_str(pk, 1);
	msgpack_pack_str_body(pk, "x", 1); }
static void v_int(msgpack_packer *pk) { msgpack_pack_int(pk, 80); }
static void v_neg(msgpack_packer *pk) { msgpack_pack_int(pk, -3); }
static void v_f80(msgpack_packer *pk) { msgpack_pack_double(pk, 80.0); }
static void v_f95(msgpack_packer *pk) { msgpack_pack_double(pk, 9.5); }
static void v_nan(msgpack_packer *pk) { msgpack_pack_double(pk, NAN); }
/* Just outside int64_t: converting them would be undefined. */
static void v_2p63(msgpack_packer *pk) { msgpack_pack_double(pk,
	9223372036854775808.0); }
static void v_m2p63x(msgpack_packer *pk) { msgpack_pack_double(pk,
	-9223372036854777856.0); }
static void v_m2p63(msgpack_packer *pk) { msgpack_pack_double(pk,
	-9223372036854775808.0); }
static void v_true(msgpack_packer *pk) { msgpack_pack_true(pk); }
static void v_nil(msgpack_packer *pk) { msgpack_pack_nil(pk); }
static void v_bin(msgpack_packer *pk) { msgpack_pack_bin(pk, 1);
	msgpack_pack_bin_body(pk, "x", 1); }
static void v_map(msgpack_packer *pk) { msgpack_pack_map(pk, 0); }
static void v_arr(msgpack_packer *pk) { msgpack_pack_array(pk, 0); }

static int
t_check(const msgpack_object *o, char *why, size_t whylen)
{
	memset(why, 'x', whylen);
	return (fields_check(o, t_table, T_N, why, whylen));
}

static void
test_distance(void **state)
{
	static const struct {
		const char	*name;
		const char	*want;
		int		 d;
	} t[] = {
		/* Case and '_' '-' do not count. */
		{ "workdir", "workDir", 0 },
		{ "Workdir", "workDir", 0 },
		{ "work_dir", "workDir", 0 },
		{ "WORK-DIR", "workDir", 0 },
		{ "timeout_seconds", "timeoutSeconds", 0 },
		/* Edits. */
		{ "tty", "pty", 1 },
		{ "wrkDir", "workDir", 1 },
		{ "workDri", "workDir", 2 },
		{ "bufersize", "bufferSize", 1 },
		{ "rowz", "rows", 1 },
		/* Too far, or too many edits for so short a name. */
		{ "workingDirectory", "workDir", -1 },
		{ "timeout", "timeoutSeconds", -1 },
		{ "cwd", "env", -1 },
		{ "xy", "pty", -1 },
		{ "a", "env", -1 },
		{ "", "env", -1 },
		{ "__", "env", -1 },
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (fields_distance(t[i].name, strlen(t[i].name),
		    t[i].want) != t[i].d)
			fail_msg("distance('%s', '%s') != %d", t[i].name,
			    t[i].want, t[i].d);
	}
	/* Names longer than any field are never close. */
	{
		char	long_name[200];

		memset(long_name, 'a', sizeof(long_name));
		assert_int_equal(fields_distance(long_name, sizeof(long_name),
		    "args"), -1);
	}
}

static void
test_closest(void **state)
{
	(void)state;
	assert_string_equal(fields_closest("workdir", 7, t_table, T_N),
	    "workDir");
	assert_string_equal(fields_closest("sgnal", 5, t_table, T_N),
	    "signal");
	/* The nearest wins: "dat" is one from "data". */
	assert_string_equal(fields_closest("dat", 3, t_table, T_N), "data");
	assert_null(fields_closest("nothing", 7, t_table, T_N));
}

static void
test_unknown(void **state)
{
	char	why[256];

	(void)state;
	assert_int_equal(t_check(t_map("workdir", 7, v_str), why,
	    sizeof(why)), -1);
	assert_string_equal(why, "unknown field 'workdir' (did you mean "
	    "'workDir'?)");
	assert_int_equal(t_check(t_map("timeout_seconds", 15, v_int), why,
	    sizeof(why)), -1);
	assert_string_equal(why, "unknown field 'timeout_seconds' (did you "
	    "mean 'timeoutSeconds'?)");
	assert_int_equal(t_check(t_map("bogus", 5, v_str), why,
	    sizeof(why)), -1);
	assert_string_equal(why, "unknown field 'bogus'");
	/* Unknown even when nil: a typo is a typo. */
	assert_int_equal(t_check(t_map("bogus", 5, v_nil), why,
	    sizeof(why)), -1);
	/* Refused with its note. */
	assert_int_equal(t_check(t_map("stdin", 5, v_str), why,
	    sizeof(why)), -1);
	assert_string_equal(why, "'stdin' does not apply here");
	assert_int_equal(t_check(t_map("stdin", 5, v_nil), why,
	    sizeof(why)), 0);
}

static void
test_unknown_quoted_utf8(void **state)
{
	char	why[256];

	(void)state;
	/* Invalid UTF-8 and NUL in a name are replaced, not copied. */
	assert_int_equal(t_check(t_map("a\xff\x00z", 4, v_str), why,
	    sizeof(why)), -1);
	assert_string_equal(why, "unknown field 'a\xef\xbf\xbd\xef\xbf\xbdz'");
	/* A long name is cut, at a character boundary, also in a tiny why. */
	{
		char	name[300], tiny[8];
		size_t	i;

		for (i = 0; i + 2 <= sizeof(name); i += 2)
			memcpy(name + i, "\xc3\xa9", 2);	/* é */
		assert_int_equal(t_check(t_map(name, sizeof(name), v_str),
		    why, sizeof(why)), -1);
		assert_true(strlen(why) < sizeof(why));
		assert_int_equal(t_check(t_map(name, sizeof(name), v_str),
		    tiny, sizeof(tiny)), -1);
		assert_string_equal(tiny, "unknown");
	}
}

static void
test_types(void **state)
{
	char	why[256];

	(void)state;
	assert_int_equal(t_check(t_map("cols", 4, v_str), why, sizeof(why)),
	    -1);
	assert_string_equal(why, "'cols' must be an integer, not a string");
	assert_int_equal(t_check(t_map("cols", 4, v_f95), why, sizeof(why)),
	    -1);
	assert_string_equal(why, "'cols' must be an integer, not a number "
	    "with a fraction");
	assert_int_equal(t_check(t_map("cols", 4, v_nan), why, sizeof(why)),
	    -1);
	assert_int_equal(t_check(t_map("cols", 4, v_f80), why, sizeof(why)),
	    0);
	assert_int_equal(t_check(t_map("cols", 4, v_2p63), why, sizeof(why)),
	    -1);
	assert_int_equal(t_check(t_map("cols", 4, v_m2p63x), why,
	    sizeof(why)), -1);
	assert_int_equal(t_check(t_map("cols", 4, v_m2p63), why,
	    sizeof(why)), 0);
	assert_int_equal(t_check(t_map("cols", 4, v_neg), why, sizeof(why)),
	    0);		/* ranges are the decoder's */
	assert_int_equal(t_check(t_map("cols", 4, v_nil), why, sizeof(why)),
	    0);
	assert_int_equal(t_check(t_map("pty", 3, v_int), why, sizeof(why)),
	    -1);
	assert_string_equal(why, "'pty' must be true or false, not an "
	    "integer");
	assert_int_equal(t_check(t_map("pty", 3, v_true), why, sizeof(why)),
	    0);
	assert_int_equal(t_check(t_map("workDir", 7, v_int), why,
	    sizeof(why)), -1);
	assert_string_equal(why, "'workDir' must be a string, not an integer");
	assert_int_equal(t_check(t_map("timeoutSeconds", 14, v_f95), why,
	    sizeof(why)), 0);
	assert_int_equal(t_check(t_map("timeoutSeconds", 14, v_str), why,
	    sizeof(why)), -1);
	assert_int_equal(t_check(t_map("env", 3, v_arr), why, sizeof(why)),
	    -1);
	assert_string_equal(why, "'env' must be an object, not an array");
	assert_int_equal(t_check(t_map("env", 3, v_map), why, sizeof(why)),
	    0);
	assert_int_equal(t_check(t_map("args", 4, v_map), why, sizeof(why)),
	    -1);
	assert_int_equal(t_check(t_map("data", 4, v_bin), why, sizeof(why)),
	    0);
	assert_int_equal(t_check(t_map("data", 4, v_str), why, sizeof(why)),
	    0);
	assert_int_equal(t_check(t_map("data", 4, v_int), why, sizeof(why)),
	    -1);
	assert_int_equal(t_check(t_map("signal", 6, v_f80), why,
	    sizeof(why)), 0);
	assert_int_equal(t_check(t_map("signal", 6, v_f95), why,
	    sizeof(why)), -1);
	assert_int_equal(t_check(t_map("signal", 6, v_true), why,
	    sizeof(why)), -1);
}

/* Unpack len bytes of msgpack into t_up. */
static const msgpack_object *
t_raw(const char *p, size_t len)
{
	size_t	off = 0;

	msgpack_unpacked_destroy(&t_up);
	msgpack_unpacked_init(&t_up);
	assert_int_equal(msgpack_unpack_next(&t_up, p, len, &off),
	    MSGPACK_UNPACK_SUCCESS);
	return (&t_up.data);
}

static void
test_keys(void **state)
{
	char	why[256];

	(void)state;
	/* {"cols":1,"cols":2} */
	assert_int_equal(t_check(t_raw(T_BYTES("\x82\xa4" "cols\x01\xa4"
	    "cols\x02")), why, sizeof(why)), -1);
	assert_string_equal(why, "field 'cols' is given twice");
	/* {1:1} */
	assert_int_equal(t_check(t_raw(T_BYTES("\x81\x01\x01")), why, sizeof(why)),
	    -1);
	assert_string_equal(why, "field names must be strings");
	/* [] */
	assert_int_equal(t_check(t_raw(T_BYTES("\x90")), why, sizeof(why)), -1);
	/* {} */
	assert_int_equal(t_check(t_raw(T_BYTES("\x80")), why, sizeof(why)), 0);
	/* no object at all: a control message without its "req" */
	assert_int_equal(t_check(NULL, why, sizeof(why)), -1);
	assert_string_equal(why, "the request must be an object");
}

/* The decoders' own tables, through their public calls. */
static void
test_spawnreq_tables(void **state)
{
	struct spawnreq	 r;
	char		 why[512];
	static const struct {
		const char		*bytes;		/* msgpack */
		size_t			 len;
		enum spawnreq_kind	 kind;
		const char		*why;		/* NULL: accepted */
	} t[] = {
		/* {"command":"pwd","workdir":"/tmp"} */
		{ T_BYTES("\x82\xa7" "command\xa3" "pwd\xa7" "workdir\xa4/tmp"),
		    SPAWN_EXEC, "unknown field 'workdir' (did you mean "
		    "'workDir'?)" },
		/* {"command":"pwd","tty":true} as a session */
		{ T_BYTES("\x82\xa7" "command\xa3" "pwd\xa3" "tty\xc3"),
		    SPAWN_SESSION, "unknown field 'tty' (did you mean "
		    "'pty'?)" },
		/* the same as a stream start is fine */
		{ T_BYTES("\x82\xa7" "command\xa3" "pwd\xa3" "tty\xc3"),
		    SPAWN_STREAM, NULL },
		/* {"command":"pwd","timeoutSeconds":1} as a session */
		{ T_BYTES("\x82\xa7" "command\xa3" "pwd\xae" "timeoutSeconds\x01"),
		    SPAWN_SESSION, "unknown field 'timeoutSeconds'" },
		/* {"command":"pwd","stdin":"x"} as a stream start */
		{ T_BYTES("\x82\xa7" "command\xa3" "pwd\xa5" "stdin\xa1x"),
		    SPAWN_STREAM, "'stdin' does not apply to an exec stream: "
		    "send stdin messages" },
		/* {"command":"pwd","pty":1} */
		{ T_BYTES("\x82\xa7" "command\xa3" "pwd\xa3" "pty\x01"),
		    SPAWN_SESSION, "'pty' must be true or false, not an "
		    "integer" },
	};
	size_t	 i;
	int	 rc;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		rc = spawnreq_decode(t_raw(t[i].bytes, t[i].len),
		    t[i].kind, 1 << 20, &r, why, sizeof(why));
		if (t[i].why == NULL) {
			if (rc != 0)
				fail_msg("case %zu refused: %s", i, why);
			spawnreq_free(&r);
			continue;
		}
		if (rc != -1)
			fail_msg("case %zu accepted", i);
		if (strcmp(why, t[i].why) != 0)
			fail_msg("case %zu: '%s'", i, why);
	}
}

static void
test_wsmsg_tables(void **state)
{
	struct wsmsg	 m;
	char		 why[256];

	(void)state;
	/* {"type":"resize","cols":80,"rows":24,"colz":1} */
	assert_int_equal(wsmsg_decode(T_BYTES("\x84\xa4type\xa6resize\xa4"
	    "cols\x50\xa4rows\x18\xa4" "colz\x01"), &m, why, sizeof(why)),
	    -1);
	assert_string_equal(why, "unknown field 'colz' (did you mean "
	    "'cols'?)");
	/* {"type":"eof","now":true} */
	assert_int_equal(wsmsg_decode(T_BYTES("\x82\xa4type\xa3" "eof\xa3now"
	    "\xc3"), &m, why, sizeof(why)), -1);
	assert_string_equal(why, "unknown field 'now'");
	/* {"type":"signal","signal":9.0} and 9.5 */
	assert_int_equal(wsmsg_decode(T_BYTES("\x82\xa4type\xa6signal\xa6"
	    "signal\xcb\x40\x22\x00\x00\x00\x00\x00\x00"), &m, why,
	    sizeof(why)), 0);
	assert_int_equal(m.signo, 9);
	wsmsg_free(&m);
	assert_int_equal(wsmsg_decode(T_BYTES("\x82\xa4type\xa6signal\xa6"
	    "signal\xcb\x40\x23\x00\x00\x00\x00\x00\x00"), &m, why,
	    sizeof(why)), -1);
	/* An unknown type is quoted as valid UTF-8. */
	assert_int_equal(wsmsg_decode(T_BYTES("\x81\xa4type\xa2\xff\xfe"), &m,
	    why, sizeof(why)), -1);
	assert_string_equal(why, "unknown message type "
	    "'\xef\xbf\xbd\xef\xbf\xbd'");
}

static int
reset(void **state)
{
	(void)state;
	msgpack_sbuffer_destroy(&t_sb);
	msgpack_unpacked_destroy(&t_up);
	msgpack_sbuffer_init(&t_sb);
	msgpack_unpacked_init(&t_up);
	return (0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_distance, reset),
		cmocka_unit_test_teardown(test_closest, reset),
		cmocka_unit_test_teardown(test_unknown, reset),
		cmocka_unit_test_teardown(test_unknown_quoted_utf8, reset),
		cmocka_unit_test_teardown(test_types, reset),
		cmocka_unit_test_teardown(test_keys, reset),
		cmocka_unit_test_teardown(test_spawnreq_tables, reset),
		cmocka_unit_test_teardown(test_wsmsg_tables, reset),
	};

	msgpack_sbuffer_init(&t_sb);
	msgpack_unpacked_init(&t_up);
	return (cmocka_run_group_tests(tests, NULL, reset));
}
