/*
 * signame.c: signal name table (see signame.h).
 */
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "signame.h"

static const struct {
	const char	*name;
	int		 signo;
} signame_table[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT },
	{ "ILL", SIGILL }, { "TRAP", SIGTRAP }, { "ABRT", SIGABRT },
	{ "BUS", SIGBUS }, { "FPE", SIGFPE }, { "KILL", SIGKILL },
	{ "USR1", SIGUSR1 }, { "SEGV", SIGSEGV }, { "USR2", SIGUSR2 },
	{ "PIPE", SIGPIPE }, { "ALRM", SIGALRM }, { "TERM", SIGTERM },
	{ "STKFLT", SIGSTKFLT }, { "CHLD", SIGCHLD }, { "CONT", SIGCONT },
	{ "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "TTIN", SIGTTIN },
	{ "TTOU", SIGTTOU }, { "URG", SIGURG }, { "XCPU", SIGXCPU },
	{ "XFSZ", SIGXFSZ }, { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF },
	{ "WINCH", SIGWINCH }, { "IO", SIGIO }, { "PWR", SIGPWR },
	{ "SYS", SIGSYS },
};

/*
 * Real-time signals are named from the nearer end of their range, as
 * bash's kill -l does: RTMIN, RTMIN+1 .. RTMIN+15, RTMAX-14 .. RTMAX-1,
 * RTMAX.  Their numbers are glibc's at run time (34 to 64 on Linux).
 */
static const char *signame_rtmin[] = {
	"RTMIN", "RTMIN+1", "RTMIN+2", "RTMIN+3", "RTMIN+4", "RTMIN+5",
	"RTMIN+6", "RTMIN+7", "RTMIN+8", "RTMIN+9", "RTMIN+10", "RTMIN+11",
	"RTMIN+12", "RTMIN+13", "RTMIN+14", "RTMIN+15", "RTMIN+16",
};
static const char *signame_rtmax[] = {
	"RTMAX", "RTMAX-1", "RTMAX-2", "RTMAX-3", "RTMAX-4", "RTMAX-5",
	"RTMAX-6", "RTMAX-7", "RTMAX-8", "RTMAX-9", "RTMAX-10", "RTMAX-11",
	"RTMAX-12", "RTMAX-13", "RTMAX-14", "RTMAX-15", "RTMAX-16",
};

#define SIGNAME_NRT	(sizeof(signame_rtmin) / sizeof(signame_rtmin[0]))

const char *
signame_name(int signo)
{
	size_t	i, lo, hi;

	for (i = 0; i < sizeof(signame_table) / sizeof(signame_table[0]); i++)
		if (signame_table[i].signo == signo)
			return (signame_table[i].name);
	if (signo < SIGRTMIN || signo > SIGRTMAX)
		return (NULL);
	lo = (size_t)(signo - SIGRTMIN);
	hi = (size_t)(SIGRTMAX - signo);
	if (lo <= hi)
		return (lo < SIGNAME_NRT ? signame_rtmin[lo] : NULL);
	return (hi < SIGNAME_NRT ? signame_rtmax[hi] : NULL);
}

/* RTMIN, RTMIN+N, RTMAX, RTMAX-N (s without "SIG"); -1 if not one. */
static int
signame_parse_rt(const char *s, size_t len)
{
	size_t	i;
	int	n = 0, base, sign, signo;

	if (len < 5)
		return (-1);
	if (strncasecmp(s, "RTMIN", 5) == 0) {
		base = SIGRTMIN;
		sign = 1;
	} else if (strncasecmp(s, "RTMAX", 5) == 0) {
		base = SIGRTMAX;
		sign = -1;
	} else
		return (-1);
	if (len == 5)
		return (base);
	if (s[5] != (sign == 1 ? '+' : '-') || len == 6 || len > 8)
		return (-1);
	for (i = 6; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		n = n * 10 + (s[i] - '0');
	}
	signo = base + sign * n;
	if (signo < SIGRTMIN || signo > SIGRTMAX)
		return (-1);
	return (signo);
}

int
signame_parse(const char *s, size_t len)
{
	size_t	i, n;
	int	signo = 0;

	if (len == 0 || len > 16 || memchr(s, '\0', len) != NULL)
		return (-1);
	if (s[0] >= '0' && s[0] <= '9') {
		for (i = 0; i < len; i++) {
			if (s[i] < '0' || s[i] > '9')
				return (-1);
			signo = signo * 10 + (s[i] - '0');
			if (signo > 64)
				return (-1);
		}
		return (signo >= 1 && signo <= 64 ? signo : -1);
	}
	if (len > 3 && strncasecmp(s, "SIG", 3) == 0) {
		s += 3;
		len -= 3;
	}
	if ((signo = signame_parse_rt(s, len)) != -1)
		return (signo);
	for (i = 0; i < sizeof(signame_table) / sizeof(signame_table[0]); i++) {
		n = strlen(signame_table[i].name);
		if (n == len && strncasecmp(s, signame_table[i].name, n) == 0)
			return (signame_table[i].signo);
	}
	return (-1);
}

int
signame_from_object(const msgpack_object *o)
{
	if (o == NULL)
		return (-1);
	if (o->type == MSGPACK_OBJECT_STR)
		return (signame_parse(o->via.str.ptr, o->via.str.size));
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		return (o->via.u64 >= 1 && o->via.u64 <= 64 ?
		    (int)o->via.u64 : -1);
	/* 9.0 is 9, as wherever an integer is expected; 9.5 is no signal. */
	if ((o->type == MSGPACK_OBJECT_FLOAT64 ||
	    o->type == MSGPACK_OBJECT_FLOAT32) && o->via.f64 >= 1 &&
	    o->via.f64 <= 64 && o->via.f64 == (double)(int)o->via.f64)
		return ((int)o->via.f64);
	return (-1);
}
