/*
 * ring_test.c: unit tests for the session output ring (src/common/ring.c).
 *
 * Every held byte and tag is checked against a reference model that keeps
 * everything ever appended in a flat array; the safe start is checked both
 * against an independent escape parser run over the whole stream (for
 * well-formed output) and against a naive transcription of the rule in
 * ring.h (for arbitrary bytes).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define T_WINDOW	256	/* safe start window, as documented in ring.h */
#define T_LOOKBACK	64	/* lookback, as documented in ring.h */
#define T_ESC		0x1b
#define T_BEL		0x07

/* Reference model: every byte and tag ever appended. */
struct model {
	unsigned char	*data;
	unsigned char	*tags;
	size_t		 len;
	size_t		 alloc;
};

static uint64_t	t_rng_state;

static void
t_seed(uint64_t seed)
{
	t_rng_state = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

/* xorshift64*: deterministic, so a failure can be replayed. */
static uint64_t
t_rand(void)
{
	t_rng_state ^= t_rng_state >> 12;
	t_rng_state ^= t_rng_state << 25;
	t_rng_state ^= t_rng_state >> 27;
	return (t_rng_state * 0x2545f4914f6cdd1dULL);
}

static size_t
t_below(size_t n)
{
	return ((size_t)(t_rand() % n));
}

static void
model_init(struct model *m)
{
	memset(m, 0, sizeof *m);
}

static void
model_free(struct model *m)
{
	free(m->data);
	free(m->tags);
	memset(m, 0, sizeof *m);
}

static void
model_add(struct model *m, int tag, const void *buf, size_t len)
{
	size_t	 alloc;

	if (m->len + len > m->alloc) {
		alloc = m->alloc ? m->alloc : 4096;
		while (alloc < m->len + len)
			alloc *= 2;
		m->data = realloc(m->data, alloc);
		m->tags = realloc(m->tags, alloc);
		assert_non_null(m->data);
		assert_non_null(m->tags);
		m->alloc = alloc;
	}
	memcpy(m->data + m->len, buf, len);
	memset(m->tags + m->len, tag != 0, len);
	m->len += len;
}

/* Append to both the ring and the model. */
static void
both_append(struct ring *r, struct model *m, int tag, const void *buf,
    size_t len)
{
	ring_append(r, tag, buf, len);
	model_add(m, tag, buf, len);
}

/*
 * Check everything observable against the model: offsets, invariants, every
 * held byte through ring_copy and through a ring_peek walk, each piece being
 * exactly as long as the wrap point, the next tag change and max allow, and
 * all pieces pointing into one array at offset % capacity.
 */
static void
check_ring(const struct ring *r, const struct model *m, size_t max)
{
	uint64_t		 start = ring_start(r), end = ring_end(r), off;
	size_t			 cap = ring_capacity(r), n, want, k;
	const void		*p;
	const unsigned char	*base = NULL, *b;
	unsigned char		*copy;
	int			 tag;

	assert_int_equal(end, m->len);
	assert_true(start <= end);
	assert_true(end - start <= cap);
	if (end > cap)
		assert_true(start >= end - cap);

	copy = malloc(cap + 16);
	assert_non_null(copy);
	n = ring_copy(r, start, copy, cap + 16);
	assert_int_equal(n, end - start);
	if (n > 0)
		assert_memory_equal(copy, m->data + start, n);

	for (off = start; off < end; off += n) {
		n = ring_peek(r, off, max, &p, &tag);
		assert_true(n > 0);
		assert_non_null(p);
		want = cap - (size_t)(off % cap);
		if (want > end - off)
			want = (size_t)(end - off);
		if (want > max)
			want = max;
		for (k = 1; k < want; k++)
			if (m->tags[off + k] != m->tags[off])
				break;
		want = k;
		assert_int_equal(n, want);
		assert_int_equal(tag, m->tags[off]);
		assert_memory_equal(p, m->data + off, n);
		b = (const unsigned char *)p - off % cap;
		if (base == NULL)
			base = b;
		assert_ptr_equal(b, base);
	}

	p = copy;
	tag = 7;
	assert_int_equal(ring_peek(r, end, 10, &p, &tag), 0);
	assert_null(p);
	assert_int_equal(ring_copy(r, end, copy, 10), 0);
	assert_int_equal(ring_copy(r, end + 1000, copy, 10), 0);
	if (start > 0) {
		p = copy;
		assert_int_equal(ring_peek(r, start - 1, 10, &p, &tag), 0);
		assert_null(p);
		assert_int_equal(ring_copy(r, start - 1, copy, 10), 0);
	}
	free(copy);
}

/*
 * Independent escape parser over a whole, well-formed stream: marks every
 * offset inside a sequence, that is after its ESC up to and including its
 * final byte or terminator.
 */
static unsigned char *
ref_inside(const unsigned char *s, size_t n)
{
	unsigned char	*in;
	size_t		 i, j, last;

	in = calloc(n + 1, 1);
	assert_non_null(in);
	i = 0;
	while (i < n) {
		if (s[i] != T_ESC) {
			i++;
			continue;
		}
		j = i + 1;
		if (j >= n)
			break;
		if (s[j] == '[') {
			j++;
			while (j < n && s[j] >= 0x20 && s[j] <= 0x3f)
				j++;
			last = j;
		} else if (s[j] == ']' || s[j] == 'P' || s[j] == 'X' ||
		    s[j] == '^' || s[j] == '_') {
			j++;
			for (;;) {
				if (j >= n) {
					last = n;
					break;
				}
				if (s[i + 1] == ']' && s[j] == T_BEL) {
					last = j;
					break;
				}
				if (s[j] == T_ESC && j + 1 < n &&
				    s[j + 1] == '\\') {
					last = j + 1;
					break;
				}
				j++;
			}
		} else {
			while (j < n && s[j] >= 0x20 && s[j] <= 0x2f)
				j++;
			last = j;
		}
		for (j = i + 1; j <= last && j < n; j++)
			in[j] = 1;
		i = last + 1;
	}
	return (in);
}

static int
is_cont(unsigned char c)
{
	return (c >= 0x80 && c <= 0xbf);
}

/* Output tokens for well-formed terminal streams. */
static const char *t_tokens[] = {
	" ", "\n", "\r\n", "\t", "é", "中", "😀", "ÿ", "Processing ",
	"[ok] ", "x] ", "_P^X ", "12;34 ",
	"\x1b[0m", "\x1b[1;31m", "\x1b[38;5;208m", "\x1b[?25l", "\x1b[?1049h",
	"\x1b[2J", "\x1b[10;20H", "\x1b[>c", "\x1b[2 q", "\x1b[K",
	"\x1b]0;title é\x07", "\x1b]2;\x07",
	"\x1b]8;;http://example.com/x\x1b\\",
	"\x1b]8;;\x1b\\", "\x1bPq#0;2;0;0;0#0~~@@-\x1b\\", "\x1bP$q\"p\x1b\\",
	"\x1b_Gf=24;AAAA\x1b\\", "\x1b^pm\x1b\\", "\x1bXsos\x1b\\",
	"\x1b" "7", "\x1b" "8", "\x1b=", "\x1b>", "\x1bM", "\x1b" "c",
	"\x1b(B", "\x1b)0", "\x1b#8", "\x1b%G", "\x1b\\", "\x07",
};

/* A random well-formed stream of n bytes or a little more. */
static unsigned char *
gen_terminal(size_t n, size_t *lenp)
{
	unsigned char	*s;
	size_t		 len = 0, ntok, k, i;
	const char	*t;

	s = malloc(n + 64);
	assert_non_null(s);
	ntok = sizeof t_tokens / sizeof t_tokens[0];
	while (len < n) {
		if (t_below(3) == 0) {
			k = 1 + t_below(8);
			for (i = 0; i < k && len < n + 64; i++)
				s[len++] = (unsigned char)('a' + t_below(26));
			continue;
		}
		t = t_tokens[t_below(ntok)];
		if (len + strlen(t) > n + 64)
			break;
		memcpy(s + len, t, strlen(t));
		len += strlen(t);
	}
	*lenp = len;
	return (s);
}

/*
 * The rule documented in ring.h, transcribed naively: every possible state
 * at the floor is followed on its own through the bytes s[floor..limit).
 */
#define O_GROUND	0
#define O_ESC		1
#define O_INTER		2
#define O_CSI		3
#define O_OSC		4
#define O_STR		5
#define O_DEAD		6

static int
oracle_step(int st, unsigned char c)
{
	if (c == T_ESC)
		return (O_ESC);
	switch (st) {
	case O_GROUND:
		return (O_GROUND);
	case O_ESC:
		if (c == '[')
			return (O_CSI);
		if (c == ']')
			return (O_OSC);
		if (c == 'P' || c == 'X' || c == '^' || c == '_')
			return (O_STR);
		if (c >= 0x20 && c <= 0x2f)
			return (O_INTER);
		return (O_GROUND);
	case O_INTER:
		return (c >= 0x20 && c <= 0x2f ? O_INTER : O_GROUND);
	case O_CSI:
		return (c >= 0x20 && c <= 0x3f ? O_CSI : O_GROUND);
	case O_OSC:
		return (c == T_BEL ? O_GROUND : O_OSC);
	case O_STR:
		return (O_STR);
	}
	return (O_DEAD);
}

static uint64_t
oracle_safe(const unsigned char *s, uint64_t end, uint64_t held,
    uint64_t off, size_t window)
{
	uint64_t	 first, floor, limit, p, q;
	int		 st[6], nst = 0, i, osc_ok = 0, str_ok = 0, ok;
	unsigned char	 c;

	if (window == 0 || off >= end)
		return (off);
	limit = off + window;
	if (limit > end)
		limit = end;
	first = off > held ? off : held;
	if (first >= limit)
		return (off);
	floor = first - held > T_LOOKBACK ? first - T_LOOKBACK : held;

	if (floor == 0)
		st[nst++] = O_GROUND;
	else {
		for (q = floor; q < limit; q++) {
			if (s[q] == T_BEL)
				osc_ok = 1;
			if (s[q] == T_ESC) {
				if (q + 1 < end && s[q + 1] == '\\')
					osc_ok = str_ok = 1;
				break;
			}
		}
		st[nst++] = O_GROUND;
		st[nst++] = O_ESC;
		st[nst++] = O_INTER;
		st[nst++] = O_CSI;
		if (osc_ok)
			st[nst++] = O_OSC;
		if (str_ok)
			st[nst++] = O_STR;
	}

	for (p = floor; p < limit; p++) {
		c = s[p];
		/* Abandon: ESC, inter, CSI end before a byte not 20-7e. */
		if (c != T_ESC && (c < 0x20 || c > 0x7e)) {
			for (i = 0; i < nst; i++)
				if (st[i] == O_ESC || st[i] == O_INTER ||
				    st[i] == O_CSI)
					st[i] = O_GROUND;
		}
		if (p >= first && !is_cont(c)) {
			if (c == T_ESC && p + 1 < end && s[p + 1] != '\\')
				return (p);
			ok = 1;
			for (i = 0; i < nst; i++)
				if (st[i] != O_GROUND && st[i] != O_DEAD)
					ok = 0;
			if (ok)
				return (p);
		}
		for (i = 0; i < nst; i++) {
			if (st[i] == O_DEAD)
				continue;
			st[i] = oracle_step(st[i], c);
			if (p == floor && ((st[i] == O_OSC && !osc_ok) ||
			    (st[i] == O_STR && !str_ok)))
				st[i] = O_DEAD;
		}
	}
	return (off);
}

static void
test_empty(void **state)
{
	struct ring	*r;
	const void	*p = &p;
	unsigned char	 buf[8];
	int		 tag = 5;

	(void)state;
	r = ring_create(0);
	assert_non_null(r);
	assert_int_equal(ring_capacity(r), RING_MIN_SIZE);
	assert_int_equal(ring_start(r), 0);
	assert_int_equal(ring_end(r), 0);
	assert_int_equal(ring_peek(r, 0, 100, &p, &tag), 0);
	assert_null(p);
	assert_int_equal(ring_copy(r, 0, buf, sizeof buf), 0);
	assert_int_equal(ring_safe_start(r, 0, T_WINDOW), 0);

	ring_append(r, 1, "x", 0);
	assert_int_equal(ring_end(r), 0);
	assert_int_equal(ring_peek(r, 0, 100, &p, &tag), 0);
	ring_free(r);

	r = ring_create(RING_MIN_SIZE - 1);
	assert_non_null(r);
	assert_int_equal(ring_capacity(r), RING_MIN_SIZE);
	ring_free(r);
	r = ring_create(10000);
	assert_non_null(r);
	assert_int_equal(ring_capacity(r), 10000);
	ring_free(r);
	ring_free(NULL);
}

static void
test_append_within(void **state)
{
	struct ring	*r;
	struct model	 m;
	const void	*p;
	char		 buf[32];
	int		 tag;

	(void)state;
	model_init(&m);
	r = ring_create(4096);
	assert_non_null(r);

	both_append(r, &m, 0, "hello", 5);
	both_append(r, &m, 0, " world", 6);
	assert_int_equal(ring_start(r), 0);
	assert_int_equal(ring_end(r), 11);
	/* Same tag: one piece, merged. */
	assert_int_equal(ring_peek(r, 0, 100, &p, &tag), 11);
	assert_int_equal(tag, 0);
	assert_memory_equal(p, "hello world", 11);
	assert_int_equal(ring_peek(r, 3, 2, &p, &tag), 2);
	assert_memory_equal(p, "lo", 2);
	assert_int_equal(ring_peek(r, 10, 100, &p, &tag), 1);
	assert_memory_equal(p, "d", 1);
	assert_int_equal(ring_peek(r, 4, 0, &p, &tag), 0);

	/* Any non-zero tag is stderr. */
	both_append(r, &m, 5, "ERR", 3);
	assert_int_equal(ring_peek(r, 0, 100, &p, &tag), 11);
	assert_int_equal(tag, 0);
	assert_int_equal(ring_peek(r, 11, 100, &p, &tag), 3);
	assert_int_equal(tag, 1);
	assert_memory_equal(p, "ERR", 3);

	assert_int_equal(ring_copy(r, 2, buf, sizeof buf), 12);
	assert_memory_equal(buf, "llo worldERR", 12);
	assert_int_equal(ring_copy(r, 13, buf, sizeof buf), 1);
	assert_int_equal(buf[0], 'R');
	assert_int_equal(ring_copy(r, 0, buf, 0), 0);

	both_append(r, &m, 0, "", 0);
	assert_int_equal(ring_end(r), 14);
	assert_int_equal(ring_peek(r, 13, 100, &p, &tag), 1);
	assert_int_equal(tag, 1);
	check_ring(r, &m, SIZE_MAX);
	check_ring(r, &m, 3);

	ring_free(r);
	model_free(&m);
}

static void
test_wrap(void **state)
{
	struct ring	*r;
	struct model	 m;
	unsigned char	 a[4000], b[200];
	const void	*p;
	size_t		 n;
	int		 tag;

	(void)state;
	model_init(&m);
	r = ring_create(4096);
	assert_non_null(r);

	/* Newlines are safe anywhere, so the start is the raw one. */
	memset(a, '\n', sizeof a);
	memset(b, '\n', sizeof b);
	a[3999] = 'A';
	b[0] = 'B';
	b[95] = 'C';
	b[96] = 'D';
	b[199] = 'E';
	both_append(r, &m, 0, a, sizeof a);
	assert_int_equal(ring_start(r), 0);
	both_append(r, &m, 0, b, sizeof b);
	assert_int_equal(ring_end(r), 4200);
	assert_int_equal(ring_start(r), 4200 - 4096);

	/* First piece runs to the physical end, the second from 0. */
	n = ring_peek(r, 104, SIZE_MAX, &p, &tag);
	assert_int_equal(n, 4096 - 104);
	assert_int_equal(((const unsigned char *)p)[n - 97], 'A');
	assert_int_equal(((const unsigned char *)p)[n - 96], 'B');
	assert_int_equal(((const unsigned char *)p)[n - 1], 'C');
	n = ring_peek(r, 4096, SIZE_MAX, &p, &tag);
	assert_int_equal(n, 104);
	assert_int_equal(((const unsigned char *)p)[0], 'D');
	assert_int_equal(((const unsigned char *)p)[103], 'E');
	n = ring_peek(r, 4095, SIZE_MAX, &p, &tag);
	assert_int_equal(n, 1);
	assert_int_equal(((const unsigned char *)p)[0], 'C');
	check_ring(r, &m, SIZE_MAX);
	check_ring(r, &m, 7);

	/* A wrap piece that also ends at a tag change. */
	both_append(r, &m, 1, "\n\n\n", 3);
	n = ring_peek(r, 4096, SIZE_MAX, &p, &tag);
	assert_int_equal(n, 104);
	assert_int_equal(tag, 0);
	n = ring_peek(r, 4200, SIZE_MAX, &p, &tag);
	assert_int_equal(n, 3);
	assert_int_equal(tag, 1);
	check_ring(r, &m, SIZE_MAX);

	ring_free(r);
	model_free(&m);
}

static void
test_append_larger(void **state)
{
	struct ring	*r;
	struct model	 m;
	unsigned char	*big;
	const void	*p;
	size_t		 i, n;
	int		 tag;

	(void)state;
	model_init(&m);
	r = ring_create(4096);
	assert_non_null(r);
	big = malloc(10000);
	assert_non_null(big);
	for (i = 0; i < 10000; i++)
		big[i] = (i % 7 == 0) ? '\n' : (unsigned char)('a' + i % 26);

	both_append(r, &m, 0, "old", 3);
	both_append(r, &m, 1, big, 10000);
	assert_int_equal(ring_end(r), 10003);
	assert_true(ring_start(r) >= 10003 - 4096);
	assert_true(ring_start(r) < 10003 - 4096 + 8);
	/* Only the new run is left, and it has the new tag. */
	n = ring_peek(r, ring_start(r), SIZE_MAX, &p, &tag);
	assert_true(n > 0);
	assert_int_equal(tag, 1);
	check_ring(r, &m, SIZE_MAX);

	/* Exactly the capacity, then twice it, all newlines: raw start. */
	memset(big, '\n', 10000);
	both_append(r, &m, 0, big, 4096);
	assert_int_equal(ring_start(r), ring_end(r) - 4096);
	check_ring(r, &m, SIZE_MAX);
	both_append(r, &m, 1, big, 8192);
	assert_int_equal(ring_end(r), 10003 + 4096 + 8192);
	assert_int_equal(ring_start(r), ring_end(r) - 4096);
	n = ring_peek(r, ring_start(r), SIZE_MAX, &p, &tag);
	assert_int_equal(tag, 1);
	check_ring(r, &m, SIZE_MAX);

	free(big);
	ring_free(r);
	model_free(&m);
}

static void
test_monotonic(void **state)
{
	struct ring	*r;
	unsigned char	 buf[9000];
	uint64_t	 total = 0, last_start = 0;
	size_t		 i, len;

	(void)state;
	t_seed(42);
	r = ring_create(5000);
	assert_non_null(r);
	for (i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)t_rand();
	for (i = 0; i < 3000; i++) {
		len = t_below(4) == 0 ? t_below(sizeof buf) : t_below(300);
		ring_append(r, (int)t_below(2),
		    buf + t_below(sizeof buf - len + 1), len);
		total += len;
		assert_int_equal(ring_end(r), total);
		assert_true(ring_start(r) >= last_start);
		assert_true(ring_start(r) <= ring_end(r));
		assert_true(ring_end(r) - ring_start(r) <= 5000);
		last_start = ring_start(r);
	}
	assert_true(total > 1000000);
	ring_free(r);
}

/* Start lands on a character boundary, however the overflow falls. */
static void
test_utf8_start(void **state)
{
	static const char	 pat[] = "é中😀aÿ€𝄞bç";
	struct ring		*r;
	struct model		 m;
	uint64_t		 raw;
	size_t			 plen = sizeof pat - 1, i, chunk, moved = 0;
	unsigned char		*s;

	(void)state;
	model_init(&m);
	r = ring_create(4096);
	assert_non_null(r);
	s = malloc(plen * 64);
	assert_non_null(s);
	for (i = 0; i < 64; i++)
		memcpy(s + i * plen, pat, plen);

	for (i = 0; i < 4000; i++) {
		chunk = 1 + i % 97;
		both_append(r, &m, 0, s + (m.len % plen), chunk);
		if (ring_end(r) <= 4096)
			continue;
		raw = ring_end(r) - 4096;
		assert_false(is_cont(m.data[ring_start(r)]));
		/* At most the rest of one character, or one ASCII byte. */
		assert_true(ring_start(r) >= raw);
		assert_true(ring_start(r) - raw <= 3);
		if (ring_start(r) > raw)
			moved++;
	}
	assert_true(moved > 0);
	check_ring(r, &m, SIZE_MAX);

	free(s);
	ring_free(r);
	model_free(&m);
}

/*
 * Overflow a pattern of escape sequences at every alignment and with
 * several chunkings: the start is never inside a sequence or a character.
 */
static void
test_escape_alignment(void **state)
{
	static const char	 pat[] =
	    "\x1b[1;31mred\x1b[0m \x1b]0;title é\x07text\n"
	    "\x1b]8;;http://x.org/\x1b\\link\x1b]8;;\x1b\\ 中文 "
	    "\x1bPq#0;2;0;0;0#0~~\x1b\\\x1b(B\x1b" "7ok\x1b" "8\r\n"
	    "\x1b[?25h\x1b[2 q\x1b=\x1b_Gf=24\x1b\\😀";
	static const size_t	 splits[] = { 1, 3, 61, 0 };
	size_t			 plen = sizeof pat - 1, total, a, i, si, len;
	size_t			 seen_moved = 0, maxmove = 0;
	unsigned char		*s, *in, *hit;
	struct ring		*r;
	uint64_t		 raw, st;

	(void)state;
	total = 4096 + 3 * plen;
	s = malloc(total + plen);
	assert_non_null(s);
	for (i = 0; i < total + plen; i += plen)
		memcpy(s + i, pat, plen < total + plen - i ? plen :
		    total + plen - i);
	in = ref_inside(s, total + plen);
	hit = calloc(plen, 1);
	assert_non_null(hit);

	/* Sanity of the reference parser itself. */
	assert_false(in[0]);
	assert_true(in[1]);
	assert_true(in[6]);
	assert_false(in[7]);

	for (a = 0; a < plen; a++) {
		for (si = 0; si < sizeof splits / sizeof splits[0]; si++) {
			r = ring_create(4096);
			assert_non_null(r);
			len = 4096 + plen + a;	/* raw start plen + a */
			if (splits[si] == 0)
				ring_append(r, 0, s, len);
			else {
				for (i = 0; i < len; i += splits[si])
					ring_append(r, 0, s + i,
					    len - i < splits[si] ? len - i :
					    splits[si]);
			}
			assert_int_equal(ring_end(r), len);
			raw = len - 4096;
			st = ring_start(r);
			hit[raw % plen] = 1;
			assert_true(st >= raw);
			assert_true(st < raw + T_WINDOW);
			if (in[st] || is_cont(s[st]))
				fail_msg("alignment %zu split %zu: start %llu "
				    "inside (raw %llu)", a, splits[si],
				    (unsigned long long)st,
				    (unsigned long long)raw);
			if (st > raw)
				seen_moved++;
			if (st - raw > maxmove)
				maxmove = (size_t)(st - raw);
			ring_free(r);
		}
	}
	for (a = 0; a < plen; a++)
		assert_true(hit[a]);
	assert_true(seen_moved > 0);
	/* Longest token is the OSC 8 with its URL. */
	assert_true(maxmove <= 40);

	free(hit);
	free(in);
	free(s);
}

/* Exact answers where the state is known from offset 0 or by lookback. */
static void
test_safe_start_known(void **state)
{
	struct ring	*r;
	char		 buf[300];

	(void)state;
	r = ring_create(4096);
	assert_non_null(r);
	/*        0   3   4       10 */
	ring_append(r, 0, "abc\x1b[1;31mdef", 13);
	assert_int_equal(ring_safe_start(r, 0, T_WINDOW), 0);
	assert_int_equal(ring_safe_start(r, 2, T_WINDOW), 2);
	assert_int_equal(ring_safe_start(r, 3, T_WINDOW), 3);
	assert_int_equal(ring_safe_start(r, 4, T_WINDOW), 10);
	assert_int_equal(ring_safe_start(r, 9, T_WINDOW), 10);
	assert_int_equal(ring_safe_start(r, 4, 6), 4);	/* window too small */
	assert_int_equal(ring_safe_start(r, 4, 0), 4);
	assert_int_equal(ring_safe_start(r, 13, T_WINDOW), 13);
	assert_int_equal(ring_safe_start(r, 99, T_WINDOW), 99);
	ring_free(r);

#define SAFE_CASE(str, from, want) do {					\
	r = ring_create(4096);						\
	assert_non_null(r);						\
	ring_append(r, 0, str, sizeof str - 1);				\
	assert_int_equal(ring_safe_start(r, from, T_WINDOW), want);	\
	ring_free(r);							\
} while (0)

	/* OSC to BEL; OSC to ST; DCS, APC, PM, SOS to ST. */
	SAFE_CASE("x\x1b]0;title\x07y", 2, 11);
	SAFE_CASE("x\x1b]0;title\x07y", 10, 11);
	SAFE_CASE("x\x1b]8;;u\x1b\\z", 6, 9);
	SAFE_CASE("x\x1b]8;;u\x1b\\z", 7, 9);
	SAFE_CASE("x\x1bPq#0~\x1b\\z", 2, 9);
	SAFE_CASE("x\x1b_G\x07\x1b\\z", 2, 7);	/* BEL does not end APC */
	SAFE_CASE("x\x1b^pm\x1b\\z", 2, 7);
	SAFE_CASE("x\x1bXs\x1b[\x1b\\z", 2, 4);	/* ESC [ aborts: ESC safe */
	/* Two-byte sequences, with intermediates. */
	SAFE_CASE("x\x1b(Bz", 2, 4);
	SAFE_CASE("x\x1b(Bz", 3, 4);
	SAFE_CASE("x\x1b#8z", 2, 4);
	SAFE_CASE("x\x1b" "7z", 2, 3);
	SAFE_CASE("x\x1b=z", 2, 3);
	SAFE_CASE("x\x1b\\z", 2, 3);
	/* CSI with intermediate and private parameters. */
	SAFE_CASE("x\x1b[2 qz", 2, 6);
	SAFE_CASE("x\x1b[?25hz", 3, 7);
	/* Aborted CSI: the new ESC is a safe place to begin. */
	SAFE_CASE("x\x1b[1;\x1b[0mz", 3, 5);
	/* An ESC that starts ST is not, the one after is. */
	SAFE_CASE("\x1b]0;t\x1b\\\x1b[m", 5, 7);
	/* UTF-8: the next lead byte. */
	SAFE_CASE("a\xc3\xa9" "b", 2, 3);
	SAFE_CASE("\xf0\x9f\x98\x80\xe4\xb8\xad", 1, 4);
	SAFE_CASE("\xf0\x9f\x98\x80\xe4\xb8\xad", 5, 5); /* none */
	/* 0x9b is only a continuation byte, not a CSI. */
	SAFE_CASE("\x9b" "31mab", 0, 1);
#undef SAFE_CASE

	/*
	 * Lookback: 100 bytes of text, then a CSI.  From inside it the
	 * floor is 64 bytes back, in unknown state, and the scan settles on
	 * the text before it reaches the ESC.
	 */
	memset(buf, 'x', 100);
	memcpy(buf + 100, "\x1b[1;31myyyy", 11);
	r = ring_create(4096);
	assert_non_null(r);
	ring_append(r, 0, buf, 111);
	assert_int_equal(ring_safe_start(r, 103, T_WINDOW), 107);
	assert_int_equal(ring_safe_start(r, 100, T_WINDOW), 100);
	assert_int_equal(ring_safe_start(r, 99, T_WINDOW), 99);
	ring_free(r);

	/* More than 64 bytes into a long OSC: lookback cannot see the ESC. */
	memset(buf, 'x', sizeof buf);
	memcpy(buf + 10, "\x1b]0;", 4);
	buf[200] = T_BEL;
	r = ring_create(4096);
	assert_non_null(r);
	ring_append(r, 0, buf, 220);
	assert_int_equal(ring_safe_start(r, 40, T_WINDOW), 201);  /* sees ESC */
	assert_int_equal(ring_safe_start(r, 120, T_WINDOW), 201); /* sees BEL */
	assert_int_equal(ring_safe_start(r, 120, 50), 120);	  /* does not */
	ring_free(r);
}

