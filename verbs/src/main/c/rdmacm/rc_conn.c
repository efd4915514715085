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
	RC_ID_OR(id, -1);
	if (qp_init_attr == NULL)
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
	RC_ID_OR(id, -1);
	if (attr == NULL)
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
	RC_ID_OR(id, );
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
	RC_ID_OR(id, -1);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	if (id->qp == NULL) {
		/* librdmacm's ucma_valid_param: an id without a QP needs a conn_param naming the program's own QP */
		if (p == NULL || p->qp_num == 0)
			return rc_fail(EINVAL);
		/* a QP the program connects itself (rping -q): the CM names it in REQ or REP and never modifies it */
		(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.own_qp, (jint)r->handle, (jint)p->qp_num);
		int e = rc_exception(env, what);
		if (e != 0)
			return rc_fail(e);
	}
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
	RC_ID_OR(id, -1);
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
	RC_ID_OR(id, -1);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.disconnect, (jint)r->handle);
	return rc_fail(rc_exception(env, "rdma_disconnect"));
}

/* ------------------------------------------------------------------ a QP the program connects itself */

/* The attributes and mask that take the id's QP to attr->qp_state, as the kernel's rdma_cm computes them
 * (cma.c rdma_init_qp_attr; cm.c cm_init_qp_init_attr, cm_init_qp_rtr_attr, cm_init_qp_rts_attr); every
 * attribute outside the mask is zero, as librdmacm copies the kernel's answer whole. */
int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	RC_ID_OR(id, -1);
	if (qp_attr == NULL || qp_attr_mask == NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	enum ibv_qp_state state = qp_attr->qp_state;
	jintArray values = (*env)->NewIntArray(env, RC_QP_ATTR_VALUES);
	jbyteArray dgid = (*env)->NewByteArray(env, 16);
	if (values == NULL || dgid == NULL) {
		(*env)->ExceptionClear(env);
		if (values != NULL)
			(*env)->DeleteLocalRef(env, values);
		return rc_fail(ENOMEM);
	}
	jint mask = (*env)->CallStaticIntMethod(env, rc_java.cls, rc_java.init_qp_attr, (jint)r->handle, (jint)state, values, dgid);
	int err = rc_exception(env, "rdma_init_qp_attr");
	jint v[RC_QP_ATTR_VALUES] = { 0 };
	union ibv_gid gid;
	if (err == 0) {
		(*env)->GetIntArrayRegion(env, values, 0, RC_QP_ATTR_VALUES, v);
		(*env)->GetByteArrayRegion(env, dgid, 0, 16, (jbyte *)gid.raw);
	}
	(*env)->DeleteLocalRef(env, values);
	(*env)->DeleteLocalRef(env, dgid);
	if (err != 0)
		return rc_fail(err);
	memset(qp_attr, 0, sizeof(*qp_attr));
	qp_attr->qp_state = state;
	qp_attr->qp_access_flags = (unsigned int)v[3];
	qp_attr->pkey_index = (uint16_t)v[4];
	qp_attr->port_num = (uint8_t)v[5];
	qp_attr->qkey = (uint32_t)v[6];
	if (mask & IBV_QP_AV) {
		/* RoCE v2: a GRH to the peer's GID from the device's address GID (index 1), as rdma_rxe's path */
		qp_attr->ah_attr.is_global = 1;
		qp_attr->ah_attr.grh.dgid = gid;
		qp_attr->ah_attr.grh.sgid_index = 1;
		qp_attr->ah_attr.grh.traffic_class = (uint8_t)v[RC_QP_ATTR_BITS];
		qp_attr->ah_attr.grh.hop_limit = (uint8_t)v[RC_QP_ATTR_BITS + 1];
		qp_attr->ah_attr.port_num = 1;
	}
	qp_attr->path_mtu = (enum ibv_mtu)v[8];
	qp_attr->timeout = (uint8_t)v[9];
	qp_attr->retry_cnt = (uint8_t)v[10];
	qp_attr->rnr_retry = (uint8_t)v[11];
	qp_attr->rq_psn = (uint32_t)v[12];
	qp_attr->max_rd_atomic = (uint8_t)v[13];
	qp_attr->min_rnr_timer = (uint8_t)v[15];
	qp_attr->sq_psn = (uint32_t)v[16];
	qp_attr->max_dest_rd_atomic = (uint8_t)v[17];
	qp_attr->dest_qp_num = (uint32_t)v[20];
	*qp_attr_mask = (int)mask;
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
	jv_debug("rdma_init_qp_attr: %s, mask 0x%x", (unsigned)state < 7 ? names[state] : "?", (unsigned)mask);
	return 0;
}

/* librdmacm's rdma_establish: after CONNECT_RESPONSE, with the program's QP in RTS, the RTU; EINVAL for an id with a
 * QP of rdma_create_qp's (the CM connects that one) or before the REP. */
int rdma_establish(struct rdma_cm_id *id)
{
	RC_ID_OR(id, -1);
	if (id->qp != NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.establish, (jint)r->handle);
	int err = rc_exception(env, "rdma_establish");
	if (err == 0)
		jv_debug("rdma_establish: RTU sent");
	return rc_fail(err);
}

/* The kernel's rdma_notify (cma.c) -> ib_cm_notify (cm.c): IBV_EVENT_COMM_EST establishes a passive connection still
 * waiting for its RTU (cm_establish: ESTABLISHED follows), EISCONN once established, EINVAL in any other state;
 * other events are EINVAL (there are no alternate paths to migrate to). */
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	RC_ID_OR(id, -1);
	if (event != IBV_EVENT_COMM_EST)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	jint ret = (*env)->CallStaticIntMethod(env, rc_java.cls, rc_java.comm_established, (jint)r->handle);
	int err = rc_exception(env, "rdma_notify");
	return rc_fail(err != 0 ? err : ret);
}

/* ------------------------------------------------------------------ options */

/* The kernel's ucma_set_option (ucma.c): the value is copied in first (EFAULT), then ucma_set_option_level and
 * ucma_set_option_id check the level, the name and the value's size (EINVAL) and apply it: TOS (a byte) becomes the
 * path's traffic class, REUSEADDR and AFONLY (ints) are kept on the id (cma.c rdma_set_reuseaddr, rdma_set_afonly:
 * EINVAL once the id is past the state that allows them), ACK_TIMEOUT (a byte) replaces the local ACK timeout the
 * QP gets at RTS (cma.c rdma_set_ack_timeout: RC ids only). An unknown level or name is ENOSYS, as is
 * RDMA_OPTION_IB_PATH (path records are InfiniBand's). */
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	RC_ID_OR(id, -1);
	if (optval == NULL && optlen > 0)
		return rc_fail(EFAULT);
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		return RC_UNSUPPORTED("rdma_set_option(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH)");
	if (level != RDMA_OPTION_ID)
		return rc_fail(ENOSYS);
	int value;
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			return rc_fail(EINVAL);
		value = *(uint8_t *)optval;
		break;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int))
			return rc_fail(EINVAL);
		value = *(int *)optval;
		break;
	default:
		return rc_fail(ENOSYS);
	}
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.set_option, (jint)r->handle, (jint)optname, (jint)value);
	int err = rc_exception(env, "rdma_set_option");
	if (err == 0) {
		if (optname == RDMA_OPTION_ID_TOS)
			r->tos = value;
		jv_debug("rdma_set_option: id %p option %d = %d", (void *)id, optname, value);
	}
	return rc_fail(err);
}
