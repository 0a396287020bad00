/*
 * token.h: comparing a client's token with the front's.
 */
#ifndef TOKEN_H
#define TOKEN_H

#include <stddef.h>

/*
 * 1 when given (len bytes) is the token (tokenlen bytes).  The time it
 * takes depends on the lengths only, never on where the bytes differ: a
 * wrong token of the right length reads every byte.  Pure code.
 */
int	token_equal(const char *given, size_t len, const char *token,
	    size_t tokenlen);

#endif
