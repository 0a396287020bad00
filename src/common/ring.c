/*
 * ring.c: the session output ring.
 *
 * This file owns a session's buffered output: one fixed byte array written
 * circularly and addressed by absolute 64-bit offsets, the table of tag runs
 * (stdout or stderr) over the bytes held, and the choice of where the held
 * history begins once old bytes are dropped.  Appending is the hot path of
 * PTY output, so it copies in at most two pieces and only ever looks at a
 * bounded number of bytes near the new start; nothing else is per-byte.
 * No sockets, no logging, no globals; after ring_create() nothing fails.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define RING_SAFE_WINDOW	256	/* bytes searched for a safe start */
#define RING_SAFE_LOOKBACK	64	/* held bytes looked at before that */
#define RING_RUNS_INITIAL	16	/* first run table size, power of 2 */

#define RING_BEL	0x07
#define RING_ESC	0x1b

/* Possible escape parser states, as a set of bits. */
#define RING_S_GROUND	0x01U	/* not in a sequence */
#define RING_S_ESC	0x02U	/* after ESC */
#define RING_S_INTER	0x04U	/* after ESC and intermediates 0x20-0x2f */
#define RING_S_CSI	0x08U	/* after ESC [ and parameters 0x20-0x3f */
#define RING_S_OSC	0x10U	/* in ESC ] ..., ends at BEL or ESC \ */
#define RING_S_STR	0x20U	/* in ESC P, X, ^ or _ ..., ends at ESC \ */
#define RING_S_SHORT	(RING_S_ESC | RING_S_INTER | RING_S_CSI)
#define RING_S_STRING	(RING_S_OSC | RING_S_STR)

struct ring_run {
	uint64_t	 off;		/* first offset of the run */
	int		 tag;
};

struct ring {
	unsigned char	*buf;
	size_t		 size;
	uint64_t	 start;
	uint64_t	 end;

	struct ring_run	*runs;		/* circular, oldest at runs_first */
	size_t		 runs_size;	/* entries allocated, a power of 2 */
	size_t		 runs_first;
	size_t		 nruns;
};

static struct ring_run *
ring_run(const struct ring *r, size_t i)
{
	return (&r->runs[(r->runs_first + i) & (r->runs_size - 1)]);
}

static unsigned char
ring_byte(const struct ring *r, uint64_t off)
{
	return (r->buf[off % r->size]);
}

/* The oldest offset whose byte is still in the array, start or not. */
static uint64_t
ring_held(const struct ring *r)
{
	if (r->end > r->size && r->end - r->size > r->start)
		return (r->end - r->size);
	return (r->start);
}

struct ring *
ring_create(size_t size)
{
	struct ring	*r;

	if (size < RING_MIN_SIZE)
		size = RING_MIN_SIZE;

	if ((r = calloc(1, sizeof *r)) == NULL)
		return (NULL);
	/* malloc, not calloc: pages never written stay unresident. */
	if ((r->buf = malloc(size)) == NULL)
		goto fail;
	r->size = size;
	r->runs = calloc(RING_RUNS_INITIAL, sizeof *r->runs);
	if (r->runs == NULL)
		goto fail;
	r->runs_size = RING_RUNS_INITIAL;
	return (r);

fail:
	free(r->buf);
	free(r);
	return (NULL);
}

void
ring_free(struct ring *r)
{
	if (r == NULL)
		return;
	free(r->runs);
	free(r->buf);
	free(r);
}

uint64_t
ring_start(const struct ring *r)
{
	return (r->start);
}

uint64_t
ring_end(const struct ring *r)
{
	return (r->end);
}

size_t
ring_capacity(const struct ring *r)
{
	return (r->size);
}

/*
 * A byte outside 0x20-0x7e cannot continue an ESC or CSI sequence: such a
 * sequence is taken to have been abandoned before it, so the byte is text.
 */
static unsigned int
ring_esc_abandon(unsigned int set, unsigned char c)
{
	if (c == RING_ESC || (c >= 0x20 && c <= 0x7e))
		return (set);
	if (set & RING_S_SHORT)
		set = (set & ~RING_S_SHORT) | RING_S_GROUND;
	return (set);
}

