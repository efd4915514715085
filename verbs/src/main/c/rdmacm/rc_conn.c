/*
 * An id's QP and its connection: rdma_create_qp makes the QP through the program's libibverbs (jroce's) and
 * hands it to the CM, which takes it to INIT now and to RTR and RTS with the values of REQ and REP; connect,
 * accept, reject and disconnect send the CM's messages.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rc.h"

/* rdma_create_qp without CQs: a completion channel and a CQ for each direction (as librdmacm's ucma_create_cqs). */
static int create_cqs(struct rdma_cm_id *id, struct ibv_qp_init_attr *attr)
{
	id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
	if (id->recv_cq_channel == NULL)
		return errno;
	id->recv_cq = ibv_create_cq(id->verbs, (int)(attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1), id, id->recv_cq_channel, 0);
	if (id->recv_cq == NULL)
		return errno;
	id->send_cq_channel = ibv_create_comp_channel(id->verbs);
	if (id->send_cq_channel == NULL)
		return errno;
	id->send_cq = ibv_create_cq(id->verbs, (int)(attr->cap.max_send_wr ? attr->cap.max_send_wr : 1), id, id->send_cq_channel, 0);
	if (id->send_cq == NULL)
		return errno;
	attr->recv_cq = id->recv_cq;
	attr->send_cq = id->send_cq;
	return 0;
}

static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->send_cq != NULL)
		ibv_destroy_cq(id->send_cq);
	if (id->send_cq_channel != NULL)
		ibv_destroy_comp_channel(id->send_cq_channel);
	if (id->recv_cq != NULL)
		ibv_destroy_cq(id->recv_cq);
	if (id->recv_cq_channel != NULL)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	if (id == NULL || qp_init_attr == NULL)
		return rc_fail(EINVAL);
	if (id->verbs == NULL)
		return rc_fail(ENODEV);
	if (id->qp != NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	if (pd == NULL)
		pd = id->pd;
	if (pd == NULL) {
		if (r->own_pd == NULL && (r->own_pd = ibv_alloc_pd(id->verbs)) == NULL)
			return -1;
		pd = r->own_pd;
	}
	if (pd->context != id->verbs)
		return rc_fail(EINVAL); /* a PD of another device */
	struct ibv_qp_init_attr attr = *qp_init_attr;
	int err = 0;
	if (attr.send_cq == NULL || attr.recv_cq == NULL) {
		if ((err = create_cqs(id, &attr)) != 0) {
			destroy_cqs(id);
			return rc_fail(err);
		}
		r->own_cqs = 1;
	}
	struct ibv_qp *qp = ibv_create_qp(pd, &attr);
	if (qp == NULL) {
		err = errno;
		goto fail;
	}
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.use_qp, (jint)r->handle, (jint)qp->handle);
	if ((err = rc_exception(env, "rdma_create_qp")) != 0) {
		ibv_destroy_qp(qp);
		goto fail;
	}
	*qp_init_attr = attr; /* the capabilities granted, as ibv_create_qp reports them */
	id->qp = qp;
	id->pd = pd;
	id->qp_type = attr.qp_type;
	return 0;
fail:
	if (r->own_cqs) {
		destroy_cqs(id);
		r->own_cqs = 0;
	}
	return rc_fail(err);
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	if (id == NULL || attr == NULL)
		return rc_fail(EINVAL);
	/* what the classic ibv_qp_init_attr holds: a PD, and nothing of the extended verbs */
	if ((attr->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD) != 0)
		return rc_fail(EOPNOTSUPP);
	struct ibv_qp_init_attr classic = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
	};
	int ret = rdma_create_qp(id, (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : NULL, &classic);
	if (ret == 0)
		attr->cap = classic.cap;
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct rc_id *r = (struct rc_id *)id;
	if (id->qp != NULL)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	if (r->own_cqs) {
		destroy_cqs(id);
		r->own_cqs = 0;
	}
}

/* The conn_param's values for NativeCm (responder_resources, initiator_depth, flow_control, retry_count,
 * rnr_retry_count) and its private data; NULL values for a NULL conn_param. */
static int conn_param(JNIEnv *env, const struct rdma_conn_param *p, jintArray *values, jbyteArray *data)
{
	*values = NULL;
	*data = (*env)->NewByteArray(env, p != NULL && p->private_data != NULL ? p->private_data_len : 0);
	if (*data == NULL)
		goto oom;
	if (p == NULL)
		return 0;
	if (p->private_data != NULL && p->private_data_len > 0)
		(*env)->SetByteArrayRegion(env, *data, 0, p->private_data_len, (const jbyte *)p->private_data);
	jint v[5] = { p->responder_resources, p->initiator_depth, p->flow_control, p->retry_count, p->rnr_retry_count };
	if ((*values = (*env)->NewIntArray(env, 5)) == NULL)
		goto oom;
	(*env)->SetIntArrayRegion(env, *values, 0, 5, v);
	return 0;
oom:
	(*env)->ExceptionClear(env);
	return ENOMEM;
}

static int connect_or_accept(struct rdma_cm_id *id, struct rdma_conn_param *p, jmethodID m, const char *what)
{
	if (id == NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	if (id->qp == NULL && p != NULL && p->qp_num != 0) /* a QP of the program's own (rping -q) */
		return RC_UNSUPPORTED("a connection whose QP the program made itself (conn_param.qp_num)");
	jintArray values;
	jbyteArray data;
	int err = conn_param(env, p, &values, &data);
	if (err != 0)
		return rc_fail(err);
	(*env)->CallStaticVoidMethod(env, rc_java.cls, m, (jint)r->handle, values, data);
	err = rc_exception(env, what);
	if (values != NULL)
		(*env)->DeleteLocalRef(env, values);
	(*env)->DeleteLocalRef(env, data);
	if (err == 0 && r->sync)
		return rc_complete(id, RDMA_CM_EVENT_ESTABLISHED);
	return rc_fail(err);
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	return connect_or_accept(id, conn_param, rc_java.connect, "rdma_connect");
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	return connect_or_accept(id, conn_param, rc_java.accept, "rdma_accept");
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	if (id == NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	jbyteArray data = (*env)->NewByteArray(env, private_data != NULL ? private_data_len : 0);
	if (data == NULL) {
		(*env)->ExceptionClear(env);
		return rc_fail(ENOMEM);
	}
	if (private_data != NULL && private_data_len > 0)
		(*env)->SetByteArrayRegion(env, data, 0, private_data_len, (const jbyte *)private_data);
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.reject, (jint)r->handle, data);
	(*env)->DeleteLocalRef(env, data);
	return rc_fail(rc_exception(env, "rdma_reject"));
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	if (id == NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.disconnect, (jint)r->handle);
	return rc_fail(rc_exception(env, "rdma_disconnect"));
}
