/*
 * proto_test.c: unit tests for the control messages' table, their packing
 * (map sizes counted by the code) and proto_dispatch, the allow-list every
 * process reads its peers' messages through (src/common/proto.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "mpack.h"
#include "proto.h"

static int	t_calls;
static int	t_fd;

static void
t_handler(void *arg, const msgpack_object *o, int *fds)
{
	(void)o;
	assert_ptr_equal(arg, &t_calls);
	t_calls++;
	t_fd = fds != NULL ? fds[0] : -1;
}

/* A front's table for a session worker, holding one entry it must not. */
static const struct proto_handler t_table[] = {
	{ PROTO_REPLY, t_handler },
	{ PROTO_ADOPTED, t_handler },
	{ PROTO_SPAWNED, t_handler },	/* a template's message */
};

/* Pack a message of type with n extra entries, finish and unpack it. */
static void
t_pack(enum proto_type type, int n, msgpack_unpacked *up,
    struct proto_out *m)
{
	int	i;

	proto_begin(m, type);
	for (i = 0; i < n; i++) {
		char	k[16];

		snprintf(k, sizeof(k), "k%d", i);
		mpack_kv_int(&m->pk, k, i);
	}
	proto_finish(m);
	msgpack_unpacked_init(up);
	assert_int_equal(mpack_validate(m->sb.data, m->sb.size), 0);
	assert_int_equal(msgpack_unpack_next(up, m->sb.data, m->sb.size,
	    NULL), MSGPACK_UNPACK_SUCCESS);
}

static int
t_dispatch(const msgpack_object *o, int *fds, int nfds)
{
	return (proto_dispatch(PROTO_SESSION_FRONT, t_table,
	    PROTO_NHANDLERS(t_table), "a test worker", &t_calls, o, fds,
	    nfds));
}

/* Every message names one type, and packs into a map its size says. */
static void
test_pack_counts(void **state)
{
	msgpack_unpacked	up;
	struct proto_out	m;
	int			t, u, n;

	(void)state;
	for (t = 0; t < PROTO_NTYPES; t++) {
		assert_non_null(proto_msgs[t].name);
		assert_int_not_equal(proto_msgs[t].channels, 0);
		for (u = 0; u < t; u++)
			assert_string_not_equal(proto_msgs[t].name,
			    proto_msgs[u].name);
		for (n = 0; n < 20; n += 7) {
			t_pack(t, n, &up, &m);
			assert_int_equal(up.data.type, MSGPACK_OBJECT_MAP);
			assert_int_equal(up.data.via.map.size,
			    1 + n + proto_msgs[t].nfds);
			assert_int_equal(proto_type(&up.data), t);
			if (proto_msgs[t].nfds > 0)
				assert_non_null(mpack_get(&up.data, "fd"));
			msgpack_unpacked_destroy(&up);
			proto_free(&m);
		}
	}
}

static void
test_count(void **state)
{
	static const unsigned char	two[] = { 0x81, 0xa1, 'a', 0x01, 0xc0 };
	static const unsigned char	cut[] = { 0x82, 0xa1, 'a', 0x01 };

	(void)state;
	assert_int_equal(mpack_count(two, sizeof(two)), 2);
	assert_int_equal(mpack_count(two, 0), 0);
	assert_int_equal(mpack_count(cut, sizeof(cut)), -1);
	assert_int_equal(mpack_validate(two, sizeof(two)), -1);
	assert_int_equal(mpack_validate(two, 4), 0);
}

static void
test_dispatch_allowed(void **state)
{
	msgpack_unpacked	up;
	struct proto_out	m;

	(void)state;
	t_calls = 0;
	t_pack(PROTO_REPLY, 2, &up, &m);
	assert_int_equal(t_dispatch(&up.data, NULL, 0), 0);
	assert_int_equal(t_calls, 1);
	msgpack_unpacked_destroy(&up);
	proto_free(&m);
}

/* On the session channel, whatever the table holds: never acted on. */
static void
test_dispatch_refused(void **state)
{
	msgpack_unpacked	 up;
	struct proto_out	 m;
	msgpack_sbuffer		 sb;
	msgpack_packer		 pk;
	enum proto_type		 refused[] = { PROTO_SPAWNED, PROTO_CREATED,
				    PROTO_HELLO, PROTO_ADOPT };
	size_t			 i;
	size_t			 off = 0;

	(void)state;
	t_calls = 0;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		t_pack(refused[i], 1, &up, &m);
		assert_int_equal(t_dispatch(&up.data, NULL, 0), -1);
		msgpack_unpacked_destroy(&up);
		proto_free(&m);
	}
	/* No type, a type nobody knows, not a map. */
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	mpack_kv_int(&pk, "id", 1);
	msgpack_pack_map(&pk, 1);
	mpack_kv_str(&pk, "type", "replyy");
	msgpack_pack_int(&pk, 7);
	msgpack_unpacked_init(&up);
	for (i = 0; i < 3; i++) {
		assert_int_equal(msgpack_unpack_next(&up, sb.data, sb.size,
		    &off), MSGPACK_UNPACK_SUCCESS);
		assert_int_equal(proto_type(&up.data), -1);
		assert_int_equal(t_dispatch(&up.data, NULL, 0), -1);
	}
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sb);
	assert_int_equal(t_calls, 0);
}

/* A descriptor the type does not carry is closed, the message refused. */
static void
test_dispatch_fds(void **state)
{
	msgpack_unpacked	up;
	struct proto_out	m;
	int			p[2];

	(void)state;
	t_calls = 0;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	close(p[1]);
	t_pack(PROTO_REPLY, 0, &up, &m);
	assert_int_equal(t_dispatch(&up.data, p, 1), -1);
	assert_int_equal(fcntl(p[0], F_GETFD), -1);
	assert_int_equal(t_calls, 0);
	msgpack_unpacked_destroy(&up);
	proto_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_counts),
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_dispatch_allowed),
		cmocka_unit_test(test_dispatch_refused),
		cmocka_unit_test(test_dispatch_fds),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
