/*
 * escape.c: backslash escapes in text to send, and detach key names.
 *
 * Pure code.  Escapes: \n \r \t \e (ESC) \\ and \xHH (one byte, two hex
 * digits); any other backslash is an error, so a typo never sends
 * something unexpected.  Keys: "^X" for a control character (^A to ^Z,
 * ^@ ^[ ^\ ^] ^^ ^_ and ^? for DEL), one plain character, or "none".
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

/*
 * Decode in into a new buffer (*out, *outlen bytes, NUL-terminated for
 * convenience).  -1 with a reason in why on a bad escape or no memory.
 */
int
escape_decode(const char *in, char **out, size_t *outlen, char *why,
    size_t whylen)
{
	/* The one-letter escapes, and the bytes they stand for. */
	static const char	 names[] = "nrte\\", bytes[] = "\n\r\t\033\\";
	char			*buf, *p, hex[3] = "";
	const char		*s, *known;

	if ((buf = malloc(strlen(in) + 1)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return (-1);
	}
	for (s = in, p = buf; *s != '\0'; s++) {
		if (*s != '\\') {
			*p++ = *s;
			continue;
		}
		if (*++s != '\0' && (known = strchr(names, *s)) != NULL) {
			*p++ = bytes[known - names];
			continue;
		}
		switch (*s) {
		case 'x':
			if (!isxdigit((unsigned char)s[1]) ||
			    !isxdigit((unsigned char)s[2])) {
				snprintf(why, whylen, "\\x needs two hex "
				    "digits");
				goto bad;
			}
			memcpy(hex, s + 1, 2);
			*p++ = (char)strtol(hex, NULL, 16);
			s += 2;
			break;
		case '\0':
			snprintf(why, whylen, "a lone backslash at the end "
			    "(write \\\\ for a backslash)");
			goto bad;
		default:
			snprintf(why, whylen, "unknown escape \\%c (known: "
			    "\\n \\r \\t \\e \\\\ \\xHH)", *s);
			goto bad;
		}
	}
	*p = '\0';
	*out = buf;
	*outlen = (size_t)(p - buf);
	return (0);
bad:
	free(buf);
	return (-1);
}

/* A key's byte, -1 for "none", -2 if the name is not understood. */
int
escape_key(const char *spec)
{
	unsigned char	ch;

	if (strcasecmp(spec, "none") == 0)
		return (-1);
	if (spec[0] == '^' && spec[1] != '\0' && spec[2] == '\0') {
		ch = (unsigned char)toupper((unsigned char)spec[1]);
		if (ch == '?')
			return (0x7f);
		if (ch >= '@' && ch <= '_')
			return (ch - '@');
		return (-2);
	}
	if (spec[0] != '\0' && spec[1] == '\0')
		return ((unsigned char)spec[0]);
	return (-2);
}
