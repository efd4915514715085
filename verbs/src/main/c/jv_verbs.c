/*
 * The verbs that run in the endpoint: PD, MR, CQ, QP, posting and polling. Each object is rdma-core's public
 * struct, whose `handle` names the Java object (io.jroce.verbs.NativeVerbs). The data path (post_send,
 * post_recv, poll_cq, req_notify_cq) is reached through context->ops, as verbs.h inlines it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "jv.h"
#include "jv_java.h"

/* The layouts NativeVerbs reads and writes (its WR_HEADER, SGE_BYTES, RECV_HEADER, WC_BYTES). */
struct jv_wire_send {
	uint64_t wr_id;
	uint32_t opcode, send_flags, num_sge, imm_or_inv;
	uint64_t remote_addr;
	uint32_t rkey, pad;
	uint64_t compare_add, swap;
	uint32_t ah, remote_qpn, remote_qkey, pad2; /* UD: the address handle's handle, or JV_NO_AH */
};
#define JV_NO_AH 0xffffffffu
struct jv_wire_sge {
	uint64_t addr;
	uint32_t length, lkey;
};
struct jv_wire_recv {
	uint64_t wr_id;
	uint32_t num_sge, pad;
};
struct jv_wire_wc {
	uint64_t wr_id;
	uint32_t status, opcode, vendor_err, byte_len, imm_or_inv, qp_num, src_qp, wc_flags;
	uint64_t pad;
};
_Static_assert(sizeof(struct jv_wire_send) == 72, "NativeVerbs.WR_HEADER");
_Static_assert(sizeof(struct jv_wire_sge) == 16, "NativeVerbs.SGE_BYTES");
_Static_assert(sizeof(struct jv_wire_recv) == 16, "NativeVerbs.RECV_HEADER");
_Static_assert(sizeof(struct jv_wire_wc) == 48, "NativeVerbs.WC_BYTES");

/* A PD and a CQ count what uses them (MRs, QPs, AHs; QPs): destroying one still in use is EBUSY, as the
 * kernel answers (ib_uverbs: a PD's or CQ's usecnt). */
struct jv_pd {
	struct ibv_pd pd;
	int users;
};
struct jv_cq {
	struct ibv_cq cq;
	int users;
};

static void use(int *users, int delta)
{
	__atomic_add_fetch(users, delta, __ATOMIC_RELAXED);
}

#define PD_USERS(p) (&((struct jv_pd *)(p))->users)
#define CQ_USERS(c) (&((struct jv_cq *)(c))->users)

/* A QP and what ibv_query_qp answers from: the attributes last set and the capabilities granted. */
struct jv_qp {
	struct ibv_qp qp;
	struct ibv_qp_attr attr;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	/* Inline sends: their SGEs need no registered memory (the lkey is ignored, verbs.h IBV_SEND_INLINE), but
	 * the endpoint reads every SGE through a region. The data is copied at post time in any case; here it
	 * goes first into this QP's own region, one slot of max_inline_data bytes per WR of a chain, under
	 * inline_lock while the chain is posted. */
	struct ibv_mr *inline_mr;
	pthread_mutex_t inline_lock;
};

/* The inline region of a QP: max_inline_data bytes for each of up to this many WRs of one chain. */
#define JV_INLINE_SLOTS 64

/* Calls a Java method returning int/void; on a thrown exception returns its errno (and sets errno). */
#define JV_ENV_OR(fail)                                  \
	JNIEnv *env = jv_env();                          \
	if (env == NULL) {                               \
		errno = jv_env_error();                  \
		return fail;                             \
	}

static void release(JNIEnv *env, uint32_t handle)
{
	(*env)->CallStaticVoidMethod(env, jv_java.cls, jv_java.release, (jint)handle);
	jv_exception(env, "release");
}

/* ------------------------------------------------------------------------------------------ PD */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	JV_ENV_OR(NULL);
	struct jv_pd *jpd = calloc(1, sizeof(*jpd));
	if (jpd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	struct ibv_pd *pd = &jpd->pd;
	jint h = (*env)->CallStaticIntMethod(env, jv_java.cls, jv_java.alloc_pd);
	int err = jv_exception(env, "ibv_alloc_pd");
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	pd->context = context;
	pd->handle = (uint32_t)h;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	JV_ENV_OR(errno);
	if (__atomic_load_n(PD_USERS(pd), __ATOMIC_RELAXED) != 0)
		return EBUSY;
	release(env, pd->handle);
	free(pd);
	return 0;
}

