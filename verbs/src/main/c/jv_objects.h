/* The library's verbs objects: rdma-core's structs with what the library keeps beside them. */
#ifndef JV_OBJECTS_H
#define JV_OBJECTS_H

#include <errno.h>
#include <pthread.h>

#include "jv.h"
#include "jv_java.h"

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

static inline void use(int *users, int delta)
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


/* The calling thread's JNIEnv as `env`, or return `fail` with errno saying why the endpoint cannot run. */
#define JV_ENV_OR(fail)                                  \
	JNIEnv *env = jv_env();                          \
	if (env == NULL) {                               \
		errno = jv_env_error();                  \
		return fail;                             \
	}

/* jv_verbs.c: forgets a Java object (NativeVerbs.release); registers memory of a PD */
void jv_release(JNIEnv *env, uint32_t handle);
struct ibv_mr *jv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access);

#endif