/*
 * Overflow so that the raw start falls at an exact place in a crafted
 * stream whose beginning (with any ESC) is gone; check the start chosen.
 */
static void
overflow_case(const char *content, size_t raw_at, size_t want_at)
{
	struct ring	*r;
	unsigned char	*s;
	size_t		 clen = strlen(content), pre = 5000, len;

	assert_true(raw_at < clen);
	len = pre + raw_at + 4096;
	s = malloc(len);
	assert_non_null(s);
	memset(s, 'z', pre);
	memcpy(s + pre, content, clen);
	memset(s + pre + clen, '\n', len - pre - clen);

	r = ring_create(4096);
	assert_non_null(r);
	ring_append(r, 0, s, 4096);
	ring_append(r, 0, s + 4096, len - 4096);
	assert_int_equal(ring_end(r), len);
	if (ring_start(r) != pre + want_at)
		fail_msg("\"%s\" raw at %zu: start at %lld, want %zu",
		    content, raw_at, (long long)ring_start(r) - (long long)pre,
		    want_at);
	ring_free(r);
	free(s);
}

static void
test_safe_start_unknown(void **state)
{
	(void)state;
	/* Inside a CSI whose ESC is gone: after its final byte. */
	overflow_case("\x1b[1;31mtext", 2, 7);		/* at "1;31m" */
	overflow_case("\x1b[1;31mtext", 1, 7);		/* at "[1;31m" */
	overflow_case("\x1b[1;31mtext", 6, 7);		/* at "m" */
	overflow_case("\x1b[1;31m\xc3\xa9", 6, 7);
	/* Inside an OSC, DCS: after the terminator in sight. */
	overflow_case("\x1b]0;my title\x07text", 5, 13);
	overflow_case("\x1b]0;my title\x07text", 1, 13);
	overflow_case("\x1b]0;my title\x07\x1b[m", 5, 13);
	overflow_case("\x1b]8;;http://a/b\x1b\\text", 4, 17);
	overflow_case("\x1b]8;;http://a/b\x1b\\text", 15, 17);
	overflow_case("\x1b]8;;http://a/b\x1b\\text", 16, 17);
	overflow_case("\x1bPq#0;2;0;0;0#0~~\x1b\\text", 3, 19);
	overflow_case("\x1bPq#0;2;0;0;0#0~~\x1b\\\x1b[0m", 3, 19);
	/* A BEL in sight does not make a DCS end there. */
	overflow_case("\x1bPq\x07q\x1b\\text", 2, 7);
	overflow_case("\x1b]0;a\x07" "b\x1b[m", 4, 6);
	/* Inside a two-byte sequence with intermediates. */
	overflow_case("\x1b(Btext", 1, 3);
	/* Text: a byte that could end a sequence is skipped, LF is not. */
	overflow_case("\ntext", 0, 0);
	overflow_case("text", 0, 1);
	overflow_case("Processing\n", 0, 1);	/* ESC P unbelieved */
	overflow_case("]]]] plain\n", 0, 1);	/* ESC ] unbelieved */
	overflow_case("\xc3\xa9t", 0, 0);
	overflow_case("\xc3\xa9t", 1, 2);
	overflow_case("\xe4\xb8\xad\xe6\x96\x87", 1, 3);
	/* At an ESC: safe unless it may be ST. */
	overflow_case("\x1b[0mx", 0, 0);
	overflow_case("\x1b\\x", 0, 2);
	/* Text before a BEL might be an OSC title: after the BEL. */
	overflow_case("title\x07more", 0, 6);
}