/* ------------------------------------------------------------------------------------------ MR */

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	JV_ENV_OR(NULL);
	if (iova != (uintptr_t)addr) {
		errno = JV_UNSUPPORTED("a memory region whose iova differs from its address", EOPNOTSUPP);
		return NULL;
	}
	if (length == 0 || length > 0x7fffffff) {
		errno = EINVAL;
		return NULL;
	}
	struct ibv_mr *mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* the program's own memory, seen from Java without a copy */
	jobject buf = (*env)->NewDirectByteBuffer(env, addr, (jlong)length);
	jintArray keys = (*env)->NewIntArray(env, 2);
	if (buf == NULL || keys == NULL) {
		(*env)->ExceptionClear(env);
		free(mr);
		errno = ENOMEM;
		return NULL;
	}
	jint h = (*env)->CallStaticIntMethod(env, jv_java.cls, jv_java.reg_mr, (jint)pd->handle, buf,
					     (jint)access, keys);
	int err = jv_exception(env, "ibv_reg_mr");
	jint k[2] = { 0, 0 };
	if (!err)
		(*env)->GetIntArrayRegion(env, keys, 0, 2, k);
	(*env)->DeleteLocalRef(env, buf);
	(*env)->DeleteLocalRef(env, keys);
	if (err) {
		free(mr);
		errno = err;
		return NULL;
	}
	use(PD_USERS(pd), 1);
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->handle = (uint32_t)h;
	mr->lkey = (uint32_t)k[0];
	mr->rkey = (uint32_t)k[1];
	return mr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	if (access & IBV_ACCESS_OPTIONAL_RANGE)
		access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE; /* optional flags may be ignored (verbs.h) */
	return reg_mr(pd, addr, length, iova, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	JV_ENV_OR(errno);
	release(env, mr->handle);
	use(PD_USERS(mr->pd), -1);
	free(mr);
	return 0;
}

/* ------------------------------------------------------------------------------------------ CQ */

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	JV_ENV_OR(NULL);
	if (cqe < 1 || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	struct jv_cq *jcq = calloc(1, sizeof(*jcq));
	if (jcq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	struct ibv_cq *cq = &jcq->cq;
	jint h = (*env)->CallStaticIntMethod(env, jv_java.cls, jv_java.create_cq, (jint)cqe, (jlong)(uintptr_t)cq);
	int err = jv_exception(env, "ibv_create_cq");
	if (!err && channel != NULL) {
		(*env)->CallStaticVoidMethod(env, jv_java.cls, jv_java.watch_cq, h, (jlong)(uintptr_t)cq);
		err = jv_exception(env, "ibv_create_cq (completion channel)");
	}
	if (err) {
		free(cq);
		errno = err;
		return NULL;
	}
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->handle = (uint32_t)h;
	cq->cqe = cqe;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	if (channel != NULL)
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_RELAXED);
	return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	JV_ENV_OR(errno);
	if (__atomic_load_n(CQ_USERS(cq), __ATOMIC_RELAXED) != 0)
		return EBUSY;
	release(env, cq->handle);
	if (cq->channel != NULL)
		__atomic_sub_fetch(&cq->channel->refcnt, 1, __ATOMIC_RELAXED);
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(cq);
	return 0;
}

