/*
 * pwcache.c: passwd lookups, cached.
 *
 * Every exec call and session names a user, and glibc answers each lookup
 * by opening and reading /etc/passwd: a tenth of the front's time per exec.
 * An entry is kept while /etc/passwd is unchanged (inode, size, change
 * time) and for at most PWCACHE_TTL seconds, which bounds how stale an
 * answer from another NSS source can be.  Failed lookups are not kept.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <pwd.h>
#include <string.h>
#include <time.h>

#include "pwcache.h"

#define PWCACHE_SIZE	8
#define PWCACHE_TTL	5
#define PWCACHE_STR	256

struct pwcache_entry {
	int	 used;
	int	 byuid;		/* answered a uid lookup: two names may share one */
	time_t	 when;
	uid_t	 uid;
	gid_t	 gid;
	char	 name[PWCACHE_STR];
	char	 dir[PWCACHE_STR];
	char	 shell[PWCACHE_STR];
};

static struct {
	struct pwcache_entry	 e[PWCACHE_SIZE];
	int			 next;
	ino_t			 ino;
	off_t			 size;
	struct timespec		 ctime;
	struct timespec		 mtime;
} pwcache;

static time_t
pwcache_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec);
}

/* Forget everything when /etc/passwd is not the file the cache read. */
static void
pwcache_check(void)
{
	struct stat	st;

	if (stat("/etc/passwd", &st) == -1)
		memset(&st, 0, sizeof(st));
	if (st.st_ino == pwcache.ino && st.st_size == pwcache.size &&
	    st.st_ctim.tv_sec == pwcache.ctime.tv_sec &&
	    st.st_ctim.tv_nsec == pwcache.ctime.tv_nsec &&
	    st.st_mtim.tv_sec == pwcache.mtime.tv_sec &&
	    st.st_mtim.tv_nsec == pwcache.mtime.tv_nsec)
		return;
	memset(pwcache.e, 0, sizeof(pwcache.e));
	pwcache.ino = st.st_ino;
	pwcache.size = st.st_size;
	pwcache.ctime = st.st_ctim;
	pwcache.mtime = st.st_mtim;
}

/* Fill *out from an entry, its strings in buf. */
static int
pwcache_copy(const struct pwcache_entry *e, struct passwd *out, char *buf,
    size_t buflen)
{
	size_t	n1 = strlen(e->name) + 1, n2 = strlen(e->dir) + 1;
	size_t	n3 = strlen(e->shell) + 1;

	if (n1 + n2 + n3 + 2 > buflen)
		return (-1);
	memset(out, 0, sizeof(*out));
	out->pw_name = memcpy(buf, e->name, n1);
	out->pw_dir = memcpy(buf + n1, e->dir, n2);
	out->pw_shell = memcpy(buf + n1 + n2, e->shell, n3);
	out->pw_passwd = buf + n1 + n2 + n3;
	out->pw_passwd[0] = '\0';
	out->pw_gecos = out->pw_passwd;
	out->pw_uid = e->uid;
	out->pw_gid = e->gid;
	return (0);
}

static void
pwcache_keep(const struct passwd *pw, int byuid)
{
	struct pwcache_entry	*e = &pwcache.e[pwcache.next];

	if (strlen(pw->pw_name) >= PWCACHE_STR ||
	    strlen(pw->pw_dir) >= PWCACHE_STR ||
	    (pw->pw_shell != NULL && strlen(pw->pw_shell) >= PWCACHE_STR))
		return;
	pwcache.next = (pwcache.next + 1) % PWCACHE_SIZE;
	e->used = 1;
	e->byuid = byuid;
	e->when = pwcache_now();
	e->uid = pw->pw_uid;
	e->gid = pw->pw_gid;
	strlcpy(e->name, pw->pw_name, sizeof(e->name));
	strlcpy(e->dir, pw->pw_dir, sizeof(e->dir));
	strlcpy(e->shell, pw->pw_shell != NULL ? pw->pw_shell : "",
	    sizeof(e->shell));
}

/*
 * Look up name, or uid when name is NULL, like getpw*_r: 0 and *out filled
 * (strings in buf), or -1 when there is no such user.
 */
int
pwcache_get(const char *name, uid_t uid, struct passwd *out, char *buf,
    size_t buflen)
{
	struct pwcache_entry	*e;
	struct passwd		*pw = NULL;
	time_t			 now = pwcache_now();
	int			 i, rc;

	pwcache_check();
	for (i = 0; i < PWCACHE_SIZE; i++) {
		e = &pwcache.e[i];
		if (!e->used || now - e->when > PWCACHE_TTL)
			continue;
		if (name != NULL ? strcmp(e->name, name) == 0 :
		    e->byuid && e->uid == uid)
			return (pwcache_copy(e, out, buf, buflen));
	}
	if (name != NULL)
		rc = getpwnam_r(name, out, buf, buflen, &pw);
	else
		rc = getpwuid_r(uid, out, buf, buflen, &pw);
	if (rc != 0 || pw == NULL)
		return (-1);
	pwcache_keep(pw, name == NULL);
	return (0);
}
