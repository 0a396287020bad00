/*
 * peer.c: how many connections the front holds for each peer, so that one
 * peer cannot take every slot.
 *
 * A peer is a remote address on TCP (every client of a loopback listener
 * is the same peer) or a uid on a Unix socket.  An entry lives while its
 * peer holds a connection.  A restricted peer's own limits go with what
 * it asks the template to run.
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/tree.h>

#include <netinet/in.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "mpack.h"

struct peer {
	RB_ENTRY(peer)		 entry;
	struct peer_key		 key;
	int			 n;
};

static int
peer_cmp(struct peer *a, struct peer *b)
{
	return (memcmp(&a->key, &b->key, sizeof(a->key)));
}

RB_HEAD(peer_tree, peer)	peers = RB_INITIALIZER(&peers);
RB_PROTOTYPE(peer_tree, peer, entry, peer_cmp)
RB_GENERATE(peer_tree, peer, entry, peer_cmp)

/* Who is at the other end of fd; -1 if that cannot be known. */
int
peer_key_of(int fd, int is_unix, struct peer_key *k)
{
	struct sockaddr_storage	 ss;
	struct ucred		 cred;
	socklen_t		 len;

	memset(k, 0, sizeof(*k));
	k->uid = UINT32_MAX;
	if (is_unix) {
		k->is_unix = 1;
		len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1)
			return (-1);
		k->uid = cred.uid;
		return (0);
	}
	len = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == -1)
		return (-1);
	if (ss.ss_family == AF_INET)
		memcpy(k->addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	else if (ss.ss_family == AF_INET6)
		memcpy(k->addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	return (0);
}

/* How many connections the peer holds now. */
int
peer_count(const struct peer_key *k)
{
	struct peer	 find, *p;

	find.key = *k;
	p = RB_FIND(peer_tree, &peers, &find);
	return (p == NULL ? 0 : p->n);
}

/* One more connection of the peer; NULL when out of memory. */
struct peer *
peer_hold(const struct peer_key *k)
{
	struct peer	 find, *p;

	find.key = *k;
	if ((p = RB_FIND(peer_tree, &peers, &find)) == NULL) {
		if ((p = calloc(1, sizeof(*p))) == NULL)
			return (NULL);
		p->key = *k;
		RB_INSERT(peer_tree, &peers, p);
	}
	p->n++;
	return (p);
}

void
peer_release(struct peer *p)
{
	if (p == NULL || --p->n > 0)
		return;
	RB_REMOVE(peer_tree, &peers, p);
	free(p);
}

/*
 * The RLIMIT_NPROC of process pid, if it still runs as uid: from
 * /proc/PID/limits, which root may read without CAP_SYS_RESOURCE (that
 * prlimit() would need).  0 or -1.
 */
static int
peer_nproc(pid_t pid, uid_t uid, struct rlimit *rl)
{
	FILE		*f;
	char		 path[64], line[256], soft[32], hard[32];
	unsigned int	 r, e;
	int		 found = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (pid <= 0 || (f = fopen(path, "re")) == NULL)
		return (-1);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Uid: %u %u", &r, &e) == 2)
			found = (e == uid);
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	if (!found || (f = fopen(path, "re")) == NULL)
		return (-1);
	found = 0;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Max processes ", 14) != 0 ||
		    sscanf(line + 14, "%31s %31s", soft, hard) != 2)
			continue;
		rl->rlim_cur = strcmp(soft, "unlimited") == 0 ? RLIM_INFINITY :
		    strtoull(soft, NULL, 10);
		rl->rlim_max = strcmp(hard, "unlimited") == 0 ? RLIM_INFINITY :
		    strtoull(hard, NULL, 10);
		found = 1;
	}
	fclose(f);
	return (found ? 0 : -1);
}

/*
 * What the template needs to hold a restricted peer (CONN_RESTRICTED) to
 * its own limits, as three map entries: its uid ("peerUid", -1 for
 * others), the RLIMIT_NPROC of the process that connected, read now
 * ("peerNproc", nil for others), and the per-user cap ("peerMax").  -1
 * when that process is gone (or is someone else's now): its limit is
 * unknown, so the request is refused.
 */
int
peer_pack_limits(const struct conn *c, msgpack_packer *pk)
{
	struct rlimit	rl;
	int		rc = 0, restricted = CONN_RESTRICTED(c);

	mpack_kv_int(pk, "peerUid", restricted ? (int64_t)c->peer_uid : -1);
	mpack_kv_int(pk, "peerMax", front->conf.max_execs_per_user);
	mpack_str(pk, "peerNproc");
	if (!restricted) {
		msgpack_pack_nil(pk);
		return (0);
	}
	if (peer_nproc(c->peer_pid, c->peer_uid, &rl) == -1) {
		rl.rlim_cur = rl.rlim_max = 0;
		rc = -1;
	}
	msgpack_pack_array(pk, 2);
	if (rl.rlim_cur == RLIM_INFINITY)
		msgpack_pack_int64(pk, -1);
	else
		msgpack_pack_uint64(pk, rl.rlim_cur);
	if (rl.rlim_max == RLIM_INFINITY)
		msgpack_pack_int64(pk, -1);
	else
		msgpack_pack_uint64(pk, rl.rlim_max);
	return (rc);
}
