/*
 * base64.c: strict base64 (see base64.h).
 */
#include <stddef.h>

#include "base64.h"

int
base64_valid(const char *p, size_t len)
{
	size_t	i, pad = 0;
	char	ch;

	for (i = 0; i < len; i++) {
		ch = p[i];
		if (ch == '=') {
			pad++;
			continue;
		}
		if (pad > 0 || !((ch >= 'A' && ch <= 'Z') ||
		    (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '+' || ch == '/' || ch == '-' || ch == '_'))
			return (0);
	}
	if (pad > 2 || (pad > 0 && len % 4 != 0) || (len - pad) % 4 == 1)
		return (0);
	return (1);
}