/* When no offset in the window is safe, the start stays raw. */
static void
test_fallback_raw(void **state)
{
	struct ring	*r;
	unsigned char	*s;
	size_t		 i, len = 9000;

	(void)state;
	s = malloc(len);
	assert_non_null(s);

	/* All continuation bytes. */
	memset(s, 0x80, len);
	r = ring_create(4096);
	assert_non_null(r);
	ring_append(r, 0, s, 5000);
	assert_int_equal(ring_start(r), 5000 - 4096);
	ring_append(r, 0, s, 123);
	assert_int_equal(ring_start(r), 5123 - 4096);
	/* Offsets no longer held are no candidates; the answer is off. */
	assert_int_equal(ring_safe_start(r, 1000, T_WINDOW), 1000);
	ring_free(r);

	/* From before the start, the first held safe offset. */
	memset(s, '\n', len);
	r = ring_create(4096);
	assert_non_null(r);
	ring_append(r, 0, s, 5000);
	assert_int_equal(ring_start(r), 5000 - 4096);
	assert_int_equal(ring_safe_start(r, 5000 - 4096 - 10, T_WINDOW),
	    5000 - 4096);
	ring_free(r);

	/* A CSI whose parameters run past the window. */
	s[0] = T_ESC;
	s[1] = '[';
	for (i = 2; i < len; i++)
		s[i] = (i & 1) ? ';' : '1';
	s[len - 1] = 'm';
	r = ring_create(4096);
	assert_non_null(r);
	ring_append(r, 0, s, 4096);
	ring_append(r, 0, s + 4096, 1000);
	assert_int_equal(ring_start(r), 5096 - 4096);
	ring_append(r, 0, s + 5096, 7);
	assert_int_equal(ring_start(r), 5103 - 4096);
	assert_int_equal(ring_safe_start(r, 5000, T_WINDOW), 5000);
	/* The end of the CSI is within the window: just after it. */
	ring_append(r, 0, s + 5103, len - 5103);
	ring_append(r, 0, "a", 1);
	assert_int_equal(ring_start(r), len + 1 - 4096);
	ring_free(r);

	/* A DCS that ends beyond the window (ESC \ in sight is too far). */
	memset(s, 'q', len);
	memcpy(s, "\x1bP", 2);
	memcpy(s + 5200, "\x1b\\", 2);
	r = ring_create(4096);
	assert_non_null(r);
	ring_append(r, 0, s, 5000);
	/* Not believed in the window: the first settled byte. */
	assert_int_equal(ring_start(r), 5000 - 4096 + 1);
	ring_free(r);
	free(s);
}

