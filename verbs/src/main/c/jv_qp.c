/* Queue pairs: create, modify, query, destroy. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "jv.h"
#include "jv_java.h"
#include "jv_objects.h"

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	JV_ENV_OR(NULL);
	if (init->srq != NULL) {
		errno = JV_UNSUPPORTED("a QP on a shared receive queue", EOPNOTSUPP);
		return NULL;
	}
	if (init->send_cq == NULL || init->recv_cq == NULL) {
		errno = EINVAL;
		return NULL;
	}
	/* rdma_rxe's rxe_qp_chk_cap: work requests and SGEs past the device's maximum are EINVAL */
	if (init->cap.max_send_wr > JV_MAX_QP_WR || init->cap.max_recv_wr > JV_MAX_QP_WR
	    || init->cap.max_send_sge > JV_MAX_SGE || init->cap.max_recv_sge > JV_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	struct jv_qp *q = calloc(1, sizeof(*q));
	if (q == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	jint caps[6] = { (jint)init->cap.max_send_wr, (jint)init->cap.max_recv_wr, (jint)init->cap.max_send_sge,
			 (jint)init->cap.max_recv_sge, (jint)init->cap.max_inline_data, init->sq_sig_all };
	jintArray jcaps = (*env)->NewIntArray(env, 6);
	jintArray out = (*env)->NewIntArray(env, 1);
	if (jcaps == NULL || out == NULL) {
		(*env)->ExceptionClear(env);
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	(*env)->SetIntArrayRegion(env, jcaps, 0, 6, caps);
	jint h = (*env)->CallStaticIntMethod(env, jv_java.cls, jv_java.create_qp, (jint)pd->handle,
					     (jint)init->send_cq->handle, (jint)init->recv_cq->handle,
					     (jint)init->qp_type, jcaps, out, (jlong)(uintptr_t)&q->qp);
	int err = jv_exception(env, "ibv_create_qp");
	jint qpn = 0;
	if (!err)
		(*env)->GetIntArrayRegion(env, out, 0, 1, &qpn);
	(*env)->DeleteLocalRef(env, jcaps);
	(*env)->DeleteLocalRef(env, out);
	if (err) {
		free(q);
		errno = err;
		return NULL;
	}
	struct ibv_qp *qp = &q->qp;
	use(PD_USERS(pd), 1);
	use(CQ_USERS(init->send_cq), 1);
	use(CQ_USERS(init->recv_cq), 1);
	qp->context = pd->context;
	qp->qp_context = init->qp_context;
	qp->pd = pd;
	qp->send_cq = init->send_cq;
	qp->recv_cq = init->recv_cq;
	qp->handle = (uint32_t)h;
	qp->qp_num = (uint32_t)qpn;
	qp->state = IBV_QPS_RESET;
	qp->qp_type = init->qp_type;
	pthread_mutex_init(&qp->mutex, NULL);
	pthread_cond_init(&qp->cond, NULL);
	/* at least one SGE each way (the endpoint's minimum), as a provider reports what it granted */
	if (init->cap.max_send_sge == 0)
		init->cap.max_send_sge = 1;
	if (init->cap.max_recv_sge == 0)
		init->cap.max_recv_sge = 1;
	q->cap = init->cap;
	q->sq_sig_all = init->sq_sig_all;
	pthread_mutex_init(&q->inline_lock, NULL);
	if (init->cap.max_inline_data > 0) {
		size_t size = (size_t)init->cap.max_inline_data * JV_INLINE_SLOTS;
		void *mem = aligned_alloc(64, (size + 63) & ~(size_t)63);
		q->inline_mr = mem != NULL ? jv_reg_mr(pd, mem, size, (uintptr_t)mem, IBV_ACCESS_LOCAL_WRITE) : NULL;
		if (q->inline_mr == NULL) {
			int e = errno;
			free(mem);
			ibv_destroy_qp(qp);
			errno = e ? e : ENOMEM;
			return NULL;
		}
	}
	q->attr.qp_state = IBV_QPS_RESET;
	q->attr.cap = q->cap;
	return qp;
}

/* The bits of enum ibv_qp_attr_mask jroce takes (NativeVerbs.SUPPORTED_MASK); bit n's value goes in v[n]. */
#define JV_QP_ATTR_BITS 21

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	JV_ENV_OR(errno);
	struct jv_qp *q = (struct jv_qp *)qp;
	jint v[JV_QP_ATTR_BITS] = { 0 };
	v[0] = attr->qp_state;
	v[3] = (jint)attr->qp_access_flags;
	v[4] = attr->pkey_index;
	v[5] = attr->port_num;
	v[6] = (jint)attr->qkey;
	v[8] = attr->path_mtu;
	v[9] = attr->timeout;
	v[10] = attr->retry_cnt;
	v[11] = attr->rnr_retry;
	v[12] = (jint)attr->rq_psn;
	v[13] = attr->max_rd_atomic;
	v[15] = attr->min_rnr_timer;
	v[16] = (jint)attr->sq_psn;
	v[17] = attr->max_dest_rd_atomic;
	v[20] = (jint)attr->dest_qp_num;
	/* the current-state and SQD-notify bits only confirm what the QP already is: nothing to pass on */
	int pass = mask & ~(IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY);

	jintArray values = (*env)->NewIntArray(env, JV_QP_ATTR_BITS);
	jbyteArray dgid = NULL;
	if (values == NULL) {
		(*env)->ExceptionClear(env);
		return ENOMEM;
	}
	(*env)->SetIntArrayRegion(env, values, 0, JV_QP_ATTR_BITS, v);
	if ((mask & IBV_QP_AV) && attr->ah_attr.is_global) {
		dgid = (*env)->NewByteArray(env, 16);
		if (dgid == NULL) {
			(*env)->ExceptionClear(env);
			(*env)->DeleteLocalRef(env, values);
			return ENOMEM;
		}
		(*env)->SetByteArrayRegion(env, dgid, 0, 16, (const jbyte *)attr->ah_attr.grh.dgid.raw);
	}
	(*env)->CallStaticVoidMethod(env, jv_java.cls, jv_java.modify_qp, (jint)qp->handle, (jint)pass, values, dgid);
	int err = jv_exception(env, "ibv_modify_qp");
	(*env)->DeleteLocalRef(env, values);
	if (dgid != NULL)
		(*env)->DeleteLocalRef(env, dgid);
	if (err)
		return err;

	/* remember what was set, for ibv_query_qp */
	struct ibv_qp_attr *a = &q->attr;
	if (mask & IBV_QP_STATE) { a->qp_state = attr->qp_state; qp->state = attr->qp_state; }
	if (mask & IBV_QP_ACCESS_FLAGS) a->qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX) a->pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT) a->port_num = attr->port_num;
	if (mask & IBV_QP_QKEY) a->qkey = attr->qkey;
	if (mask & IBV_QP_AV) a->ah_attr = attr->ah_attr;
	if (mask & IBV_QP_PATH_MTU) a->path_mtu = attr->path_mtu;
	if (mask & IBV_QP_TIMEOUT) a->timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT) a->retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY) a->rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_RQ_PSN) a->rq_psn = attr->rq_psn;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC) a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER) a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN) a->sq_psn = attr->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_DEST_QPN) a->dest_qp_num = attr->dest_qp_num;
	return 0;
}

