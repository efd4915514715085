/*
 * Verbs the library exports because programs built with BIND_NOW reference them, but does not implement:
 * each fails as libibverbs does for a device without the feature (EOPNOTSUPP, or NULL with errno) and
 * says so once on stderr.
 */
#include <errno.h>

#include "jv.h"

/* The extended QP (ibv_wr_* builders) needs create_qp_ex; a QP from ibv_create_qp is not one (NULL, as
 * rdma-core answers for a QP created without IBV_QP_INIT_ATTR_SEND_OPS_FLAGS). */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	(void)qp;
	return NULL;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	(void)pd;
	(void)attr;
	errno = JV_UNSUPPORTED("ibv_create_srq (shared receive queues)", EOPNOTSUPP);
	return NULL;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	(void)srq;
	return JV_UNSUPPORTED("ibv_destroy_srq (shared receive queues)", EOPNOTSUPP);
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return JV_UNSUPPORTED("ibv_attach_mcast (multicast)", EOPNOTSUPP);
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return JV_UNSUPPORTED("ibv_detach_mcast (multicast)", EOPNOTSUPP);
}

/* Fork is always safe for the parent: a memory region is ordinary memory that the endpoint reaches by
 * virtual address, so copy-on-write after fork() changes nothing for it. The child has no endpoint (the
 * VM's threads are not copied): its verbs fail with EIO and one line says why (jv_jvm.c). So there is
 * nothing to prepare and no range to mark: rdma-core answers the same on a kernel with copy-on-fork
 * (libibverbs/memory.c: ibv_fork_init returns 0 when ibv_is_fork_initialized is IBV_FORK_UNNEEDED). */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr, uint8_t eth_mac[6],
				uint16_t *vid)
{
	(void)context;
	(void)attr;
	(void)eth_mac;
	(void)vid;
	return JV_UNSUPPORTED("ibv_resolve_eth_l2_from_gid (the kernel resolves no neighbours for jroce)", EOPNOTSUPP);
}
