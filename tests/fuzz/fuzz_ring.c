/*
 * fuzz_ring.c: libFuzzer target for the session output ring.
 *
 * The input is a program.  Its first two bytes choose the capacity (below
 * RING_MIN_SIZE, odd sizes, or past 64 KB so that the run table can fill)
 * and the max of the final ring_peek() walk; then each byte is an
 * operation taking its arguments from the bytes after it: appends of input
 * bytes, of repeated patterns (up to four capacities), of terminal escape
 * sequences, runs of short appends with alternating tags, ring_peek() and
 * ring_copy() at offsets in, around and outside the held range, and
 * ring_safe_start() at any offset and window.  Missing bytes read as 0.
 *
 * A reference model keeps every byte ever appended, its tag, and the state
 * an escape parser run from offset 0 is in before it, and decides the
 * start by the rules of ring.h, written out again here: on overflow the
 * first safe offset of the 256-byte window (each parser state possible at
 * the floor followed on its own), then the run table's limit.
 *
 * After every append: end as appended, start as the model says, start <=
 * end, end - start <= capacity, the new bytes held as appended; when an
 * overflow moved the start, its byte is not a UTF-8 continuation byte
 * unless no safe offset was found in the window, and the parser run from
 * offset 0 is in ground there (or the byte is an ESC that is not ST) unless
 * a string the rule chose not to believe was open at the floor.  Every
 * ring_peek() is exactly as long as the wrap point, the next tag change and
 * max allow, with the model's bytes and tag, and finds nothing outside
 * [start, end); every ring_copy() copies the model's bytes.  Every 16
 * operations and at the end, all held bytes are compared and (while few
 * runs are held, and always at the end) walked with ring_peek().  Work per
 * input is bounded (appends, bytes) to keep executions fast.
 */
#include <string.h>

#include "ring.h"
#include "fuzz.h"

#define FUZZ_WINDOW	256		/* RING_SAFE_WINDOW in ring.c */
#define FUZZ_LOOKBACK	64		/* RING_SAFE_LOOKBACK in ring.c */
#define FUZZ_TOTAL_MAX	(256U << 10)	/* bytes appended per input */
#define FUZZ_APPENDS	1024		/* appends per input, */
#define FUZZ_APPENDS_BIG 80000		/* or with a capacity past 64 KB */
#define FUZZ_FULL_EVERY	16		/* operations between full checks */

#define FUZZ_BEL	0x07
#define FUZZ_ESC	0x1b

/* Escape parser states (ring.h), one at a time. */
enum fuzz_st {
	ST_GROUND,
	ST_ESC,
	ST_INTER,
	ST_CSI,
	ST_OSC,
	ST_STR,
	ST_COUNT
};

struct fuzz_in {
	const uint8_t	*p;
	size_t		 left;
};

struct fuzz_run {
	uint64_t	 off;
	int		 tag;
};

struct model {
	size_t		 cap;
	size_t		 appends;	/* ring_append() calls left */
	uint8_t		*data;
	uint8_t		*tags;
	uint8_t		*state;		/* parser state before each byte */
	uint64_t	 len;		/* = ring_end() */
	size_t		 alloc;
	uint64_t	 start;
	uint8_t		 st;		/* parser state after the last byte */
	struct fuzz_run	*runs;		/* the run table, oldest at first */
	size_t		 runs_first;
	size_t		 nruns;
	size_t		 runs_alloc;
};

static const char *fuzz_tokens[] = {
	"\x1b[0m", "\x1b[1;31m", "\x1b[38;5;208m", "\x1b[?1049h", "\x1b[2 q",
	"\x1b]0;title \xc3\xa9\x07", "\x1b]8;;http://example.com/\x1b\\",
	"\x1bPq#0;2;0;0;0#0~~@@-\x1b\\", "\x1b_Gf=24;AAAA\x1b\\",
	"\x1b^pm\x1b\\", "\x1bXsos\x1b\\", "\x1b(B", "\x1b#8", "\0337",
	"\x1b\\", "\x1b", "\x1b[", "\x1b]", "\x1bP", "\x07", "\r\n",
	"\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\x80\x80\x80",
	"text ", "\xff",
};

