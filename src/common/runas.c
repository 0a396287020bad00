/*
 * runas.c: whom a client may run a process as.
 *
 * lodged not running as root runs everything as itself.  A non-root peer
 * on the Unix socket (its uid from the socket, not from the request) runs
 * processes as itself only, by default and when it names a user.
 */
#include <stddef.h>

#include "runas.h"

uid_t
runas_default(const struct runas_policy *p)
{
	return (p->restricted ? p->peer : p->lodged);
}

enum runas_verdict
runas_check(const struct runas_policy *p, uid_t uid)
{
	if (p->lodged != 0 && uid != p->lodged)
		return (RUNAS_NEEDS_ROOT);
	if (p->restricted && uid != p->peer)
		return (RUNAS_NOT_SELF);
	return (RUNAS_OK);
}

const char *
runas_why(enum runas_verdict v)
{
	switch (v) {
	case RUNAS_NEEDS_ROOT:
		return ("'user' needs lodged to run as root");
	case RUNAS_NOT_SELF:
		return ("on the Unix socket you may only run processes as "
		    "yourself");
	default:
		return (NULL);
	}
}
