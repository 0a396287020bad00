/*
 * signame.h: signal names as clients write them ("INT", not "SIGINT").
 */
#ifndef SIGNAME_H
#define SIGNAME_H

#include <msgpack.h>

/*
 * The name of signo without "SIG" ("INT", "RTMIN+3"), or NULL for one
 * without a name (glibc's reserved 32 and 33).
 */
const char	*signame_name(int signo);
/*
 * A signal by name ("INT", "SIGINT", "RTMIN+3", "RTMAX-2", any case) or
 * decimal number 1 to 64; -1 if invalid.
 */
int		 signame_parse(const char *, size_t);
/* The same for a msgpack str, integer or integral float; -1 if invalid. */
int		 signame_from_object(const msgpack_object *);

#endif
