/*
 * replay.c: a main() for the fuzz targets without libFuzzer.
 *
 * Runs LLVMFuzzerTestOneInput() once on every file named on the command
 * line and on every file in every directory named there (in name order,
 * dot files skipped), and prints how many it ran.  With no arguments it
 * replays the target's committed corpus,
 * $srcdir/tests/fuzz/corpus/FUZZ_TARGET, which is how "make check" runs it
 * (the test harness exports srcdir).  Each input is copied into a buffer of
 * exactly its size, so a sanitizer build catches reads past its end.
 * Exits 0 when every input ran, 1 when a file could not be read or there
 * was nothing to run; a failed check aborts.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#ifndef FUZZ_TARGET
#error "compile with -DFUZZ_TARGET='\"name\"'"
#endif

static const char	*replay_name = "replay";

/* Run the target on one file; 0, or -1 if it could not be read. */
static int
replay_file(const char *path)
{
	FILE		*f;
	uint8_t		*buf, *nb;
	size_t		 len = 0, cap = 4096, n;

	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "%s: %s: %s\n", replay_name, path,
		    strerror(errno));
		return (-1);
	}
	if ((buf = malloc(cap)) == NULL)
		goto fail;
	while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			cap *= 2;
			if ((nb = realloc(buf, cap)) == NULL)
				goto fail;
			buf = nb;
		}
	}
	if (ferror(f))
		goto fail;
	fclose(f);

	/* Exactly len bytes, so reading one more is an error. */
	if ((nb = malloc(len > 0 ? len : 1)) == NULL) {
		free(buf);
		fprintf(stderr, "%s: %s: out of memory\n", replay_name, path);
		return (-1);
	}
	memcpy(nb, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(nb, len);
	free(nb);
	return (0);

fail:
	fprintf(stderr, "%s: %s: %s\n", replay_name, path, strerror(errno));
	free(buf);
	fclose(f);
	return (-1);
}

static int
replay_skip(const struct dirent *d)
{
	return (d->d_name[0] != '.');
}

/* Run every file of a directory, or the file itself; -1 on an error. */
static int
replay_path(const char *path, size_t *count)
{
	struct dirent	**names;
	struct stat	  st;
	char		 *p;
	int		  n, i, rc = 0;

	if (stat(path, &st) == -1) {
		fprintf(stderr, "%s: %s: %s\n", replay_name, path,
		    strerror(errno));
		return (-1);
	}
	if (!S_ISDIR(st.st_mode)) {
		if (replay_file(path) == -1)
			return (-1);
		(*count)++;
		return (0);
	}
	if ((n = scandir(path, &names, replay_skip, alphasort)) == -1) {
		fprintf(stderr, "%s: %s: %s\n", replay_name, path,
		    strerror(errno));
		return (-1);
	}
	for (i = 0; i < n; i++) {
		if (asprintf(&p, "%s/%s", path, names[i]->d_name) == -1) {
			rc = -1;
			break;
		}
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
			if (replay_file(p) == -1)
				rc = -1;
			else
				(*count)++;
		}
		free(p);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return (rc);
}

int
main(int argc, char **argv)
{
	const char	*srcdir;
	char		*dflt = NULL;
	size_t		 count = 0;
	int		 i, rc = 0;

	if ((replay_name = strrchr(argv[0], '/')) != NULL)
		replay_name++;
	else
		replay_name = argv[0];

	if (argc < 2) {
		if ((srcdir = getenv("srcdir")) == NULL || *srcdir == '\0')
			srcdir = ".";
		if (asprintf(&dflt, "%s/tests/fuzz/corpus/%s", srcdir,
		    FUZZ_TARGET) == -1)
			return (1);
		if (replay_path(dflt, &count) == -1)
			rc = 1;
		printf("%s: ran %zu inputs from %s\n", replay_name, count,
		    dflt);
		free(dflt);
	} else {
		for (i = 1; i < argc; i++) {
			if (replay_path(argv[i], &count) == -1)
				rc = 1;
		}
		printf("%s: ran %zu inputs\n", replay_name, count);
	}
	if (count == 0) {
		fprintf(stderr, "%s: no inputs\n", replay_name);
		rc = 1;
	}
	return (rc);
}