static int poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	JNIEnv *env = jv_env();
	jobject buf;
	if (env == NULL || num_entries < 0)
		return -1;
	struct jv_wire_wc *w = jv_scratch(env, (size_t)num_entries * sizeof(*w), &buf);
	if (w == NULL)
		return -1;
	jint n = (*env)->CallStaticIntMethod(env, jv_java.cls, jv_java.poll_cq, (jint)cq->handle, buf,
					     (jint)num_entries);
	if (jv_exception(env, "ibv_poll_cq"))
		return -1;
	/* A program spins on an empty CQ; the endpoint's event loop, which makes the completions, is another
	 * thread of this process: on a busy host give it the CPU rather than spin it out. */
	if (n == 0)
		sched_yield();
	for (jint i = 0; i < n; i++) {
		memset(&wc[i], 0, sizeof(wc[i]));
		wc[i].wr_id = w[i].wr_id;
		wc[i].status = (enum ibv_wc_status)w[i].status;
		wc[i].opcode = (enum ibv_wc_opcode)w[i].opcode;
		wc[i].vendor_err = w[i].vendor_err;
		wc[i].byte_len = w[i].byte_len;
		wc[i].imm_data = w[i].imm_or_inv;
		wc[i].qp_num = w[i].qp_num;
		wc[i].src_qp = w[i].src_qp;
		wc[i].wc_flags = w[i].wc_flags;
	}
	return n;
}

static int req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	JNIEnv *env = jv_env();
	if (env == NULL)
		return EIO;
	if (cq->channel == NULL)
		return EINVAL;
	(*env)->CallStaticVoidMethod(env, jv_java.cls, jv_java.arm_cq, (jint)cq->handle,
				     (jboolean)(solicited_only != 0));
	return jv_exception(env, "ibv_req_notify_cq");
}

/* ------------------------------------------------------------------------------------------ QP */

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
		q->inline_mr = mem != NULL ? reg_mr(pd, mem, size, (uintptr_t)mem, IBV_ACCESS_LOCAL_WRITE) : NULL;
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

/* What the program set, with the live state and PSNs from the endpoint (a QP may have gone to the error state
 * since, and its PSNs have advanced). */
int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
	JV_ENV_OR(errno);
	struct jv_qp *q = (struct jv_qp *)qp;
	(void)mask;
	jintArray out = (*env)->NewIntArray(env, 3);
	if (out == NULL) {
		(*env)->ExceptionClear(env);
		return ENOMEM;
	}
	(*env)->CallStaticVoidMethod(env, jv_java.cls, jv_java.query_qp, (jint)qp->handle, out);
	int err = jv_exception(env, "ibv_query_qp");
	jint live[3] = { 0, 0, 0 };
	if (!err)
		(*env)->GetIntArrayRegion(env, out, 0, 3, live);
	(*env)->DeleteLocalRef(env, out);
	if (err)
		return err;
	*attr = q->attr;
	attr->qp_state = (enum ibv_qp_state)live[0];
	attr->cur_qp_state = attr->qp_state;
	attr->sq_psn = (uint32_t)live[1];
	attr->rq_psn = (uint32_t)live[2];
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
	release(env, qp->handle);
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

/* ------------------------------------------------------------------------------------------ posting */

/* A refused post: its errno, and under JROCE_VERBS_LOG=debug the endpoint's reason. */
static int refusal(JNIEnv *env, int err, const char *verb)
{
	jstring why = (*env)->CallStaticObjectMethod(env, jv_java.cls, jv_java.last_refusal);
	if ((*env)->ExceptionCheck(env)) {
		(*env)->ExceptionClear(env);
		return err;
	}
	if (why != NULL) {
		const char *c = (*env)->GetStringUTFChars(env, why, NULL);
		if (c != NULL) {
			jv_debug("%s: %s", verb, c);
			(*env)->ReleaseStringUTFChars(env, why, c);
		}
		(*env)->DeleteLocalRef(env, why);
	}
	return err;
}

static int post_send_chain(struct jv_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct jv_qp *q = (struct jv_qp *)qp;
	if (q->inline_mr == NULL)
		return post_send_chain(q, wr, bad_wr);
	pthread_mutex_lock(&q->inline_lock);
	int err = post_send_chain(q, wr, bad_wr);
	pthread_mutex_unlock(&q->inline_lock);
	return err;
}

