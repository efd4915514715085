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
