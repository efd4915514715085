/*
 * The data path, which verbs.h inlines as calls through context->ops: post_send, post_recv, poll_cq and
 * req_notify_cq. Work requests and completions cross into Java in one direct buffer of the calling thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "jv.h"
#include "jv_java.h"
#include "jv_objects.h"

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

/* Writes a WR's scatter/gather list in the wire layout the Java side reads; returns where the next entry goes. */
static char *put_sges(char *p, const struct ibv_sge *sg, int n)
{
	for (int i = 0; i < n; i++, p += sizeof(struct jv_wire_sge)) {
		struct jv_wire_sge *g = (struct jv_wire_sge *)p;
		g->addr = sg[i].addr;
		g->length = sg[i].length;
		g->lkey = sg[i].lkey;
	}
	return p;
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

/* What librxe refuses before the WR reaches the device (providers/rxe/rxe.c validate_send_wr): an atomic whose
 * local buffer is under 8 bytes or whose remote address is not 8-byte aligned, inline data past max_inline_data;
 * and what cannot be read at all (a negative SGE count, a UD send without an address handle). */
static int invalid_send(const struct jv_qp *q, const struct ibv_send_wr *w)
{
	if (w->num_sge < 0)
		return EINVAL;
	uint64_t length = 0;
	for (int i = 0; i < w->num_sge; i++)
		length += w->sg_list[i].length;
	if ((w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
	    && (length < 8 || (w->wr.atomic.remote_addr & 7) != 0))
		return EINVAL;
	if ((w->send_flags & IBV_SEND_INLINE) && length > q->cap.max_inline_data)
		return EINVAL;
	if (q->qp.qp_type == IBV_QPT_UD && w->wr.ud.ah == NULL)
		return EINVAL;
	return 0;
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
	if (wr == NULL) { /* providers/rxe/rxe.c rxe_post_send */
		*bad_wr = NULL;
		return EINVAL;
	}
	/* the WRs before the first one refused here are posted, as librxe posts them one by one */
	struct ibv_send_wr *stop = NULL;
	int stop_err = 0;
	for (struct ibv_send_wr *w = wr; w != NULL; w = w->next, count++) {
		if ((stop_err = invalid_send(q, w)) != 0) {
			stop = w;
			break;
		}
		need += sizeof(struct jv_wire_send) + (size_t)w->num_sge * sizeof(struct jv_wire_sge);
	}
	if (count == 0) {
		*bad_wr = stop;
		return stop_err;
	}
	char *p = jv_scratch(env, need, &buf);
	if (p == NULL)
		return ENOMEM;
	int slot = 0;
	for (struct ibv_send_wr *w = wr; w != stop; w = w->next) {
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
		p = put_sges(p, w->sg_list, w->num_sge);
	}
	jint refused = (*env)->CallStaticIntMethod(env, jv_java.cls, jv_java.post_send, (jint)qp->handle, buf, (jint)count);
	int err = jv_exception(env, "ibv_post_send");
	if (err)
		return err;
	if (refused < 0) {
		*bad_wr = stop;
		return stop_err;
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
	if (wr == NULL) /* providers/rxe/rxe.c rxe_post_recv */
		return EINVAL;
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
		p = put_sges(p, w->sg_list, w->num_sge);
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

void jv_install_ops(struct ibv_context_ops *ops)
{
	ops->poll_cq = poll_cq;
	ops->req_notify_cq = req_notify_cq;
	ops->post_send = post_send;
	ops->post_recv = post_recv;
}