static int post_send_chain(struct jv_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct ibv_qp *qp = &q->qp;
	JNIEnv *env = jv_env();
	size_t need = 0;
	int count = 0;
	jobject buf;

	*bad_wr = wr;
	if (env == NULL)
		return EIO;
	for (struct ibv_send_wr *w = wr; w != NULL; w = w->next, count++) {
		if (w->num_sge < 0) {
			*bad_wr = w;
			return EINVAL;
		}
		need += sizeof(struct jv_wire_send) + (size_t)w->num_sge * sizeof(struct jv_wire_sge);
	}
	char *p = jv_scratch(env, need, &buf);
	if (p == NULL)
		return ENOMEM;
	int slot = 0;
	for (struct ibv_send_wr *w = wr; w != NULL; w = w->next) {
		struct jv_wire_send *s = (struct jv_wire_send *)p;
		memset(s, 0, sizeof(*s));
		s->wr_id = w->wr_id;
		s->opcode = w->opcode;
		s->send_flags = w->send_flags;
		s->num_sge = (uint32_t)w->num_sge;
		s->imm_or_inv = w->imm_data; /* a union with invalidate_rkey */
		if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			s->remote_addr = w->wr.atomic.remote_addr;
			s->rkey = w->wr.atomic.rkey;
			s->compare_add = w->wr.atomic.compare_add;
			s->swap = w->wr.atomic.swap;
		} else if (qp->qp_type == IBV_QPT_UD) {
			if (w->wr.ud.ah == NULL) {
				*bad_wr = w; /* nothing is posted before the whole chain is read */
				return EINVAL;
			}
			s->ah = w->wr.ud.ah->handle;
			s->remote_qpn = w->wr.ud.remote_qpn;
			s->remote_qkey = w->wr.ud.remote_qkey;
		} else {
			s->remote_addr = w->wr.rdma.remote_addr;
			s->rkey = w->wr.rdma.rkey;
		}
		if (qp->qp_type != IBV_QPT_UD)
			s->ah = JV_NO_AH;
		p += sizeof(*s);
		if ((w->send_flags & IBV_SEND_INLINE) && q->inline_mr != NULL && w->num_sge > 0) {
			/* gather the data into this WR's slot of the QP's inline region: one SGE there */
			size_t total = 0;
			for (int i = 0; i < w->num_sge; i++)
				total += w->sg_list[i].length;
			if (total > q->cap.max_inline_data || slot >= JV_INLINE_SLOTS) {
				*bad_wr = w;
				return total > q->cap.max_inline_data ? EINVAL : ENOMEM;
			}
			char *dst = (char *)q->inline_mr->addr + (size_t)slot++ * q->cap.max_inline_data;
			for (int i = 0, at = 0; i < w->num_sge; at += (int)w->sg_list[i].length, i++)
				memcpy(dst + at, (const void *)(uintptr_t)w->sg_list[i].addr, w->sg_list[i].length);
			struct jv_wire_sge *g = (struct jv_wire_sge *)p;
			g->addr = (uintptr_t)dst;
			g->length = (uint32_t)total;
			g->lkey = q->inline_mr->lkey;
			s->num_sge = 1;
			p += sizeof(*g); /* the next WR follows this one SGE */
			continue;
		}
		for (int i = 0; i < w->num_sge; i++, p += sizeof(struct jv_wire_sge)) {
			struct jv_wire_sge *g = (struct jv_wire_sge *)p;
			g->addr = w->sg_list[i].addr;
			g->length = w->sg_list[i].length;
			g->lkey = w->sg_list[i].lkey;
		}
	}
	jint refused = (*env)->CallStaticIntMethod(env, jv_java.cls, jv_java.post_send, (jint)qp->handle, buf, (jint)count);
	int err = jv_exception(env, "ibv_post_send");
	if (err)
		return err;
	if (refused < 0) {
		*bad_wr = NULL;
		return 0;
	}
	/* the WRs before the refused one were posted: bad_wr names the first that was not */
	for (int i = 0; i < refused / 256 && *bad_wr != NULL; i++)
		*bad_wr = (*bad_wr)->next;
	return refusal(env, refused % 256, "ibv_post_send");
}