/* What the QP holds now (NativeVerbs.queryQp): a QP may have gone to the error state since the program set it,
 * its PSNs have advanced, and a QP of rdma_cm was taken to RTS by the connection manager, not by the program;
 * the address vector as the program last set it. */
int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
	JV_ENV_OR(errno);
	struct jv_qp *q = (struct jv_qp *)qp;
	(void)mask;
	enum { VALUES = 15 };
	jintArray out = (*env)->NewIntArray(env, VALUES);
	if (out == NULL) {
		(*env)->ExceptionClear(env);
		return ENOMEM;
	}
	(*env)->CallStaticVoidMethod(env, jv_java.cls, jv_java.query_qp, (jint)qp->handle, out);
	int err = jv_exception(env, "ibv_query_qp");
	jint live[VALUES] = { 0 };
	if (!err)
		(*env)->GetIntArrayRegion(env, out, 0, VALUES, live);
	(*env)->DeleteLocalRef(env, out);
	if (err)
		return err;
	*attr = q->attr;
	attr->qp_state = (enum ibv_qp_state)live[0];
	attr->cur_qp_state = attr->qp_state;
	attr->sq_psn = (uint32_t)live[1];
	attr->rq_psn = (uint32_t)live[2];
	attr->qkey = (uint32_t)live[3];
	attr->dest_qp_num = (uint32_t)live[4];
	if (live[5] != 0)
		attr->path_mtu = (enum ibv_mtu)live[5];
	attr->qp_access_flags = (unsigned int)live[6];
	attr->pkey_index = (uint16_t)live[7];
	attr->port_num = (uint8_t)live[8];
	attr->max_dest_rd_atomic = (uint8_t)live[9];
	attr->max_rd_atomic = (uint8_t)live[10];
	attr->min_rnr_timer = (uint8_t)live[11];
	attr->timeout = (uint8_t)live[12];
	attr->retry_cnt = (uint8_t)live[13];
	attr->rnr_retry = (uint8_t)live[14];
	qp->state = attr->qp_state;
	attr->cap = q->cap;
	if (init != NULL) {
		memset(init, 0, sizeof(*init));
		init->qp_context = qp->qp_context;
		init->send_cq = qp->send_cq;
		init->recv_cq = qp->recv_cq;
		init->cap = q->cap;
		init->qp_type = qp->qp_type;
		init->sq_sig_all = q->sq_sig_all;
	}
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	JV_ENV_OR(errno);
	struct jv_qp *q = (struct jv_qp *)qp;
	jv_release(env, qp->handle);
	if (q->inline_mr != NULL) {
		void *mem = q->inline_mr->addr;
		ibv_dereg_mr(q->inline_mr);
		free(mem);
	}
	pthread_mutex_destroy(&q->inline_lock);
	use(PD_USERS(qp->pd), -1);
	use(CQ_USERS(qp->send_cq), -1);
	use(CQ_USERS(qp->recv_cq), -1);
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	free(qp);
	return 0;
}

