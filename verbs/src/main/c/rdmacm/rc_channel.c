/*
 * Event channels and events. A channel's fd is an eventfd in semaphore mode: NativeCm counts it up by one for
 * each event it makes ready (on the agent's thread), rdma_get_cm_event reads one count and takes one event, so
 * the fd is readable exactly while events wait, and blocks or answers EAGAIN as the program set it, as
 * rdma-core's channel does. Like the kernel's, a thread still blocked on it when another destroys the channel
 * stays blocked (an eventfd has no write end whose closing would wake it), and one that was woken by an event
 * just before gets no event and no error but goes back to waiting: the kernel drops the events of a destroyed
 * channel's ids with them, and keeps a file open while a system call still reads it. So the struct and the fd
 * of a channel destroyed under a reader stay until the last reader leaves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rc.h"

/* Guards every channel's readers, orphaned and closed. Never held while calling Java or blocking. */
static pthread_mutex_t readers_lock = PTHREAD_MUTEX_INITIALIZER;

/* The fd and the struct go. */
static void channel_release(struct rc_channel *c)
{
	close(c->ch.fd);
	pthread_mutex_destroy(&c->take);
	free(c);
}

/* The CM's side of a channel closes: no event is made ready on it any more. */
static void channel_close_java(JNIEnv *env, struct rc_channel *c)
{
	if (env != NULL) {
		(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.destroy_channel, (jint)c->handle);
		rc_exception(env, "rdma_destroy_event_channel");
	}
}

/* A channel out of the live set (or never in it) that no thread reads: the CM's side closed, the fd and the struct freed. */
static void channel_free(JNIEnv *env, struct rc_channel *c)
{
	channel_close_java(env, c);
	channel_release(c);
}

/* A thread enters rdma_get_cm_event: counted on a live channel (then 1), else 0 (destroyed). */
static int reader_enter(struct rdma_event_channel *channel)
{
	pthread_mutex_lock(&readers_lock);
	int live = rc_live_has(RC_LIVE_CHANNEL, channel);
	if (live)
		((struct rc_channel *)channel)->readers++;
	pthread_mutex_unlock(&readers_lock);
	return live;
}

/* Whether the channel was destroyed while this thread read it (the caller holds c->take). */
static int reader_orphaned(struct rc_channel *c)
{
	pthread_mutex_lock(&readers_lock);
	int orphaned = c->orphaned;
	pthread_mutex_unlock(&readers_lock);
	return orphaned;
}

/* A thread leaves rdma_get_cm_event; the last to leave a destroyed channel frees it. */
static void reader_leave(struct rc_channel *c)
{
	pthread_mutex_lock(&readers_lock);
	int last = --c->readers == 0 && c->closed;
	pthread_mutex_unlock(&readers_lock);
	if (last)
		channel_release(c);
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	RC_ENV_OR(NULL);
	struct rc_channel *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if ((c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE)) < 0) {
		int err = errno;
		free(c);
		errno = err;
		return NULL;
	}
	jint h = (*env)->CallStaticIntMethod(env, rc_java.cls, rc_java.create_channel, (jlong)(uintptr_t)c);
	int err = rc_exception(env, "rdma_create_event_channel");
	if (err != 0) {
		close(c->ch.fd);
		free(c);
		errno = err == EINVAL ? ENODEV : err; /* the device's connection manager cannot run */
		return NULL;
	}
	c->handle = h;
	pthread_mutex_init(&c->take, NULL);
	if (rc_live_add(RC_LIVE_CHANNEL, c) != 0) {
		channel_free(env, c);
		errno = ENOMEM;
		return NULL;
	}
	jv_debug("event channel %d, fd %d", h, c->ch.fd);
	return &c->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	/* a channel destroyed already (or never made) is left alone: librdmacm's close of its fd fails with EBADF */
	struct rc_channel *c = (struct rc_channel *)channel;
	pthread_mutex_lock(&readers_lock);
	if (!rc_live_remove(RC_LIVE_CHANNEL, channel)) {
		pthread_mutex_unlock(&readers_lock);
		errno = EBADF;
		return;
	}
	int readers = c->readers;
	c->orphaned = readers > 0;
	pthread_mutex_unlock(&readers_lock);
	if (readers == 0) {
		channel_free(rc_env(), c);
		return;
	}
	/* a thread reads it: the CM's side closes once no event is being taken, the fd and struct stay for that thread */
	pthread_mutex_lock(&c->take);
	channel_close_java(rc_env(), c);
	pthread_mutex_unlock(&c->take);
	pthread_mutex_lock(&readers_lock);
	c->closed = 1;
	int last = c->readers == 0;
	pthread_mutex_unlock(&readers_lock);
	if (last)
		channel_release(c);
}

/* The C struct of an event's id: known, or (CONNECT_REQUEST) a new one named back to Java. */
static struct rdma_cm_id *event_id(JNIEnv *env, struct rc_channel *c, jlong *v)
{
	if (v[3] != 0)
		return (struct rdma_cm_id *)(uintptr_t)v[3];
	struct rdma_cm_id *listen = (struct rdma_cm_id *)(uintptr_t)v[4];
	/* a request's id reports to its listener's channel with its listener's context (cma.c ucma_get_event) */
	struct rc_id *id = rc_new_id(&c->ch, listen->context, listen->ps, (int)v[2]);
	if (id == NULL)
		return NULL;
	id->sync = ((struct rc_id *)listen)->sync; /* it shares its listener's channel, which it does not own */
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.adopt_id, (jint)v[2], (jlong)(uintptr_t)id);
	rc_exception(env, "adopting a request's id");
	return &id->id;
}