static uint8_t
in_u8(struct fuzz_in *in)
{
	if (in->left == 0)
		return (0);
	in->left--;
	return (*in->p++);
}

static uint16_t
in_u16(struct fuzz_in *in)
{
	uint16_t	v = in_u8(in);

	return ((uint16_t)(v << 8 | in_u8(in)));
}

FUZZ_NOCOV
static int
is_cont(uint8_t c)
{
	return (c >= 0x80 && c <= 0xbf);
}

/* In esc, inter or csi a byte outside 0x20-0x7e (and not ESC) is text. */
FUZZ_NOCOV
static int
st_abandon(int st, uint8_t c)
{
	if (c == FUZZ_ESC || (c >= 0x20 && c <= 0x7e))
		return (st);
	if (st == ST_ESC || st == ST_INTER || st == ST_CSI)
		return (ST_GROUND);
	return (st);
}

/* The state after c, from st (already abandoned if it was to be). */
FUZZ_NOCOV
static int
st_step(int st, uint8_t c)
{
	if (c == FUZZ_ESC)
		return (ST_ESC);
	switch (st) {
	case ST_ESC:
		if (c == '[')
			return (ST_CSI);
		if (c == ']')
			return (ST_OSC);
		if (c == 'P' || c == 'X' || c == '^' || c == '_')
			return (ST_STR);
		if (c >= 0x20 && c <= 0x2f)
			return (ST_INTER);
		return (ST_GROUND);
	case ST_INTER:
		return (c >= 0x20 && c <= 0x2f ? ST_INTER : ST_GROUND);
	case ST_CSI:
		return (c >= 0x20 && c <= 0x3f ? ST_CSI : ST_GROUND);
	case ST_OSC:
		return (c == FUZZ_BEL ? ST_GROUND : ST_OSC);
	case ST_STR:
		return (ST_STR);
	default:
		return (ST_GROUND);
	}
}

/* The oldest byte still in the ring's array (ring.c's ring_held). */
static uint64_t
model_held(const struct model *m)
{
	if (m->len > m->cap && m->len - m->cap > m->start)
		return (m->len - m->cap);
	return (m->start);
}

/*
 * The safe start search of ring.h over the model's bytes, with held as the
 * oldest byte held.  Returns the offset; *found says whether it is a safe
 * one, *trusted whether the true state at the floor was followed (it is
 * not when it is a string the rule does not believe), for the caller's
 * check against the true parser.
 */
