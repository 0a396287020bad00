/*
 * nofile.h: each process's own RLIMIT_NOFILE, and the one lodged started
 * with given back to what it execs.
 *
 * libwebsockets looks descriptors up in a table as large as the soft
 * RLIMIT_NOFILE; with a fixed fd_limit_per_thread instead it scans the
 * table linearly on every event.  So each process sizes its own limit to
 * what it needs, and children get the limit lodged started with back.
 */
#ifndef NOFILE_H
#define NOFILE_H

#include <sys/resource.h>

/* Remember the limit this process started with, before any nofile_set. */
void	nofile_save(void);
/* Give that limit back (a process about to exec).  Only syscalls: a vfork
 * child calls it. */
void	nofile_restore(void);
/* Set the soft limit to want, within the hard limit. */
void	nofile_set(rlim_t want);

#endif
