/*
 * rdma_cm ids: each is a NativeCm CmId of the device's connection manager. An id's `verbs` is a context of the
 * program's libibverbs (jroce's, on the same device), so the PD, CQs and QP the program makes on it are the
 * objects the CM connects. Calls return once the agent has acted; what follows comes as events.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rc.h"

/* ------------------------------------------------------------------ create, destroy */

struct rc_id *rc_new_id(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps, int handle)
{
	struct rc_id *id = calloc(1, sizeof(*id));
	if (id == NULL)
		return NULL;
	id->handle = handle;
	id->id.verbs = rc_verbs();
	id->id.channel = channel;
	id->id.context = context;
	id->id.ps = ps;
	id->id.port_num = 1;
	id->tos = -1;
	id->id.qp_type = ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	pthread_mutex_init(&id->lock, NULL);
	pthread_cond_init(&id->acked, NULL);
	if (rc_live_add(RC_LIVE_ID, id) != 0) {
		rc_free_id(id);
		return NULL;
	}
	return id;
}

void rc_free_id(struct rc_id *id)
{
	rc_live_remove(RC_LIVE_ID, id);
	pthread_cond_destroy(&id->acked);
	pthread_mutex_destroy(&id->lock);
	free(id);
}

void rc_reported(struct rdma_cm_id *id)
{
	struct rc_id *r = (struct rc_id *)id;
	pthread_mutex_lock(&r->lock);
	r->reported++;
	pthread_mutex_unlock(&r->lock);
}

/* The event a synchronous id's call waits for, left in id->event until its next call or its end, as librdmacm's
 * ucma_complete leaves it; its status becomes the call's errno (a REJ: ECONNREFUSED). */
int rc_complete(struct rdma_cm_id *id, enum rdma_cm_event_type expected)
{
	if (id->event != NULL) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	if (rdma_get_cm_event(id->channel, &id->event) != 0)
		return -1;
	int status = id->event->status;
	if (id->event->event == RDMA_CM_EVENT_REJECTED)
		return rc_fail(ECONNREFUSED);
	if (status != 0)
		return rc_fail(status < 0 ? -status : status);
	if (id->event->event != expected) /* CONNECT_ERROR, DISCONNECTED ... */
		return rc_fail(expected == RDMA_CM_EVENT_ESTABLISHED ? ECONNREFUSED : EINVAL);
	return 0;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context, enum rdma_port_space ps)
{
	if (id == NULL)
		return rc_fail(EINVAL);
	if (channel != NULL && !rc_live_has(RC_LIVE_CHANNEL, channel))
		return rc_fail(EBADF); /* a channel destroyed: librdmacm writes the command to its closed fd */
	if (rc_verbs() == NULL)
		return rc_fail(ENODEV);
	RC_ENV_OR(-1);
	int sync = channel == NULL;
	if (sync && (channel = rdma_create_event_channel()) == NULL)
		return -1;
	struct rc_channel *c = (struct rc_channel *)channel;
	struct rc_id *r = rc_new_id(channel, context, ps, -1);
	if (r == NULL) {
		if (sync)
			rdma_destroy_event_channel(channel);
		return rc_fail(ENOMEM);
	}
	r->sync = r->own_channel = sync;
	jint h = (*env)->CallStaticIntMethod(env, rc_java.cls, rc_java.create_id, (jint)c->handle, (jlong)(uintptr_t)r, (jint)ps);
	int err = rc_exception(env, "rdma_create_id");
	if (err != 0) {
		rc_free_id(r);
		if (sync)
			rdma_destroy_event_channel(channel);
		return rc_fail(err);
	}
	r->handle = h;
	*id = &r->id;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	if (id == NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	/* taken out of the live set first: a second rdma_destroy_id, or any call on the id from now on, is ENOENT */
	if (!rc_live_remove(RC_LIVE_ID, id))
		return rc_fail(ENOENT);
	struct rc_id *r = (struct rc_id *)id;
	/* no event of the id is being handed out meanwhile: each either was (and is counted) or will not be. An id
	 * whose channel the program destroyed first is released all the same, and answered as librdmacm answers
	 * (EBADF: its command goes to the channel's closed fd) */
	struct rc_channel *c = rc_live_has(RC_LIVE_CHANNEL, id->channel) ? (struct rc_channel *)id->channel : NULL;
	if (c != NULL)
		pthread_mutex_lock(&c->take);
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.destroy_id, (jint)r->handle);
	int err = rc_exception(env, "rdma_destroy_id");
	if (c != NULL)
		pthread_mutex_unlock(&c->take);
	else if (err == 0)
		err = EBADF;
	if (id->event != NULL) /* a synchronous call's last event (only those are kept in id->event) */
		rdma_ack_cm_event(id->event);
	id->event = NULL;
	pthread_mutex_lock(&r->lock);
	while (r->completed < r->reported) /* events of the id the program has not acknowledged yet */
		pthread_cond_wait(&r->acked, &r->lock);
	pthread_mutex_unlock(&r->lock);
	if (r->own_pd != NULL)
		ibv_dealloc_pd(r->own_pd);
	free(r->ep_qp_init);
	if (r->own_channel && c != NULL)
		rdma_destroy_event_channel(id->channel);
	rc_free_id(r);
	return rc_fail(err);
}