/* Every state the parser may be in after c, from any state in set. */
static unsigned int
ring_esc_next(unsigned int set, unsigned char c)
{
	unsigned int	next = 0;

	if (c == RING_ESC)
		return (RING_S_ESC);	/* from anywhere, even a string */

	if (set & RING_S_GROUND)
		next |= RING_S_GROUND;
	if (set & RING_S_ESC) {
		if (c == '[')
			next |= RING_S_CSI;
		else if (c == ']')
			next |= RING_S_OSC;
		else if (c == 'P' || c == 'X' || c == '^' || c == '_')
			next |= RING_S_STR;
		else if (c >= 0x20 && c <= 0x2f)
			next |= RING_S_INTER;
		else
			next |= RING_S_GROUND;	/* final 0x30-0x7e */
	}
	if (set & RING_S_INTER)
		next |= (c >= 0x20 && c <= 0x2f) ? RING_S_INTER : RING_S_GROUND;
	if (set & RING_S_CSI)
		next |= (c >= 0x20 && c <= 0x3f) ? RING_S_CSI : RING_S_GROUND;
	if (set & RING_S_OSC)
		next |= (c == RING_BEL) ? RING_S_GROUND : RING_S_OSC;
	if (set & RING_S_STR)
		next |= RING_S_STR;
	return (next);
}

/*
 * Bytes before the scan floor are unknown, so a string (OSC, DCS, ...) may
 * be open there; that is believed only when its terminator is in sight
 * before the first ESC from floor up to limit: a BEL (an OSC may be open) or
 * that ESC being ESC \ (any string may be).  Plain text believes none.
 */
static unsigned int
ring_esc_strings(const struct ring *r, uint64_t floor, uint64_t limit)
{
	const unsigned char	*p, *esc;
	uint64_t		 off = floor, e;
	unsigned int		 strings = 0;
	size_t			 pos, n;

	while (off < limit) {
		pos = off % r->size;
		n = r->size - pos;
		if (n > limit - off)
			n = limit - off;
		p = r->buf + pos;
		esc = memchr(p, RING_ESC, n);
		if (memchr(p, RING_BEL, esc != NULL ? (size_t)(esc - p) : n))
			strings |= RING_S_OSC;
		if (esc != NULL) {
			e = off + (uint64_t)(esc - p) + 1;
			if (e < r->end && ring_byte(r, e) == '\\')
				strings |= RING_S_STRING;
			break;
		}
		off += n;
	}
	return (strings);
}

uint64_t
ring_safe_start(const struct ring *r, uint64_t off, size_t window)
{
	uint64_t	 held, first, floor, limit, p;
	unsigned int	 set, strings = 0, eff;
	unsigned char	 c;
	size_t		 pos;

	if (window == 0 || off >= r->end)
		return (off);
	limit = (window < r->end - off) ? off + window : r->end;
	held = ring_held(r);
	first = (off > held) ? off : held;
	if (first >= limit)
		return (off);
	floor = (first - held > RING_SAFE_LOOKBACK) ?
	    first - RING_SAFE_LOOKBACK : held;

	if (floor == 0)
		set = RING_S_GROUND;	/* the very first byte: known */
	else {
		strings = ring_esc_strings(r, floor, limit);
		set = RING_S_GROUND | RING_S_SHORT | strings;
	}

	pos = floor % r->size;
	for (p = floor; p < limit; p++) {
		c = r->buf[pos];
		eff = ring_esc_abandon(set, c);
		if (p >= first && (c < 0x80 || c > 0xbf)) {
			if (eff == RING_S_GROUND)
				return (p);
			/* An ESC that is not ST always begins a sequence. */
			if (c == RING_ESC && p + 1 < r->end &&
			    ring_byte(r, p + 1) != '\\')
				return (p);
		}
		set = ring_esc_next(eff, c);
		if (p == floor)
			set &= ~(RING_S_STRING & ~strings);
		if (++pos == r->size)
			pos = 0;
	}
	return (off);
}

/* Index of the run holding off, which must be in [start, end). */
static size_t
ring_run_find(const struct ring *r, uint64_t off)
{
	size_t	lo = 0, hi = r->nruns, mid;

	/* Run 0 starts at or before start, so the answer exists. */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (ring_run(r, mid)->off <= off)
			lo = mid;
		else
			hi = mid;
	}
	return (lo);
}