FUZZ_NOCOV
static uint64_t
model_safe(const struct model *m, uint64_t held, uint64_t off, size_t window,
    int *found, int *trusted)
{
	uint64_t	 first, floor, limit, p, q;
	uint8_t		 c, alive[ST_COUNT], next[ST_COUNT];
	int		 s, osc_ok = 0, str_ok = 0, only_ground, t;

	*found = 0;
	*trusted = 0;
	if (window == 0 || off >= m->len)
		return (off);
	limit = (window < m->len - off) ? off + window : m->len;
	first = off > held ? off : held;
	if (first >= limit)
		return (off);
	floor = (first - held > FUZZ_LOOKBACK) ? first - FUZZ_LOOKBACK : held;

	memset(alive, 0, sizeof(alive));
	if (floor == 0)
		alive[ST_GROUND] = 1;
	else {
		for (q = floor; q < limit; q++) {
			if (m->data[q] == FUZZ_BEL)
				osc_ok = 1;
			if (m->data[q] == FUZZ_ESC) {
				if (q + 1 < m->len && m->data[q + 1] == '\\')
					osc_ok = str_ok = 1;
				break;
			}
		}
		alive[ST_GROUND] = alive[ST_ESC] = alive[ST_INTER] = 1;
		alive[ST_CSI] = 1;
		alive[ST_OSC] = osc_ok;
		alive[ST_STR] = str_ok;
	}

	/* Is the state the parser from 0 is really in among those followed? */
	t = m->state[floor];
	*trusted = alive[t];
	if (*trusted) {
		t = st_step(st_abandon(t, m->data[floor]), m->data[floor]);
		if ((t == ST_OSC && !osc_ok) || (t == ST_STR && !str_ok))
			*trusted = 0;
	}

	for (p = floor; p < limit; p++) {
		c = m->data[p];
		if (st_abandon(ST_ESC, c) == ST_GROUND &&
		    (alive[ST_ESC] || alive[ST_INTER] || alive[ST_CSI])) {
			alive[ST_ESC] = alive[ST_INTER] = alive[ST_CSI] = 0;
			alive[ST_GROUND] = 1;
		}
		if (p >= first && !is_cont(c)) {
			if (c == FUZZ_ESC && p + 1 < m->len &&
			    m->data[p + 1] != '\\') {
				*found = 1;
				return (p);
			}
			only_ground = alive[ST_GROUND];
			for (s = 0; s < ST_COUNT; s++)
				if (s != ST_GROUND && alive[s])
					only_ground = 0;
			if (only_ground) {
				*found = 1;
				return (p);
			}
		}
		memset(next, 0, sizeof(next));
		for (s = 0; s < ST_COUNT; s++)
			if (alive[s])
				next[st_step(s, c)] = 1;
		if (p == floor) {
			next[ST_OSC] &= osc_ok;
			next[ST_STR] &= str_ok;
		}
		memcpy(alive, next, sizeof(alive));
	}
	return (off);
}

static void
model_push_run(struct model *m, uint64_t off, int tag)
{
	struct fuzz_run	*nr;
	size_t		 n;

	if (m->runs_first + m->nruns == m->runs_alloc) {
		/* Slide down when at least half is free, else grow. */
		if (m->runs_first > 0 && m->runs_first >= m->nruns) {
			memmove(m->runs, m->runs + m->runs_first,
			    m->nruns * sizeof(*m->runs));
			m->runs_first = 0;
		} else {
			n = m->runs_alloc ? m->runs_alloc * 2 : 64;
			nr = realloc(m->runs, n * sizeof(*m->runs));
			FUZZ_CHECK(nr != NULL);
			m->runs = nr;
			m->runs_alloc = n;
		}
	}
	m->runs[m->runs_first + m->nruns].off = off;
	m->runs[m->runs_first + m->nruns].tag = tag;
	m->nruns++;
}

static void
model_pop_run(struct model *m)
{
	m->runs_first++;
	m->nruns--;
}

/* Where the tag run holding off ends, or limit if that comes first. */
FUZZ_NOCOV
static uint64_t
model_tag_end(const struct model *m, uint64_t off, uint64_t limit)
{
	uint64_t	 e;

	for (e = off + 1; e < limit; e++)
		if (m->tags[e] != m->tags[off])
			break;
	return (e);
}

/* One ring_peek() checked against the model; returns what it returned. */
static size_t
check_peek(const struct ring *r, const struct model *m, uint64_t off,
    size_t max, const uint8_t **base)
{
	const void	*p = &p;
	uint64_t	 limit;
	size_t		 n;
	int		 tag = 7;

	n = ring_peek(r, off, max, &p, &tag);
	if (off < m->start || off >= m->len) {
		FUZZ_CHECK(n == 0 && p == NULL);
		return (0);
	}
	if (max == 0) {
		FUZZ_CHECK(n == 0);
		return (0);
	}
	limit = off + (m->cap - off % m->cap);
	if (limit > m->len)
		limit = m->len;
	if (limit - off > max)
		limit = off + max;
	FUZZ_CHECK(p != NULL);
	FUZZ_CHECK(n == model_tag_end(m, off, limit) - off);
	FUZZ_CHECK(tag == m->tags[off]);
	FUZZ_CHECK(memcmp(p, m->data + off, n) == 0);
	/* All pieces lie in one array, at offset % capacity. */
	if (*base == NULL)
		*base = (const uint8_t *)p - off % m->cap;
	FUZZ_CHECK((const uint8_t *)p - off % m->cap == *base);
	return (n);
}

