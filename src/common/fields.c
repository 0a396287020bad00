/*
 * fields.c: checking a map against its table of defined fields (see
 * fields.h).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fields.h"
#include "utf8.h"

#define FIELDS_NAME_MAX	64	/* longer names are never close, nor echoed */

/* What a field of each type must be, as an error message says it. */
static const char *const fields_type_name[] = {
	[FIELD_STR] = "a string",
	[FIELD_INT] = "an integer",
	[FIELD_NUM] = "a number",
	[FIELD_BOOL] = "true or false",
	[FIELD_ARRAY] = "an array",
	[FIELD_MAP] = "an object",
	[FIELD_DATA] = "bin or a string",
	[FIELD_SIGNAL] = "a signal name or number",
	[FIELD_REFUSED] = "absent",
};

static const char *
fields_object_name(const msgpack_object *v)
{
	switch (v->type) {
	case MSGPACK_OBJECT_BOOLEAN:
		return ("a boolean");
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return ("an integer");
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return ("a number with a fraction");
	case MSGPACK_OBJECT_STR:
		return ("a string");
	case MSGPACK_OBJECT_BIN:
		return ("bin");
	case MSGPACK_OBJECT_ARRAY:
		return ("an array");
	case MSGPACK_OBJECT_MAP:
		return ("an object");
	default:
		return ("another type");
	}
}

static int
fields_integral(double d)
{
	/*
	 * [-2^63, 2^63): the doubles an int64_t can hold, so the cast
	 * below is defined. Also false for NaN and the infinities.
	 */
	return (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
	    d == (double)(int64_t)d);
}

static int
fields_type_ok(enum fields_type t, const msgpack_object *v)
{
	int	integer, number;

	if (v->type == MSGPACK_OBJECT_NIL)
		return (1);
	integer = v->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
	    v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
	number = v->type == MSGPACK_OBJECT_FLOAT32 ||
	    v->type == MSGPACK_OBJECT_FLOAT64;
	switch (t) {
	case FIELD_STR:
		return (v->type == MSGPACK_OBJECT_STR);
	case FIELD_INT:
		return (integer || (number && fields_integral(v->via.f64)));
	case FIELD_NUM:
		return (integer || number);
	case FIELD_BOOL:
		return (v->type == MSGPACK_OBJECT_BOOLEAN);
	case FIELD_ARRAY:
		return (v->type == MSGPACK_OBJECT_ARRAY);
	case FIELD_MAP:
		return (v->type == MSGPACK_OBJECT_MAP);
	case FIELD_DATA:
		return (v->type == MSGPACK_OBJECT_BIN ||
		    v->type == MSGPACK_OBJECT_STR);
	case FIELD_SIGNAL:
		return (v->type == MSGPACK_OBJECT_STR || integer ||
		    (number && fields_integral(v->via.f64)));
	default:
		return (0);
	}
}

/* Lower case, without '_' and '-': the form two names are compared in. */
static size_t
fields_fold(const char *s, size_t len, char *out)
{
	size_t	i, n = 0;

	for (i = 0; i < len; i++) {
		char c = s[i];

		if (c == '_' || c == '-')
			continue;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		out[n++] = c;
	}
	return (n);
}

int
fields_distance(const char *name, size_t len, const char *want)
{
	char	a[FIELDS_NAME_MAX], b[FIELDS_NAME_MAX];
	size_t	na, nb, i, j, prev[FIELDS_NAME_MAX + 1], cur[FIELDS_NAME_MAX + 1];
	size_t	d;

	if (len > FIELDS_NAME_MAX || strlen(want) > FIELDS_NAME_MAX)
		return (-1);
	na = fields_fold(name, len, a);
	nb = fields_fold(want, strlen(want), b);
	if (na == 0)
		return (-1);
	/* Levenshtein, two rows. */
	for (j = 0; j <= nb; j++)
		prev[j] = j;
	for (i = 1; i <= na; i++) {
		cur[0] = i;
		for (j = 1; j <= nb; j++) {
			d = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			cur[j] = d;
		}
		memcpy(prev, cur, sizeof(prev));
	}
	d = prev[nb];
	if (d > 2 || 2 * d > na)
		return (-1);
	return ((int)d);
}

const char *
fields_closest(const char *name, size_t len, const struct field *table,
    size_t n)
{
	const char	*best = NULL;
	size_t		 i;
	int		 d, bestd = 3;

	for (i = 0; i < n; i++) {
		if ((d = fields_distance(name, len, table[i].name)) != -1 &&
		    d < bestd) {
			best = table[i].name;
			bestd = d;
		}
	}
	return (best);
}

int
fields_fail(char *why, size_t whylen, const char *fmt, ...)
{
	char	buf[512];
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		buf[0] = '\0';
	if (whylen > 0)
		utf8_copy(why, whylen, buf, strlen(buf));
	return (-1);
}

/* The name of a key, valid UTF-8 and short enough to quote. */
static void
fields_quote(const msgpack_object *k, char *out, size_t outlen)
{
	size_t	len = k->via.str.size;

	if (len > FIELDS_NAME_MAX)
		len = FIELDS_NAME_MAX;
	utf8_copy(out, outlen, len > 0 ? k->via.str.ptr : "", len);
}

int
fields_check(const msgpack_object *o, const struct field *table, size_t n,
    char *why, size_t whylen)
{
	const msgpack_object	*k, *v;
	const char		*close;
	char			 name[FIELDS_NAME_MAX * 3 + 1];
	uint32_t		 i, seen = 0;
	size_t			 j, len;

	if (o == NULL || o->type != MSGPACK_OBJECT_MAP) {
		return (fields_fail(why, whylen, "the request must be an "
		    "object"));
	}
	for (i = 0; i < o->via.map.size; i++) {
		k = &o->via.map.ptr[i].key;
		v = &o->via.map.ptr[i].val;
		if (k->type != MSGPACK_OBJECT_STR) {
			return (fields_fail(why, whylen, "field names must be "
			    "strings"));
		}
		len = k->via.str.size;
		for (j = 0; j < n && j < FIELDS_MAX; j++) {
			if (strlen(table[j].name) == len && (len == 0 ||
			    memcmp(table[j].name, k->via.str.ptr, len) == 0))
				break;
		}
		fields_quote(k, name, sizeof(name));
		if (j == n || j == FIELDS_MAX) {
			close = fields_closest(k->via.str.ptr, len, table, n);
			if (close != NULL)
				return (fields_fail(why, whylen, "unknown "
				    "field '%s' (did you mean '%s'?)", name,
				    close));
			return (fields_fail(why, whylen, "unknown field '%s'",
			    name));
		}
		if (seen & (UINT32_C(1) << j)) {
			return (fields_fail(why, whylen, "field '%s' is given "
			    "twice", name));
		}
		seen |= UINT32_C(1) << j;
		if (table[j].type == FIELD_REFUSED &&
		    v->type != MSGPACK_OBJECT_NIL) {
			return (fields_fail(why, whylen, "'%s' %s", name,
			    table[j].note));
		}
		if (!fields_type_ok(table[j].type, v)) {
			return (fields_fail(why, whylen, "'%s' must be %s, "
			    "not %s", name, fields_type_name[table[j].type],
			    fields_object_name(v)));
		}
	}
	return (0);
}
