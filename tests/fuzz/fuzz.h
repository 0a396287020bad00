/*
 * fuzz.h: what the fuzz targets share.
 *
 * Every target defines LLVMFuzzerTestOneInput() and is linked twice: with
 * libFuzzer (clang, --enable-fuzzing, "make fuzz") and with replay.c (any
 * compiler, "make check" replays the committed corpus).  A broken promise
 * of the code under test is reported by FUZZ_CHECK, which names the check
 * and aborts, so both builds stop on it with the input that broke it.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#ifdef SPAWNREQ_H
/* spawnreq_check.c: decode o as a request of that kind and check it. */
void	fuzz_spawnreq(const msgpack_object *o, enum spawnreq_kind,
	    size_t buffer_max);
#endif

/*
 * spawnreq_check.c: whether the n bytes at s are well-formed UTF-8, read
 * here without utf8.c (every reason a decoder gives must be).
 */
int	fuzz_utf8_valid(const char *s, size_t n);
/* Every key of the map o is one of the NULL-terminated names. */
#ifdef SPAWNREQ_H
int	fuzz_keys_in(const msgpack_object *o, const char *const *names);
#endif

/* Model code of a target: no coverage feedback, which it would only blur. */
#if defined(__clang__) && __clang_major__ >= 13
#define FUZZ_NOCOV	__attribute__((no_sanitize("coverage"), noinline))
#else
#define FUZZ_NOCOV
#endif

#define FUZZ_CHECK(e) do {						\
	if (!(e)) {							\
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,	\
		    __LINE__, #e);					\
		abort();						\
	}								\
} while (0)

#endif