static void
check_copy(const struct ring *r, const struct model *m, uint64_t off,
    size_t len)
{
	uint8_t		*buf;
	size_t		 n, want;

	FUZZ_CHECK((buf = malloc(len > 0 ? len : 1)) != NULL);
	n = ring_copy(r, off, buf, len);
	if (off < m->start || off >= m->len)
		FUZZ_CHECK(n == 0);
	else {
		want = (len < m->len - off) ? len : (size_t)(m->len - off);
		FUZZ_CHECK(n == want);
		FUZZ_CHECK(memcmp(buf, m->data + off, n) == 0);
	}
	free(buf);
}

/* Bytes, tags and parser states of an append, in the model. */
FUZZ_NOCOV
static void
model_add(struct model *m, int tag, const uint8_t *buf, size_t len)
{
	size_t		 alloc, i;
	uint8_t		*nd, *nt, *ns;

	if (m->len + len > m->alloc) {
		alloc = m->alloc ? m->alloc : 65536;
		while (alloc < m->len + len)
			alloc *= 2;
		nd = realloc(m->data, alloc);
		FUZZ_CHECK(nd != NULL);
		m->data = nd;
		nt = realloc(m->tags, alloc);
		FUZZ_CHECK(nt != NULL);
		m->tags = nt;
		ns = realloc(m->state, alloc);
		FUZZ_CHECK(ns != NULL);
		m->state = ns;
		m->alloc = alloc;
	}
	memcpy(m->data + m->len, buf, len);
	memset(m->tags + m->len, tag, len);
	for (i = 0; i < len; i++) {
		m->state[m->len + i] = m->st;
		m->st = (uint8_t)st_step(st_abandon(m->st, buf[i]), buf[i]);
	}
	m->len += len;
}

/*
 * Append to the ring and to the model, which decides the start as ring.h
 * says; check that start, and the bytes the append brought.
 */
static void
both_append(struct ring *r, struct model *m, int tag, const uint8_t *buf,
    size_t len)
{
	uint64_t	 from = m->len, start = m->start, raw = 0, run_end;
	int		 open, overflow = 0, dropped = 0, found = 0;
	int		 trusted = 0;

	if (m->appends == 0)
		return;
	m->appends--;
	ring_append(r, tag, buf, len);
	if (len == 0) {
		FUZZ_CHECK(ring_end(r) == m->len && ring_start(r) == m->start);
		return;
	}
	tag = (tag != 0);
	model_add(m, tag, buf, len);

	/* Overflow: the first safe offset from the raw start. */
	if (m->len > m->cap && m->len - m->cap > start) {
		overflow = 1;
		raw = m->len - m->cap;
		start = model_safe(m, raw, raw, FUZZ_WINDOW, &found, &trusted);
	}

	/* Runs wholly before the start go; a new run may push one out. */
	open = (m->nruns == 0 || m->runs[m->runs_first + m->nruns - 1].tag !=
	    tag);
	while (m->nruns > 0) {
		if (m->nruns > 1)
			run_end = m->runs[m->runs_first + 1].off;
		else
			run_end = open ? from : m->len;
		if (run_end > start)
			break;
		model_pop_run(m);
	}
	if (open) {
		if (m->nruns == RING_MAX_RUNS) {
			start = m->runs[m->runs_first + 1].off;
			model_pop_run(m);
			dropped = 1;
		}
		model_push_run(m, from, tag);
	}
	m->start = start;

	FUZZ_CHECK(ring_end(r) == m->len);
	FUZZ_CHECK(ring_start(r) == m->start);
	FUZZ_CHECK(m->start <= m->len && m->len - m->start <= m->cap);
	if (overflow && !dropped) {
		FUZZ_CHECK(start >= raw && start - raw < FUZZ_WINDOW &&
		    start < m->len);
		if (found) {
			FUZZ_CHECK(!is_cont(m->data[start]));
			if (trusted)
				FUZZ_CHECK(st_abandon(m->state[start],
				    m->data[start]) == ST_GROUND ||
				    (m->data[start] == FUZZ_ESC &&
				    start + 1 < m->len &&
				    m->data[start + 1] != '\\'));
		} else
			FUZZ_CHECK(start == raw);
	}
	if (dropped)
		FUZZ_CHECK(m->tags[start] != m->tags[start - 1]);
	check_copy(r, m, from > m->start ? from : m->start,
	    (size_t)(m->len - (from > m->start ? from : m->start)));
}

