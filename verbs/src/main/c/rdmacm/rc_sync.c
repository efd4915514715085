/*
 * Synchronous ids, librdmacm's simpler interface (rdma_create_ep, rdma_get_request; rdma-core's
 * rdma_server and rdma_client): an id made without an event channel gets one of its own, and its calls wait for
 * the event that ends them (rc_complete). A request's id shares its listener's channel, so a synchronous
 * listener serves one request at a time until it is accepted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rc.h"

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	RC_ID_OR(listen, -1);
	if (id == NULL)
		return rc_fail(EINVAL);
	struct rc_id *l = (struct rc_id *)listen;
	if (!l->sync) /* a listener with an event channel hands its requests out as events (librdmacm: EINVAL) */
		return rc_fail(EINVAL);
	if (listen->event != NULL) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	struct rdma_cm_event *event;
	if (rdma_get_cm_event(listen->channel, &event) != 0)
		return -1;
	int err = 0;
	if (event->event == RDMA_CM_EVENT_REJECTED)
		err = ECONNREFUSED;
	else if (event->status != 0)
		err = event->status < 0 ? -event->status : event->status;
	else if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		err = EINVAL;
	if (err != 0) {
		listen->event = event;
		return rc_fail(err);
	}
	if (l->ep_qp_init != NULL) { /* rdma_create_ep's QP attributes: each request's id gets its QP */
		struct ibv_qp_init_attr attr = *l->ep_qp_init;
		if (rdma_create_qp(event->id, l->ep_pd, &attr) != 0) {
			err = errno;
			rdma_ack_cm_event(event);
			return rc_fail(err);
		}
	}
	*id = event->id;
	(*id)->event = event;
	return 0;
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	if (id == NULL || res == NULL)
		return rc_fail(EINVAL);
	struct rdma_cm_id *cm;
	if (rdma_create_id(NULL, &cm, NULL, (enum rdma_port_space)res->ai_port_space) != 0)
		return -1;
	struct rc_id *r = (struct rc_id *)cm;
	int err = 0;
	if (qp_init_attr != NULL && res->ai_qp_type != 0) /* the QP is of the address's type (librdmacm's rdma_create_ep) */
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (res->ai_flags & RAI_PASSIVE) {
		if (res->ai_src_addr == NULL || rdma_bind_addr(cm, res->ai_src_addr) != 0) {
			err = res->ai_src_addr == NULL ? EINVAL : errno;
			goto fail;
		}
		if (qp_init_attr != NULL) { /* kept for the QP of each request (rdma_get_request) */
			if ((r->ep_qp_init = malloc(sizeof(*qp_init_attr))) == NULL) {
				err = ENOMEM;
				goto fail;
			}
			*r->ep_qp_init = *qp_init_attr;
			r->ep_pd = pd;
		}
	} else {
		if (rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) != 0 || rdma_resolve_route(cm, 2000) != 0) {
			err = errno;
			goto fail;
		}
		if (qp_init_attr != NULL && rdma_create_qp(cm, pd, qp_init_attr) != 0) {
			err = errno;
			goto fail;
		}
	}
	*id = cm;
	return 0;
fail:
	rdma_destroy_id(cm);
	return rc_fail(err);
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	RC_ID_OR(id, );
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}
