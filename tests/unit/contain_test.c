/*
 * contain_test.c: unit tests for the template's sweep of groups
 * (src/worker/contain.c) on a directory of its own: a step looks at a
 * bounded number of groups, and the steps together remove every group
 * whose maker is gone and keep those of live processes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker.h"

#define NDEAD	150	/* groups of processes gone: more than two steps */

static char	base[64];	/* the mkdtemp template below */

/* A pid that no process has now: a child's, reaped. */
static pid_t
dead_pid(void)
{
	pid_t	pid;

	if ((pid = fork()) == 0)
		_exit(0);
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return (pid);
}

static void
group(const char *name)
{
	char	path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", base, name);
	assert_int_equal(mkdir(path, 0755), 0);
}

static int
has(const char *name)
{
	char		path[PATH_MAX];
	struct stat	st;

	snprintf(path, sizeof(path), "%s/%s", base, name);
	return (stat(path, &st) == 0);
}

static int
count_groups(void)
{
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	assert_non_null(d = opendir(base));
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] == 's';
	closedir(d);
	return (n);
}

static int
setup(void **state)
{
	char	path[PATH_MAX];
	int	fd;

	(void)state;
	snprintf(base, sizeof(base), "/tmp/lodge-contain-test.XXXXXX");
	assert_non_null(mkdtemp(base));
	/* What contain_use looks for in a cgroup. */
	snprintf(path, sizeof(path), "%s/cgroup.kill", base);
	assert_true((fd = open(path, O_WRONLY | O_CREAT, 0600)) != -1);
	close(fd);
	contain_use(base);
	return (0);
}

static int
teardown(void **state)
{
	char	cmd[PATH_MAX + 16];

	(void)state;
	contain_sweep_forget();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return (system(cmd) == 0 ? 0 : -1);
}

static void
test_sweep_in_steps(void **state)
{
	char	live[32], self[32];
	int	i, r, steps = 0;

	(void)state;
	for (i = 0; i < NDEAD; i++) {
		char	name[32];

		snprintf(name, sizeof(name), "s%d", (int)dead_pid());
		group(name);
	}
	snprintf(live, sizeof(live), "s%d", (int)getppid());
	snprintf(self, sizeof(self), "s%d", (int)getpid());
	group(live);
	group(self);
	assert_int_equal(count_groups(), NDEAD + 2);

	/* One step looks at a step's worth of groups, not at all of them. */
	assert_int_equal(contain_sweep_step(NULL), 1);
	assert_true(count_groups() < NDEAD + 2);
	assert_true(count_groups() >= NDEAD + 2 - 64);
	steps = 1;
	while ((r = contain_sweep_step(NULL)) == 1)
		steps++;
	assert_int_equal(r, 0);
	assert_true(steps >= (NDEAD + 2) / 64);
	/* The makers that live keep their groups: a parent, this process. */
	assert_int_equal(count_groups(), 2);
	assert_true(has(live));
	assert_true(has(self));
	/* A new sweep starts over, and finds nothing more to remove. */
	assert_int_equal(contain_sweep(NULL), 0);
	assert_int_equal(count_groups(), 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sweep_in_steps, setup,
		    teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