static void
test_tags_alternating(void **state)
{
	struct ring	*r;
	struct model	 m;
	unsigned char	 buf[600];
	size_t		 i, len;
	int		 tag;

	(void)state;
	t_seed(7);
	model_init(&m);
	r = ring_create(4096);
	assert_non_null(r);
	for (i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)('a' + i % 26);
	for (i = 0; i < 2000; i++) {
		len = 1 + t_below(i % 50 == 0 ? sizeof buf : 40);
		/* Mostly alternate, sometimes repeat (merged). */
		tag = (t_below(5) == 0) ? m.len > 0 && m.tags[m.len - 1] :
		    !(m.len > 0 && m.tags[m.len - 1]);
		both_append(r, &m, tag, buf, len);
		check_ring(r, &m, (i & 1) ? SIZE_MAX : 1 + t_below(64));
	}
	ring_free(r);
	model_free(&m);
}

/* A full run table drops the oldest run: start at the second-oldest's. */
static void
test_run_eviction(void **state)
{
	struct ring	*r;
	struct model	 m;
	const void	*p;
	size_t		 i;
	uint64_t	 start;
	int		 tag;

	(void)state;
	model_init(&m);
	r = ring_create(1 << 20);
	assert_non_null(r);

	for (i = 0; i < RING_MAX_RUNS; i++)
		both_append(r, &m, (int)(i & 1), "abc", 3);
	assert_int_equal(ring_start(r), 0);
	assert_int_equal(ring_end(r), 3 * RING_MAX_RUNS);
	check_ring(r, &m, SIZE_MAX);

	/* Same tag as the last run: merged, nothing dropped. */
	both_append(r, &m, 1, "de", 2);
	assert_int_equal(ring_start(r), 0);

	/* A new run: the first one goes. */
	both_append(r, &m, 0, "f", 1);
	assert_int_equal(ring_start(r), 3);
	assert_int_equal(ring_peek(r, 3, SIZE_MAX, &p, &tag), 3);
	assert_int_equal(tag, 1);
	both_append(r, &m, 1, "g", 1);
	assert_int_equal(ring_start(r), 6);
	assert_int_equal(ring_peek(r, 6, SIZE_MAX, &p, &tag), 3);
	assert_int_equal(tag, 0);
	check_ring(r, &m, SIZE_MAX);

	/* It keeps going one run at a time, tags right throughout. */
	start = 6;
	for (i = 0; i < 1000; i++) {
		both_append(r, &m, !m.tags[m.len - 1], "hi", 2);
		start += 3;
		assert_int_equal(ring_start(r), start);
	}
	check_ring(r, &m, SIZE_MAX);
	check_ring(r, &m, 2);

	/* A byte overflow frees runs again: no more evictions. */
	{
		unsigned char	*big = malloc(1 << 20);

		assert_non_null(big);
		memset(big, '\n', 1 << 20);
		both_append(r, &m, 0, big, (1 << 20) - 10);
		/* Raw start is in "hi" text: one letter is skipped. */
		assert_int_equal(ring_start(r), ring_end(r) - (1 << 20) + 1);
		/*
		 * One-byte runs of newlines: the start follows raw, which an
		 * eviction (of a one-byte run) would push one further.
		 */
		for (i = 0; i < 3000; i++) {
			both_append(r, &m, (int)(i & 1), "\n", 1);
			if (i >= 10)
				assert_int_equal(ring_start(r),
				    ring_end(r) - (1 << 20));
		}
		check_ring(r, &m, SIZE_MAX);
		free(big);
	}

	ring_free(r);
	model_free(&m);
}

