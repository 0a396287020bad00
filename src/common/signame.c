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

const char *
signame_name(int signo)
{
	size_t	i;

	for (i = 0; i < sizeof(signame_table) / sizeof(signame_table[0]); i++)
		if (signame_table[i].signo == signo)
			return (signame_table[i].name);
	return (NULL);
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
	return (-1);
}
