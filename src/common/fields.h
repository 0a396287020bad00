/*
 * fields.h: the fields a request or a client message may hold.
 *
 * Each request body and each client WebSocket message has one table of the
 * fields the protocol defines, with the type each must have.  A map is
 * checked against its table before any field is read: a key that is not in
 * the table, a key given twice, a key that is not a string or a value of
 * the wrong type is refused with a message that names the field (and, for
 * an unknown one, the defined field it was probably meant to be).  nil
 * passes for every field: it means absent.  Ranges and finer rules stay
 * with the decoders.
 */
#ifndef FIELDS_H
#define FIELDS_H

#include <stddef.h>

#include <msgpack.h>

#define FIELDS_MAX	32	/* entries of one table */

enum fields_type {
	FIELD_STR,
	FIELD_INT,		/* an integer, or a float with no fraction */
	FIELD_NUM,		/* an integer or a float */
	FIELD_BOOL,
	FIELD_ARRAY,
	FIELD_MAP,
	FIELD_DATA,		/* bin, or str from lax clients */
	FIELD_SIGNAL,		/* a str name or an integer */
	FIELD_REFUSED,		/* defined elsewhere, refused here: note says why */
};

struct field {
	const char		*name;
	enum fields_type	 type;
	const char		*note;	/* FIELD_REFUSED: why, else NULL */
};

/* Format the reason into why, cut at a character boundary if need be; -1. */
int		 fields_fail(char *why, size_t whylen, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));

/*
 * Check every key of the map o against the n fields of table.  0 if all
 * are defined and well typed; -1 with the reason in why, always valid UTF-8.
 */
int		 fields_check(const msgpack_object *o, const struct field *,
		    size_t n, char *why, size_t whylen);

/*
 * Whether name (len bytes) is close to the defined field want: equal once
 * case is folded and '_' and '-' are removed, or, so folded, at most two
 * edits away and at most half as many edits as it has characters.  The
 * number of edits (0 for equal), or -1 when not close.
 */
int		 fields_distance(const char *name, size_t len,
		    const char *want);

/* The defined field closest to name, or NULL when none is close. */
const char	*fields_closest(const char *name, size_t len,
		    const struct field *, size_t n);

#endif