static void
test_copy_across_wrap(void **state)
{
	struct ring	*r;
	struct model	 m;
	unsigned char	 buf[5000], out[5000];
	size_t		 i, n, want;
	uint64_t	 off, end;

	(void)state;
	t_seed(99);
	model_init(&m);
	r = ring_create(4096);
	assert_non_null(r);
	for (i = 0; i < sizeof buf; i++)
		buf[i] = (i % 3 == 0) ? '\n' : (unsigned char)t_rand();
	both_append(r, &m, 0, buf, 3000);
	both_append(r, &m, 1, buf + 3000, 2000);
	end = ring_end(r);
	assert_int_equal(end, 5000);
	assert_true(ring_start(r) >= 5000 - 4096);

	/* From the start: the whole thing, across the wrap and the tags. */
	n = ring_copy(r, ring_start(r), out, sizeof out);
	assert_int_equal(n, end - ring_start(r));
	assert_memory_equal(out, buf + ring_start(r), n);

	for (off = ring_start(r); off < end; off += 37) {
		for (want = 0; want < 4200; want += 517) {
			memset(out, 0xee, sizeof out);
			n = ring_copy(r, off, out, want);
			assert_int_equal(n, want < end - off ? want :
			    end - off);
			assert_memory_equal(out, buf + off, n);
			assert_int_equal(out[n], 0xee);
		}
	}
	/* Exactly around the physical end (offset 4096). */
	n = ring_copy(r, 4090, out, 12);
	assert_int_equal(n, 12);
	assert_memory_equal(out, buf + 4090, 12);
	check_ring(r, &m, SIZE_MAX);

	ring_free(r);
	model_free(&m);
}

