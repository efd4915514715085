/*
 * The objects that live in the endpoint: PD, MR, CQ and AH. Each is rdma-core's public struct, whose
 * `handle` names the Java object (io.jroce.verbs.NativeVerbs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jv.h"
#include "jv_java.h"
#include "jv_objects.h"

void jv_release(JNIEnv *env, uint32_t handle)
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
	jv_release(env, pd->handle);
	free(pd);
	return 0;
}

/* ------------------------------------------------------------------------------------------ MR */

struct ibv_mr *jv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	JV_ENV_OR(NULL);
	if (iova != (uintptr_t)addr) {
		errno = JV_UNSUPPORTED("a memory region whose iova differs from its address", EOPNOTSUPP);
		return NULL;
	}
	if (length == 0 || length > 0x7fffffff || (uintptr_t)addr + length < (uintptr_t)addr) {
		errno = EINVAL;
		return NULL;
	}
	/* rdma-core's kernel pins the region's pages (umem.c ib_umem_get): a range not wholly mapped is EFAULT. msync
	 * says ENOMEM for such a range and does nothing else with MS_ASYNC. */
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t first = (uintptr_t)addr & ~(page - 1);
	if (msync((void *)first, (uintptr_t)addr + length - first, MS_ASYNC) != 0 && errno == ENOMEM) {
		errno = EFAULT;
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
	return jv_reg_mr(pd, addr, length, (uintptr_t)addr, access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return jv_reg_mr(pd, addr, length, iova, access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	if (access & IBV_ACCESS_OPTIONAL_RANGE)
		access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE; /* optional flags may be ignored (verbs.h) */
	return jv_reg_mr(pd, addr, length, iova, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	JV_ENV_OR(errno);
	jv_release(env, mr->handle);
	use(PD_USERS(mr->pd), -1);
	free(mr);
	return 0;
}

/* ------------------------------------------------------------------------------------------ CQ */

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	JV_ENV_OR(NULL);
	if (cqe < 1 || cqe > JV_MAX_CQE || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
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
	jv_release(env, cq->handle);
	if (cq->channel != NULL)
		__atomic_sub_fetch(&cq->channel->refcnt, 1, __ATOMIC_RELAXED);
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(cq);
	return 0;
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
	jv_release(env, ah->handle);
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

