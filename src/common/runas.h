/*
 * runas.h: whom a client may run a process as.  One policy for sessions,
 * POST /v1/exec and exec streams alike.
 */
#ifndef RUNAS_H
#define RUNAS_H

#include <sys/types.h>

struct runas_policy {
	uid_t	 lodged;	/* lodged's own effective uid */
	int	 restricted;	/* a non-root peer on the Unix socket */
	uid_t	 peer;		/* its uid, when restricted */
};

enum runas_verdict {
	RUNAS_OK,
	RUNAS_NEEDS_ROOT,	/* another user, lodged not root */
	RUNAS_NOT_SELF,		/* a restricted peer, another user */
};

/* The uid a request that names no user runs as.  Pure code. */
uid_t		 runas_default(const struct runas_policy *);
/* May a process run as uid?  Pure code. */
enum runas_verdict runas_check(const struct runas_policy *, uid_t);
/* The refusal's message (its code is "forbidden"), or NULL. */
const char	*runas_why(enum runas_verdict);

#endif