/*
 * Everything held, through ring_copy() and a walk of ring_peek(); with
 * many runs held and walk false, only the ends are peeked (a full walk
 * then costs too much to repeat after every step).
 */
static void
check_all(const struct ring *r, const struct model *m, size_t max, int walk)
{
	const uint8_t	*base = NULL;
	uint64_t	 off;
	size_t		 n;

	FUZZ_CHECK(ring_end(r) == m->len);
	FUZZ_CHECK(ring_start(r) == m->start);
	FUZZ_CHECK(m->start <= m->len);
	FUZZ_CHECK(m->len - m->start <= m->cap);
	FUZZ_CHECK(ring_capacity(r) == m->cap);
	check_copy(r, m, m->start, m->cap + 16);
	if (walk || m->nruns <= 1024) {
		for (off = m->start; off < m->len; off += n)
			FUZZ_CHECK((n = check_peek(r, m, off, max, &base)) > 0);
	} else {
		check_peek(r, m, m->start, max, &base);
		check_peek(r, m, m->len - 1, max, &base);
	}
	check_peek(r, m, m->len, 16, &base);
	check_copy(r, m, m->len, 16);
	if (m->start > 0) {
		check_peek(r, m, m->start - 1, 16, &base);
		check_copy(r, m, m->start - 1, 16);
	}
}

/* An offset in, at the edges of, or outside the held range. */
static uint64_t
pick_offset(struct fuzz_in *in, const struct model *m, int how)
{
	uint64_t	 v = in_u16(in), span = m->len - m->start + 1;

	switch (how & 3) {
	case 0:
		return (m->start + v % span);
	case 1:
		return (m->len - (v % span < m->len ? v % span : m->len));
	case 2:
		return (m->start > v % 1024 ? m->start - v % 1024 : 0);
	default:
		return (m->len + v % 64);
	}
}

static size_t
pick_max(struct fuzz_in *in)
{
	uint8_t	v = in_u8(in);

	switch (v & 3) {
	case 0:
		return (v >> 2);
	case 1:
		return ((size_t)(v >> 2) << 8);
	case 2:
		return (SIZE_MAX);
	default:
		return (1);
	}
}

