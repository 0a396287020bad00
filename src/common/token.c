/*
 * token.c: the token compare (see token.h).
 */
#include <stddef.h>

#include "token.h"

int
token_equal(const char *given, size_t len, const char *token,
    size_t tokenlen)
{
	const volatile unsigned char	*a = (const unsigned char *)given;
	const volatile unsigned char	*b = (const unsigned char *)token;
	unsigned char			 diff = 0;
	size_t				 i;

	/* The length is no secret: every token the front makes has 64. */
	if (len != tokenlen)
		return (0);
	for (i = 0; i < len; i++)
		diff |= a[i] ^ b[i];
	return (diff == 0);
}
