/*
 * ring.h: the session output ring.
 *
 * A fixed-capacity byte ring addressed by absolute 64-bit offsets: the first
 * byte ever appended has offset 0, and ring_end() is the total ever appended.
 * The ring holds the bytes [ring_start(), ring_end()), never more than the
 * capacity.  An append longer than the capacity keeps only its last
 * capacity bytes.  Appending copies in at most two pieces; the only per-byte
 * work is the bounded safe start search below.
 *
 * Safe start.  When an append overflows, the raw new start is
 * end - capacity (the bytes before it are gone).  The start is moved forward
 * to the first safe offset in [raw, raw + 256), never beyond end; if there is
 * none it stays at raw.  ring_safe_start() is that search.  An offset p is
 * safe when its byte is not a UTF-8 continuation byte (0x80-0xbf) and either
 * the parser state before p is known to be ground, or p's byte is an ESC
 * whose next byte is held and is not '\' (an ESC that is not ST always begins
 * a new sequence, whatever came before).  The state is found by scanning
 * held bytes from a floor: the first candidate less up to 64 bytes of
 * lookback, never before the oldest byte still held after the append (on
 * overflow the floor is raw itself).  At offset 0 the state is ground; at any
 * other floor it is unknown and is tracked as a set of possible states:
 *
 *   ground: ESC enters esc; anything else stays.
 *   esc (after ESC): '[' enters csi, ']' osc, 'P' 'X' '^' '_' string,
 *     0x20-0x2f inter, 0x30-0x7e ends the sequence.
 *   inter: 0x20-0x2f stays, 0x30-0x7e ends it.
 *   csi: 0x20-0x3f stays (parameters, intermediates), 0x40-0x7e ends it.
 *   osc: BEL ends it, ESC enters esc (so ESC \ ends it), anything else stays.
 *   string (DCS, SOS, PM, APC): ESC enters esc, anything else stays.
 *   ESC enters esc from every state.  In esc, inter or csi a byte outside
 *   0x20-0x7e abandons the sequence and is itself ground text.  The 8-bit
 *   C1 controls (0x9b and so on) are not recognised.
 *
 * An unknown floor may be in ground, esc, inter or csi.  It may also be in a
 * string, but that is believed only when a terminator is in sight before the
 * first ESC at or after the floor (looking no further than the window's
 * end): if there is a BEL before that ESC, an osc may be open; if that ESC
 * is followed by '\' (ST), an osc or string may be.  Otherwise neither is,
 * nor may the floor byte open one from the unknown esc state.
 * A scan over plain text thus settles within a byte or two, and over UTF-8
 * text at the next character.
 *
 * Each appended run carries a tag (0 = stdout, 1 = stderr; any non-zero tag
 * is taken as 1); consecutive appends of the same tag are merged into one
 * run and runs wholly before the start are forgotten.  The number of runs
 * kept is bounded by RING_MAX_RUNS (the table grows from 16 entries, and a
 * failed growth counts as full): when a new run does not fit, the oldest run
 * is dropped whole and the start moves to the first byte of the
 * second-oldest, so tags are never wrong, only history is shortened.  That
 * start is a tag boundary and is not moved to a safe offset.
 *
 * The ring knows nothing of sockets; it never fails after ring_create().
 */
#ifndef RING_H
#define RING_H

#include <stddef.h>
#include <stdint.h>

#define RING_MIN_SIZE	4096
#define RING_MAX_RUNS	65536	/* upper bound of the tag run table */

struct ring;

/*
 * A ring of capacity size bytes (a smaller size is raised to RING_MIN_SIZE);
 * NULL on ENOMEM.
 */
struct ring	*ring_create(size_t size);
void		 ring_free(struct ring *);

/* Append len bytes with tag (0 or 1); never blocks, drops the oldest. */
void		 ring_append(struct ring *, int tag, const void *buf, size_t len);

uint64_t	 ring_start(const struct ring *);	/* oldest byte held */
uint64_t	 ring_end(const struct ring *);		/* one past newest */
size_t		 ring_capacity(const struct ring *);

/*
 * Contiguous readable bytes at offset off, which must lie in
 * [ring_start(), ring_end()).  Sets *ptr to them and *tag to their tag and
 * returns how many there are, at most max, never crossing the wrap point or
 * a change of tag.  Returns 0, with *ptr NULL, when off is outside the held
 * range.
 */
size_t		 ring_peek(const struct ring *, uint64_t off, size_t max,
		     const void **ptr, int *tag);

/*
 * Copy up to len bytes from offset off (any tags, across the wrap point);
 * returns bytes copied, 0 when off is outside the held range.
 */
size_t		 ring_copy(const struct ring *, uint64_t off, void *dst,
		     size_t len);

/*
 * The safe boundary search used on overflow, exposed for tests: the first
 * offset at or after off, within [off, off + window), at which a replay may
 * begin, or off itself when none is found in the window (see above).
 * Offsets no longer held are not candidates.
 */
uint64_t	 ring_safe_start(const struct ring *, uint64_t off,
		     size_t window);

#endif