/* len bytes of the next k input bytes repeated (zeros if none are left). */
FUZZ_NOCOV
static uint8_t *
make_pattern(struct fuzz_in *in, size_t len)
{
	uint8_t		 pat[32];
	uint8_t		*buf;
	size_t		 k, i;

	k = in_u8(in) % sizeof(pat) + 1;
	if (k > in->left)
		k = in->left > 0 ? in->left : 1;
	memset(pat, 0, sizeof(pat));
	for (i = 0; i < k; i++)
		pat[i] = in_u8(in);
	FUZZ_CHECK((buf = malloc(len > 0 ? len : 1)) != NULL);
	for (i = 0; i < len; i++)
		buf[i] = pat[i % k];
	return (buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in	 in = { data, size };
	struct model	 m;
	struct ring	*r;
	const uint8_t	*base = NULL;
	const char	*tok;
	uint8_t		*buf, b0, b1, op, arg;
	uint64_t	 off, got, want;
	size_t		 size_arg, len, walk_max, i, nops;
	int		 tag, found, trusted;

	b0 = in_u8(&in);
	b1 = in_u8(&in);
	switch (b0 & 3) {
	case 0:
		size_arg = (size_t)b1 * 17;		/* mostly raised */
		break;
	case 1:
		size_arg = RING_MIN_SIZE + b1;		/* odd sizes */
		break;
	case 2:
		size_arg = RING_MIN_SIZE * (1 + (b1 & 15)) + (b1 >> 4);
		break;
	default:
		size_arg = 65536 + RING_MIN_SIZE + (size_t)b1 * 64;
		break;
	}
	walk_max = (b0 & 4) ? (size_t)(b0 >> 3) + 1 : SIZE_MAX;

	if ((r = ring_create(size_arg)) == NULL)
		return (0);
	memset(&m, 0, sizeof(m));
	m.cap = size_arg < RING_MIN_SIZE ? RING_MIN_SIZE : size_arg;
	m.appends = m.cap > RING_MAX_RUNS ? FUZZ_APPENDS_BIG : FUZZ_APPENDS;
	m.st = ST_GROUND;
	check_all(r, &m, walk_max, 1);

	for (nops = 1; in.left > 0 && m.len < FUZZ_TOTAL_MAX && m.appends > 0;
	    nops++) {
		op = in_u8(&in);
		tag = (op >> 3) & 1;
		arg = op >> 4;
		switch (op & 7) {
		case 0:		/* input bytes */
			len = (size_t)arg << 8 | in_u8(&in);
			if (len > in.left)
				len = in.left;
			both_append(r, &m, tag, in.p, len);
			in.p += len;
			in.left -= len;
			break;
		case 1:		/* a pattern, up to four capacities */
			len = (size_t)in_u16(&in) * (arg + 1);
			if (len > 4 * m.cap)
				len = 4 * m.cap;
			buf = make_pattern(&in, len);
			both_append(r, &m, tag, buf, len);
			free(buf);
			break;
		case 2:		/* a pattern of one to two capacities */
			len = m.cap + in_u16(&in) % (m.cap + 1);
			buf = make_pattern(&in, len);
			both_append(r, &m, tag, buf, len);
			free(buf);
			break;
		case 3:
			off = pick_offset(&in, &m, arg);
			check_peek(r, &m, off, pick_max(&in), &base);
			break;
		case 4:
			off = pick_offset(&in, &m, arg);
			len = in_u16(&in);
			check_copy(r, &m, off, arg & 4 ? len * 16 : len);
			break;
		case 5:
			off = pick_offset(&in, &m, arg);
			len = (arg & 4) ? in_u16(&in) : in_u8(&in);
			want = model_safe(&m, model_held(&m), off, len, &found,
			    &trusted);
			got = ring_safe_start(r, off, len);
			FUZZ_CHECK(got == want);
			break;
		case 6:		/* many short runs, alternating tags */
			len = (size_t)in_u16(&in) | (size_t)(arg & 1) << 16;
			buf = make_pattern(&in, 6);
			for (i = 0; i < len && m.appends > 0; i++)
				both_append(r, &m, (int)(i & 1) ^ tag,
				    buf + i % 3, 1 + (arg >> 1) % 3 * (i % 2));
			free(buf);
			break;
		default:	/* a terminal sequence or character */
			tok = fuzz_tokens[in_u8(&in) % (sizeof(fuzz_tokens) /
			    sizeof(fuzz_tokens[0]))];
			both_append(r, &m, tag, (const uint8_t *)tok,
			    strlen(tok));
			break;
		}
		if (nops % FUZZ_FULL_EVERY == 0)
			check_all(r, &m, SIZE_MAX, 0);
	}
	check_all(r, &m, walk_max, 1);

	ring_free(r);
	free(m.data);
	free(m.tags);
	free(m.state);
	free(m.runs);
	return (0);
}