/* Random sizes and tags over arbitrary bytes, against the model and rule. */
static void
test_random_differential(void **state)
{
	static const unsigned char alpha[] = {
	    T_ESC, T_ESC, T_ESC, T_BEL, '[', '[', ']', 'P', 'X', '^', '_',
	    '\\', '\\', '0', '1', ';', '?', ' ', '(', '#', 'm', 'H', 'a', 'z',
	    '\n', '\r', 0x7f, 0x80, 0x9b, 0xbf, 0xc3, 0xe4, 0xf0, 0x00, 0xff
	};
	struct ring	*r;
	struct model	 m;
	unsigned char	*buf;
	size_t		 cap, i, j, len, round, bufsize = 3 * 8000;
	size_t		 moved = 0, raws = 0;
	uint64_t	 old_start, raw, want, off;
	int		 tag;

	(void)state;
	for (round = 0; round < 4; round++) {
		t_seed(1000 + round);
		model_init(&m);
		cap = 4096 + t_below(3000);
		r = ring_create(cap);
		assert_non_null(r);
		buf = malloc(bufsize);
		assert_non_null(buf);

		for (i = 0; i < 2500; i++) {
			switch (t_below(10)) {
			case 0:
				len = t_below(3 * cap);
				break;
			case 1:
			case 2:
				len = t_below(cap);
				break;
			default:
				len = t_below(64);
				break;
			}
			for (j = 0; j < len; j++)
				buf[j] = (round & 1) ? (unsigned char)t_rand() :
				    alpha[t_below(sizeof alpha)];
			tag = (int)t_below(2);
			old_start = ring_start(r);

			both_append(r, &m, tag, buf, len);

			assert_int_equal(ring_end(r), m.len);
			assert_true(ring_start(r) >= old_start);
			raw = m.len > cap ? m.len - cap : 0;
			if (raw > old_start) {
				/* Overflowed: the rule, from raw. */
				want = oracle_safe(m.data, m.len, raw, raw,
				    T_WINDOW);
				assert_int_equal(ring_start(r), want);
				assert_true(ring_start(r) - raw < T_WINDOW);
				if (want > raw)
					moved++;
				else
					raws++;
			} else
				assert_int_equal(ring_start(r), old_start);
			if (i % 5 == 0 || len > cap)
				check_ring(r, &m, (i & 1) ? SIZE_MAX :
				    1 + t_below(cap));

			/* ring_safe_start on its own, with lookback. */
			if (ring_end(r) > ring_start(r)) {
				off = ring_start(r) + t_below((size_t)
				    (ring_end(r) - ring_start(r)));
				len = t_below(2) ? T_WINDOW : t_below(40);
				assert_int_equal(ring_safe_start(r, off, len),
				    oracle_safe(m.data, m.len, ring_start(r),
				    off, len));
			}
		}
		check_ring(r, &m, SIZE_MAX);
		assert_true(moved > 0);
		assert_true(raws > 0);
		free(buf);
		ring_free(r);
		model_free(&m);
	}
}