/* Double the run table; 0 when it is at its limit or memory is short. */
static int
ring_runs_grow(struct ring *r)
{
	struct ring_run	*runs;
	size_t		 size, i;

	if (r->runs_size >= RING_MAX_RUNS)
		return (0);
	size = r->runs_size * 2;
	if ((runs = malloc(size * sizeof *runs)) == NULL)
		return (0);
	for (i = 0; i < r->nruns; i++)
		runs[i] = *ring_run(r, i);
	free(r->runs);
	r->runs = runs;
	r->runs_size = size;
	r->runs_first = 0;
	return (1);
}

static void
ring_runs_shift(struct ring *r)
{
	r->runs_first = (r->runs_first + 1) & (r->runs_size - 1);
	r->nruns--;
}

/*
 * Bring the run table up to date after bytes [from, r->end) were appended
 * with tag and the start became *start: drop the runs now wholly before it,
 * then open a run for the new bytes unless they extend the last one.  When
 * the table cannot take another run the oldest is dropped and *start moves
 * to the second-oldest's first byte.
 */
static void
ring_runs_update(struct ring *r, int tag, uint64_t from, uint64_t *start)
{
	struct ring_run	*run;
	uint64_t	 run_end;
	int		 open;

	open = (r->nruns == 0 || ring_run(r, r->nruns - 1)->tag != tag);
	while (r->nruns > 0) {
		if (r->nruns > 1)
			run_end = ring_run(r, 1)->off;
		else
			run_end = open ? from : r->end;
		if (run_end > *start)
			break;
		ring_runs_shift(r);
	}
	if (!open)
		return;

	if (r->nruns == r->runs_size && !ring_runs_grow(r)) {
		*start = ring_run(r, 1)->off;
		ring_runs_shift(r);
	}
	run = ring_run(r, r->nruns);
	run->off = from;
	run->tag = tag;
	r->nruns++;
}

void
ring_append(struct ring *r, int tag, const void *buf, size_t len)
{
	const unsigned char	*src = buf;
	uint64_t		 from = r->end, start = r->start;
	size_t			 pos, n;

	if (len == 0)
		return;
	tag = (tag != 0);

	r->end += len;
	if (len > r->size) {
		src += len - r->size;
		len = r->size;
	}
	pos = (r->end - len) % r->size;
	n = r->size - pos;
	if (n > len)
		n = len;
	memcpy(r->buf + pos, src, n);
	if (len > n)
		memcpy(r->buf, src + n, len - n);

	/* Decided on the final contents: r->end is already updated. */
	if (r->end > r->size && r->end - r->size > start)
		start = ring_safe_start(r, r->end - r->size, RING_SAFE_WINDOW);
	ring_runs_update(r, tag, from, &start);
	r->start = start;
}

size_t
ring_peek(const struct ring *r, uint64_t off, size_t max, const void **ptr,
    int *tag)
{
	const struct ring_run	*run;
	uint64_t		 limit;
	size_t			 i, pos, n;

	*ptr = NULL;
	*tag = 0;
	if (off < r->start || off >= r->end)
		return (0);

	i = ring_run_find(r, off);
	run = ring_run(r, i);
	limit = (i + 1 < r->nruns) ? ring_run(r, i + 1)->off : r->end;

	pos = off % r->size;
	n = r->size - pos;
	if (n > limit - off)
		n = limit - off;
	if (n > max)
		n = max;
	*ptr = r->buf + pos;
	*tag = run->tag;
	return (n);
}

size_t
ring_copy(const struct ring *r, uint64_t off, void *dst, size_t len)
{
	unsigned char	*out = dst;
	size_t		 pos, n, done = 0;

	if (off < r->start || off >= r->end)
		return (0);
	if (len > r->end - off)
		len = r->end - off;
	while (done < len) {
		pos = (off + done) % r->size;
		n = r->size - pos;
		if (n > len - done)
			n = len - done;
		memcpy(out + done, r->buf + pos, n);
		done += n;
	}
	return (done);
}
