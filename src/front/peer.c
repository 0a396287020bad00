/*
 * peer.c: how many connections the front holds for each peer, so that one
 * peer cannot take every slot.
 *
 * A peer is a remote address on TCP (every client of a loopback listener
 * is the same peer) or a uid on a Unix socket.  An entry lives while its
 * peer holds a connection.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/tree.h>

#include <netinet/in.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"

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
