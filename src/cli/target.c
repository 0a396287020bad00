/*
 * target.c: find a session by reference, through the front or without it.
 *
 * The front answers GET /v1/sessions/{ref}.  When the front's Unix socket
 * does not answer at all, each session's worker still serves attach and log
 * on RUNDIR/sessions/ID.sock for its own id or name: the socket named after
 * the reference is tried first, then every other one, asking each for an
 * empty piece of its log (a worker answers 404 for a reference that is not
 * its own).
 */
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Past any real end: asks for no bytes at all. */
#define TARGET_PROBE_SINCE	"4611686018427387904"

char *
target_path(const char *ref, const char *suffix)
{
	char	*esc, *path;

	if ((esc = rest_escape(ref)) == NULL)
		return (NULL);
	if (asprintf(&path, "/v1/sessions/%s%s", esc, suffix) == -1)
		path = NULL;
	free(esc);
	if (path == NULL)
		report_error("asprintf");
	return (path);
}

/* Does the worker socket at sock serve ref? */
static int
target_probe(const struct endpoint *ep, const char *sock, const char *ref)
{
	struct endpoint		 wep = *ep;
	struct rest_reply	 r;
	char			*path;
	int			 ok = 0;

	endpoint_unix(&wep, sock);
	if ((path = target_path(ref, "/log?since=" TARGET_PROBE_SINCE)) ==
	    NULL)
		return (0);
	report_quiet(1);
	if (rest_call(&wep, "GET", path, NULL, -1, &r) == REST_OK) {
		ok = r.status == 200;
		rest_reply_free(&r);
	}
	report_quiet(0);
	free(path);
	return (ok);
}

/* The session socket that serves ref, into path; -1 if none does. */
static int
target_scan(const struct endpoint *ep, const char *ref, char *path,
    size_t len)
{
	char		 dir[600];
	DIR		*d;
	struct dirent	*de;
	size_t		 n;
	int		 found = -1;

	snprintf(dir, sizeof(dir), "%s/sessions", ep->rundir);
	if (strchr(ref, '/') == NULL && (size_t)snprintf(path, len,
	    "%s/%s.sock", dir, ref) < len && target_probe(ep, path, ref))
		return (0);
	if ((d = opendir(dir)) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".sock") != 0)
			continue;
		if ((size_t)snprintf(path, len, "%s/%s", dir, de->d_name) >=
		    len)
			continue;
		if (target_probe(ep, path, ref)) {
			found = 0;
			break;
		}
	}
	closedir(d);
	return (found);
}

/*
 * Find ref: 0 with t filled, or -1 (reported).  t->session is the session
 * object when the front answered; t->direct is set when only the
 * session's own socket did.
 */
int
target_find(const struct endpoint *ep, const char *ref, struct target *t)
{
	struct rest_reply	 r;
	char			*path, sock[600];
	int			 rc, saved;

	memset(t, 0, sizeof(*t));
	t->ep = *ep;
	if ((path = target_path(ref, "")) == NULL)
		return (-1);
	rc = rest_call(ep, "GET", path, NULL, -1, &r);
	free(path);
	if (rc == REST_FAIL)
		return (-1);
	if (rc == REST_OK) {
		if (r.status != 200) {
			rest_report(&r);
			rest_reply_free(&r);
			return (-1);
		}
		t->session = rest_json(&r);
		rest_reply_free(&r);
		return (t->session != NULL ? 0 : -1);
	}
	saved = errno;
	if (!ep->fallback || target_scan(ep, ref, sock, sizeof(sock)) == -1) {
		errno = saved;
		if (ep->fallback)
			report_error("cannot connect to lodged at %s, and no "
			    "socket in %s/sessions serves '%s'",
			    endpoint_name(ep), ep->rundir, ref);
		else
			rest_report_noconnect(ep);
		return (-1);
	}
	endpoint_unix(&t->ep, sock);
	t->direct = 1;
	return (0);
}

void
target_free(struct target *t)
{
	json_decref(t->session);
	t->session = NULL;
}
