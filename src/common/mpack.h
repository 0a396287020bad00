/*
 * mpack.h: small helpers over msgpack-c for the maps every message is.
 *
 * Every WebSocket and Unix-socket message of lodge is one msgpack map with a
 * string key "type".  These helpers pack key/value pairs and look fields up
 * with type checks, so callers never touch msgpack_object unions directly.
 */
#ifndef MPACK_H
#define MPACK_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

void	mpack_str(msgpack_packer *, const char *);
void	mpack_kv_str(msgpack_packer *, const char *, const char *);
void	mpack_kv_int(msgpack_packer *, const char *, int64_t);
void	mpack_kv_uint(msgpack_packer *, const char *, uint64_t);
void	mpack_kv_bool(msgpack_packer *, const char *, int);
void	mpack_kv_nil(msgpack_packer *, const char *);
void	mpack_kv_bin(msgpack_packer *, const char *, const void *, size_t);

/* The value of key in map o, or NULL (also when o is not a map). */
const msgpack_object *mpack_get(const msgpack_object *o, const char *key);

/*
 * Typed lookups: 1 found with the right type, 0 absent (or nil),
 * -1 present with a wrong type or out of range.
 */
int	mpack_get_str(const msgpack_object *, const char *, const char **,
	    size_t *);
int	mpack_get_bin(const msgpack_object *, const char *, const char **,
	    size_t *);
int	mpack_get_int(const msgpack_object *, const char *, int64_t min,
	    int64_t max, int64_t *);
int	mpack_get_bool(const msgpack_object *, const char *, int *);
int	mpack_get_num(const msgpack_object *, const char *, double *);

#define MPACK_DEPTH_MAX	32	/* msgpack-c's own unpacking limit */

/*
 * Check that len bytes hold exactly one well-formed msgpack object whose
 * declared lengths and counts fit in the bytes there are, nested at most
 * MPACK_DEPTH_MAX deep, before msgpack-c sees it: msgpack-c allocates for
 * every declared element first, so five bytes could ask for 256 GiB.
 */
int	mpack_validate(const void *buf, size_t len);
/* The same for objects one after another: how many, or -1. */
int64_t	mpack_count(const void *buf, size_t len);

/* Compare a msgpack str object with a C string. */
int	mpack_streq(const msgpack_object *, const char *);

/* Copy a str object into a NUL-terminated buffer; -1 if it has a NUL or
 * does not fit. */
int	mpack_strcpy(const msgpack_object *, char *, size_t);

#endif
