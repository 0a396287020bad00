/*
 * nofile.c: RLIMIT_NOFILE per process (see nofile.h).
 */
#include <sys/resource.h>

#include "nofile.h"

static struct rlimit	nofile_saved;
static int		nofile_is_saved;

void
nofile_save(void)
{
	if (getrlimit(RLIMIT_NOFILE, &nofile_saved) == 0)
		nofile_is_saved = 1;
}

void
nofile_restore(void)
{
	if (nofile_is_saved)
		(void)setrlimit(RLIMIT_NOFILE, &nofile_saved);
}

void
nofile_set(rlim_t want)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
		want = rl.rlim_max;
	rl.rlim_cur = want;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
}