/* Random well-formed terminal output, split anywhere: start always safe. */
static void
test_random_terminal(void **state)
{
	struct ring	*r;
	struct model	 m;
	unsigned char	*s, *in;
	size_t		 slen, pos = 0, len, i, moved = 0;
	uint64_t	 raw, st;
	int		 tag;

	(void)state;
	t_seed(2024);
	model_init(&m);
	s = gen_terminal(400000, &slen);
	in = ref_inside(s, slen);
	r = ring_create(4096);
	assert_non_null(r);

	for (i = 0; pos < slen; i++) {
		len = t_below(8) == 0 ? t_below(6000) : t_below(200);
		if (len > slen - pos)
			len = slen - pos;
		/* Tags change, but only between appends. */
		tag = (i / 7) & 1;
		both_append(r, &m, tag, s + pos, len);
		pos += len;
		if (ring_end(r) <= 4096)
			continue;
		raw = ring_end(r) - 4096;
		st = ring_start(r);
		assert_true(st >= raw);
		assert_true(st - raw <= 64);
		if (st == ring_end(r))
			continue;
		if (in[st] || is_cont(s[st]))
			fail_msg("append %zu: start %llu is inside "
			    "(raw %llu)", i, (unsigned long long)st,
			    (unsigned long long)raw);
		if (st > raw)
			moved++;
		if (i % 50 == 0)
			check_ring(r, &m, SIZE_MAX);
	}
	assert_true(moved > 100);
	check_ring(r, &m, SIZE_MAX);

	ring_free(r);
	model_free(&m);
	free(in);
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_append_within),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_append_larger),
		cmocka_unit_test(test_monotonic),
		cmocka_unit_test(test_utf8_start),
		cmocka_unit_test(test_escape_alignment),
		cmocka_unit_test(test_safe_start_known),
		cmocka_unit_test(test_safe_start_unknown),
		cmocka_unit_test(test_fallback_raw),
		cmocka_unit_test(test_tags_alternating),
		cmocka_unit_test(test_run_eviction),
		cmocka_unit_test(test_copy_across_wrap),
		cmocka_unit_test(test_random_differential),
		cmocka_unit_test(test_random_terminal),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