static int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	JNIEnv *env = jv_env();
	size_t need = 0;
	int count = 0;
	jobject buf;

	*bad_wr = wr;
	if (env == NULL)
		return EIO;
	for (struct ibv_recv_wr *w = wr; w != NULL; w = w->next, count++) {
		if (w->num_sge < 0)
			return EINVAL;
		need += sizeof(struct jv_wire_recv) + (size_t)w->num_sge * sizeof(struct jv_wire_sge);
	}
	char *p = jv_scratch(env, need, &buf);
	if (p == NULL)
		return ENOMEM;
	for (struct ibv_recv_wr *w = wr; w != NULL; w = w->next) {
		struct jv_wire_recv *r = (struct jv_wire_recv *)p;
		r->wr_id = w->wr_id;
		r->num_sge = (uint32_t)w->num_sge;
		r->pad = 0;
		p += sizeof(*r);
		for (int i = 0; i < w->num_sge; i++, p += sizeof(struct jv_wire_sge)) {
			struct jv_wire_sge *g = (struct jv_wire_sge *)p;
			g->addr = w->sg_list[i].addr;
			g->length = w->sg_list[i].length;
			g->lkey = w->sg_list[i].lkey;
		}
	}
	jint refused = (*env)->CallStaticIntMethod(env, jv_java.cls, jv_java.post_recv, (jint)qp->handle, buf, (jint)count);
	int err = jv_exception(env, "ibv_post_recv");
	if (err)
		return err;
	if (refused < 0) {
		*bad_wr = NULL;
		return 0;
	}
	for (int i = 0; i < refused / 256 && *bad_wr != NULL; i++)
		*bad_wr = (*bad_wr)->next;
	return refusal(env, refused % 256, "ibv_post_recv");
}

/* ------------------------------------------------------------------------------------------ AH */

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	JV_ENV_OR(NULL);
	if (!attr->is_global) {
		errno = EINVAL; /* RoCE routes by the GID: an address without a GRH names no one */
		return NULL;
	}
	struct ibv_ah *ah = calloc(1, sizeof(*ah));
	jbyteArray dgid = (*env)->NewByteArray(env, 16);
	if (ah == NULL || dgid == NULL) {
		(*env)->ExceptionClear(env);
		free(ah);
		errno = ENOMEM;
		return NULL;
	}
	(*env)->SetByteArrayRegion(env, dgid, 0, 16, (const jbyte *)attr->grh.dgid.raw);
	jint h = (*env)->CallStaticIntMethod(env, jv_java.cls, jv_java.create_ah, (jint)pd->handle, dgid);
	int err = jv_exception(env, "ibv_create_ah");
	(*env)->DeleteLocalRef(env, dgid);
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}
	use(PD_USERS(pd), 1);
	ah->context = pd->context;
	ah->pd = pd;
	ah->handle = (uint32_t)h;
	return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	JV_ENV_OR(errno);
	release(env, ah->handle);
	use(PD_USERS(ah->pd), -1);
	free(ah);
	return 0;
}

/*
 * The way back to a UD sender: its address from the receive buffer's 40-byte GRH area. Over RoCE v2 the
 * area holds the packet's IP header: IPv6 fills it (source address at bytes 8..23); an IPv4 header takes
 * its last 20 bytes (source address at bytes 32..35), as rdma_rxe writes it (rxe_recv.c, rxe_resp.c).
 */
int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah_attr)
{
	const struct jv_device *d = jv_ctx(context)->device;
	const uint8_t *g = (const uint8_t *)grh;

	if (wc->status != IBV_WC_SUCCESS || !(wc->wc_flags & IBV_WC_GRH) || port_num != 1)
		return EINVAL;
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->is_global = 1;
	ah_attr->port_num = port_num;
	ah_attr->grh.sgid_index = JV_GID_ADDRESS;
	ah_attr->grh.hop_limit = 0xff;
	if (d->family == AF_INET) {
		ah_attr->grh.dgid.raw[10] = 0xff;
		ah_attr->grh.dgid.raw[11] = 0xff;
		memcpy(&ah_attr->grh.dgid.raw[12], g + 32, 4);
	} else {
		memcpy(ah_attr->grh.dgid.raw, g + 8, 16);
	}
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;
	int err = ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr);
	if (err) {
		errno = err;
		return NULL;
	}
	return ibv_create_ah(pd, &attr);
}

void jv_install_ops(struct ibv_context_ops *ops)
{
	ops->poll_cq = poll_cq;
	ops->req_notify_cq = req_notify_cq;
	ops->post_send = post_send;
	ops->post_recv = post_recv;
}
