/*
 * main.c: lodged-worker's entry point, the worker template.
 *
 * The front execs this program once (lodged-worker --template, control
 * channel on fd 3); every session worker and exec-stream worker is then
 * forked from it.  It is a program of its own so that workers map only
 * what they use: libwebsockets, msgpack-c and libbsd, not the front's
 * libuv, jansson and libsystemd (fewer pages to share, a cheaper fork).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"

extern char	**environ;

int
main(int argc, char **argv)
{
	int	i, use_cgroup = 1;

	if (argc < 2 || strcmp(argv[1], "--template") != 0) {
		fprintf(stderr, "lodged-worker is started by lodged, not by "
		    "hand\n");
		return (2);
	}
	setproctitle_init(argc, argv, environ);
	log_init("lodged-template", argc >= 3 && strcmp(argv[2], "-f") == 0,
	    argc >= 4 && strcmp(argv[3], "-v") == 0 ? 1 : 0);
	for (i = 2; i < argc; i++)
		if (strcmp(argv[i], "--no-cgroup") == 0)
			use_cgroup = 0;
	template_main(3, use_cgroup);
	return (0);
}