/* ------------------------------------------------------------------ addresses and routes */

/* The address's bytes and port; EAFNOSUPPORT for a family other than IPv4 and IPv6. */
static int sockaddr_bytes(const struct sockaddr *sa, const void **bytes, int *len, int *port)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		*bytes = &in->sin_addr;
		*len = 4;
		*port = ntohs(in->sin_port);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		*bytes = &in6->sin6_addr;
		*len = 16;
		*port = ntohs(in6->sin6_port);
		return 0;
	}
	return EAFNOSUPPORT;
}

static int is_any(const void *bytes, int len)
{
	static const unsigned char zero[16];
	return memcmp(bytes, zero, (size_t)len) == 0;
}

/* Whether a source address names the device (the agent binds the device's address; any address means it). */
static int names_device(JNIEnv *env, struct rc_id *r, const void *bytes, int len)
{
	if (is_any(bytes, len))
		return 1;
	rc_refresh_addr(env, r);
	const struct sockaddr *src = &r->id.route.addr.src_addr;
	const void *own;
	int own_len, port;
	return sockaddr_bytes(src, &own, &own_len, &port) == 0 && own_len == len && memcmp(own, bytes, (size_t)len) == 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	RC_ID_OR(id, -1);
	if (addr == NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	const void *bytes;
	int len, port, err = sockaddr_bytes(addr, &bytes, &len, &port);
	if (err != 0)
		return rc_fail(err);
	if (!names_device(env, r, bytes, len))
		return rc_fail(ENODEV); /* no RDMA device has that address (cma.c cma_acquire_dev_by_src_ip) */
	jint in_use = (*env)->CallStaticIntMethod(env, rc_java.cls, rc_java.bind, (jint)r->handle, (jint)port);
	err = rc_exception(env, "rdma_bind_addr");
	if (err == 0 && in_use != 0)
		err = in_use; /* another id holds the port */
	if (err == 0)
		rc_refresh_addr(env, r);
	return rc_fail(err);
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	RC_ID_OR(id, -1);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	jint in_use = (*env)->CallStaticIntMethod(env, rc_java.cls, rc_java.listen, (jint)r->handle, (jint)(backlog > 0 ? backlog : 1024));
	int err = rc_exception(env, "rdma_listen");
	if (err == 0)
		err = in_use;
	if (err == 0) /* scripts and tests wait for this line before they start a client */
		jv_debug("rdma_listen: listening on port %u", ntohs(rdma_get_src_port(id)));
	return rc_fail(err);
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr, int timeout_ms)
{
	RC_ID_OR(id, -1);
	if (dst_addr == NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	const void *bytes;
	int len, port, err;
	if (src_addr != NULL) {
		if ((err = sockaddr_bytes(src_addr, &bytes, &len, &port)) != 0)
			return rc_fail(err);
		if (!names_device(env, r, bytes, len))
			return rc_fail(ENODEV);
	}
	if ((err = sockaddr_bytes(dst_addr, &bytes, &len, &port)) != 0)
		return rc_fail(err);
	jbyteArray dst = (*env)->NewByteArray(env, len);
	if (dst == NULL) {
		(*env)->ExceptionClear(env);
		return rc_fail(ENOMEM);
	}
	(*env)->SetByteArrayRegion(env, dst, 0, len, (const jbyte *)bytes);
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.resolve_addr, (jint)r->handle, dst, (jint)port, (jint)timeout_ms);
	(*env)->DeleteLocalRef(env, dst);
	err = rc_exception(env, "rdma_resolve_addr");
	if (err != 0)
		return rc_fail(err);
	rc_refresh_addr(env, r);
	return r->sync ? rc_complete(id, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	RC_ID_OR(id, -1);
	RC_ENV_OR(-1);
	struct rc_id *r = (struct rc_id *)id;
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.resolve_route, (jint)r->handle, (jint)timeout_ms);
	int err = rc_exception(env, "rdma_resolve_route");
	if (err == 0) {
		/* one path, the IP route: what RoCE's resolve_route reports (cma.c cma_resolve_iboe_route) */
		r->path.mtu = IBV_MTU_1024;
		struct ibv_port_attr pa;
		if (id->verbs != NULL && ibv_query_port(id->verbs, 1, &pa) == 0)
			r->path.mtu = pa.active_mtu;
		r->path.hop_limit = 64;
		r->path.traffic_class = r->tos >= 0 ? (uint8_t)r->tos : 0; /* RDMA_OPTION_ID_TOS */
		r->path.numb_path = 1;
		id->route.path_rec = &r->path;
		id->route.num_paths = 1;
	}
	if (err == 0 && r->sync)
		return rc_complete(id, RDMA_CM_EVENT_ROUTE_RESOLVED);
	return rc_fail(err);
}
