/*
 * Devices, address lookup, poll, and what jroce's librdmacm does not implement: every function of rdma-core's
 * librdmacm is exported (a program built with BIND_NOW needs all it references), the missing ones as stubs
 * that fail with ENOSYS and say so once on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <rdma/rsocket.h>

#include "rc.h"

/* ------------------------------------------------------------------ devices */

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context *v = rc_verbs();
	struct ibv_context **list = calloc(2, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = v;
	if (num_devices != NULL)
		*num_devices = v != NULL ? 1 : 0;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list); /* the contexts stay open, shared by every id */
}

/* ------------------------------------------------------------------ rdma_getaddrinfo */

static struct sockaddr *copy_sockaddr(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *c = malloc(len);
	if (c != NULL)
		memcpy(c, sa, len);
	return c;
}

/* The IP address of `node` (and the port of `service`), as librdmacm resolves it for RoCE: the passive side's
 * as the source address, the active side's as the destination; RC in the TCP port space unless the hints say. */
int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	if (res == NULL)
		return EAI_FAIL;
	struct addrinfo ai_hints, *ai;
	memset(&ai_hints, 0, sizeof(ai_hints));
	ai_hints.ai_socktype = SOCK_STREAM;
	int passive = hints != NULL && (hints->ai_flags & RAI_PASSIVE);
	if (hints != NULL) {
		ai_hints.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			ai_hints.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			ai_hints.ai_flags |= AI_NUMERICHOST;
	}
	if (node == NULL && !passive)
		return EAI_NONAME;
	int ret = getaddrinfo(node, service, &ai_hints, &ai);
	if (ret != 0)
		return ret;
	struct rdma_addrinfo *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		freeaddrinfo(ai);
		return EAI_MEMORY;
	}
	r->ai_flags = hints != NULL ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints != NULL && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints != NULL && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	struct sockaddr *addr = copy_sockaddr(ai->ai_addr, ai->ai_addrlen);
	if (passive) {
		r->ai_src_addr = addr;
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = addr;
		r->ai_dst_len = ai->ai_addrlen;
		if (hints != NULL && hints->ai_src_addr != NULL && hints->ai_src_len > 0) {
			r->ai_src_addr = copy_sockaddr(hints->ai_src_addr, hints->ai_src_len);
			r->ai_src_len = hints->ai_src_len;
		}
	}
	freeaddrinfo(ai);
	if (addr == NULL) {
		rdma_freeaddrinfo(r);
		return EAI_MEMORY;
	}
	*res = r;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res != NULL) {
		struct rdma_addrinfo *next = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

/* ------------------------------------------------------------------ rsockets: poll and select pass through */

/* rsockets are not implemented, so every descriptor is an ordinary one (an event channel's, a completion
 * channel's): rpoll and rselect are poll and select, as rsockets' are for descriptors that are not rsockets. */
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

#define STUB(ret, name, params, fail)                      \
	ret name params                                    \
	{                                                  \
		static int said_;                          \
		errno = jv_unsupported(#name, &said_, ENOSYS); \
		return fail;                               \
	}

#define STUB_VOID(name, params)                            \
	void name params                                   \
	{                                                  \
		static int said_;                          \
		jv_unsupported(#name, &said_, ENOSYS);     \
	}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
STUB(int, rsocket, (int domain, int type, int protocol), -1)
STUB(int, rbind, (int socket, const struct sockaddr *addr, socklen_t addrlen), -1)
STUB(int, rlisten, (int socket, int backlog), -1)
STUB(int, raccept, (int socket, struct sockaddr *addr, socklen_t *addrlen), -1)
STUB(int, rconnect, (int socket, const struct sockaddr *addr, socklen_t addrlen), -1)
STUB(int, rshutdown, (int socket, int how), -1)
STUB(int, rclose, (int socket), -1)
STUB(ssize_t, rrecv, (int socket, void *buf, size_t len, int flags), -1)
STUB(ssize_t, rrecvfrom, (int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr, socklen_t *addrlen), -1)
STUB(ssize_t, rrecvmsg, (int socket, struct msghdr *msg, int flags), -1)
STUB(ssize_t, rsend, (int socket, const void *buf, size_t len, int flags), -1)
STUB(ssize_t, rsendto, (int socket, const void *buf, size_t len, int flags, const struct sockaddr *dest_addr, socklen_t addrlen), -1)
STUB(ssize_t, rsendmsg, (int socket, const struct msghdr *msg, int flags), -1)
STUB(ssize_t, rread, (int socket, void *buf, size_t count), -1)
STUB(ssize_t, rreadv, (int socket, const struct iovec *iov, int iovcnt), -1)
STUB(ssize_t, rwrite, (int socket, const void *buf, size_t count), -1)
STUB(ssize_t, rwritev, (int socket, const struct iovec *iov, int iovcnt), -1)
STUB(int, rgetpeername, (int socket, struct sockaddr *addr, socklen_t *addrlen), -1)
STUB(int, rgetsockname, (int socket, struct sockaddr *addr, socklen_t *addrlen), -1)
STUB(int, rsetsockopt, (int socket, int level, int optname, const void *optval, socklen_t optlen), -1)
STUB(int, rgetsockopt, (int socket, int level, int optname, void *optval, socklen_t *optlen), -1)
STUB(off_t, riomap, (int socket, void *buf, size_t len, int prot, int flags, off_t offset), -1)
STUB(int, riounmap, (int socket, void *buf, size_t len), -1)
STUB(size_t, riowrite, (int socket, const void *buf, size_t count, off_t offset, int flags), 0)

int rfcntl(int socket, int cmd, ...)
{
	(void)socket;
	(void)cmd;
	static int said_;
	errno = jv_unsupported("rfcntl", &said_, ENOSYS);
	return -1;
}

/* ------------------------------------------------------------------ rdma_cm calls not implemented */

STUB(int, rdma_create_srq, (struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr), -1)
STUB(int, rdma_create_srq_ex, (struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr), -1)
STUB_VOID(rdma_destroy_srq, (struct rdma_cm_id *id))
STUB(int, rdma_join_multicast, (struct rdma_cm_id *id, struct sockaddr *addr, void *context), -1)
STUB(int, rdma_join_multicast_ex, (struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context), -1)
STUB(int, rdma_leave_multicast, (struct rdma_cm_id *id, struct sockaddr *addr), -1)
STUB(int, rdma_migrate_id, (struct rdma_cm_id *id, struct rdma_event_channel *channel), -1)
STUB(int, rdma_get_remote_ece, (struct rdma_cm_id *id, struct ibv_ece *ece), -1)
STUB(int, rdma_set_local_ece, (struct rdma_cm_id *id, struct ibv_ece *ece), -1)
STUB(int, rdma_reject_ece, (struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len), -1)
#pragma GCC diagnostic pop