static int take_event(JNIEnv *env, struct rc_channel *c, struct rdma_cm_event **event);

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	if (channel == NULL || event == NULL)
		return rc_fail(EINVAL);
	RC_ENV_OR(-1);
	if (!reader_enter(channel))
		return rc_fail(EBADF); /* destroyed: librdmacm reads its closed fd */
	struct rc_channel *c = (struct rc_channel *)channel;
	int ret = take_event(env, c, event);
	int err = errno;
	reader_leave(c);
	errno = err;
	return ret;
}

/* One event of a live (or, under this thread, destroyed) channel; rdma_get_cm_event's answer. */
static int take_event(JNIEnv *env, struct rc_channel *c, struct rdma_cm_event **event)
{
	for (;;) {
		uint64_t one;
		ssize_t n = read(c->ch.fd, &one, sizeof(one)); /* blocks unless the program made the fd non-blocking */
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(one))
			return -1;

		struct rc_event *e = calloc(1, sizeof(*e));
		jlongArray out = (*env)->NewLongArray(env, RC_EVENT_VALUES);
		jbyteArray pd = (*env)->NewByteArray(env, RC_PRIVATE_MAX);
		if (e == NULL || out == NULL || pd == NULL) {
			(*env)->ExceptionClear(env);
			if (out != NULL)
				(*env)->DeleteLocalRef(env, out);
			if (pd != NULL)
				(*env)->DeleteLocalRef(env, pd);
			free(e);
			/* the event stays queued: its count goes back, so the fd still says so */
			if (write(c->ch.fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
				jv_warn("lost a CM event's wake-up: %s", strerror(errno));
			return rc_fail(ENOMEM);
		}
		pthread_mutex_lock(&c->take);
		if (reader_orphaned(c)) {
			/* destroyed while this thread read it: as in the kernel, no event and no error; wait on */
			pthread_mutex_unlock(&c->take);
			(*env)->DeleteLocalRef(env, out);
			(*env)->DeleteLocalRef(env, pd);
			free(e);
			continue;
		}
		jint len = (*env)->CallStaticIntMethod(env, rc_java.cls, rc_java.get_event, (jint)c->handle, out, pd);
		int err = rc_exception(env, "rdma_get_cm_event");
		jlong v[RC_EVENT_VALUES];
		if (err == 0 && len >= 0) {
			(*env)->GetLongArrayRegion(env, out, 0, RC_EVENT_VALUES, v);
			(*env)->GetByteArrayRegion(env, pd, 0, len, (jbyte *)e->private_data);
		}
		(*env)->DeleteLocalRef(env, out);
		(*env)->DeleteLocalRef(env, pd);
		struct rdma_cm_id *id = err == 0 && len >= 0 ? event_id(env, c, v) : NULL;
		if (id != NULL) /* counted before another thread can destroy the id: it then waits for this event's ack */
			rc_reported(id);
		pthread_mutex_unlock(&c->take);
		if (err != 0) {
			free(e);
			return rc_fail(err);
		}
		if (len < 0) { /* the event of an id destroyed meanwhile: its count is taken, wait for the next */
			free(e);
			continue;
		}
		if (id == NULL) {
			free(e);
			return rc_fail(ENOMEM);
		}
		e->ev.id = id;
		e->ev.listen_id = v[3] == 0 ? (struct rdma_cm_id *)(uintptr_t)v[4] : NULL;
		e->ev.event = (enum rdma_cm_event_type)v[0];
		e->ev.status = (int)v[1];
		rc_refresh_addr(env, (struct rc_id *)id);
		if (id->ps == RDMA_PS_UDP) {
			/* the peer's address handle attributes (a RoCE v2 GRH to its GID), QPN and Q_Key */
			struct rdma_ud_param *ud = &e->ev.param.ud;
			ud->private_data = len > 0 ? e->private_data : NULL;
			ud->private_data_len = (uint8_t)len;
			ud->ah_attr.is_global = 1;
			ud->ah_attr.grh.dgid = id->route.addr.addr.ibaddr.dgid;
			ud->ah_attr.grh.sgid_index = 1;
			ud->ah_attr.grh.hop_limit = 64;
			ud->ah_attr.port_num = 1;
			ud->qp_num = (uint32_t)v[10];
			ud->qkey = (uint32_t)v[11];
		} else {
			struct rdma_conn_param *conn = &e->ev.param.conn;
			conn->private_data = len > 0 ? e->private_data : NULL;
			conn->private_data_len = (uint8_t)len;
			conn->responder_resources = (uint8_t)v[5];
			conn->initiator_depth = (uint8_t)v[6];
			conn->flow_control = (uint8_t)v[7];
			conn->retry_count = (uint8_t)v[8];
			conn->rnr_retry_count = (uint8_t)v[9];
		}
		*event = &e->ev;
		jv_debug("cm event %s on id %p, status %d", rdma_event_str(e->ev.event), (void *)id, e->ev.status);
		return 0;
	}
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (event == NULL)
		return rc_fail(EINVAL);
	/* the id lives until this: rdma_destroy_id waits for its events' acknowledgements */
	struct rc_id *r = (struct rc_id *)event->id;
	pthread_mutex_lock(&r->lock);
	r->completed++;
	pthread_cond_broadcast(&r->acked);
	pthread_mutex_unlock(&r->lock);
	free(event);
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
	case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
	case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
	case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
	case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
	case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
	case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
	case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
	case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
	case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
	case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
	case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
	case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
	case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
	case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
	case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
	}
	return "UNKNOWN EVENT";
}
