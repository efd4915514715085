/*
 * jroce's librdmacm: rdma-core's rdma_cm API over the connection manager of the jroce device that jroce's
 * libibverbs runs in the same process (io.jroce.verbs.NativeCm, in the same VM).
 *
 * Every object handed to the program is librdmacm's public struct embedded in one of ours. An event channel's
 * fd is an eventfd the program polls: counted up by one for each event queued, down by one for each taken.
 */
#ifndef RC_H
#define RC_H

#include <errno.h>
#include <jni.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>

/* The values NativeCm.initQpAttr gives: one per IBV_QP_* bit (0 ... 20), the traffic class and the hop limit. */
#define RC_QP_ATTR_BITS 21
#define RC_QP_ATTR_VALUES (RC_QP_ATTR_BITS + 2)

/* The values NativeCm.getEvent gives for an event. */
#define RC_EVENT_VALUES 12

/* The private data area of the largest CM message librdmacm delivers (REP: 196 bytes). */
#define RC_PRIVATE_MAX 196

struct rc_channel {
	struct rdma_event_channel ch;  /* ch.fd: an eventfd in semaphore mode */
	int handle;                    /* NativeCm's */
	/* held while an event is taken from Java and, for a connection request, its new id made and named: another
	 * thread taking the next event of that id from this channel must find it named */
	pthread_mutex_t take;
	/* rc_channel.c's readers_lock guards these: threads inside rdma_get_cm_event; destroyed while they were
	 * (orphaned); the CM's side closed (so the last of those threads frees the struct and its fd) */
	int readers, orphaned, closed;
};

struct rc_id {
	struct rdma_cm_id id;
	int handle;                    /* NativeCm's */
	/* Events handed out and acknowledged: rdma_destroy_id waits until every event of the id is acknowledged,
	 * as librdmacm's does, so an event never outlives its id. */
	pthread_mutex_t lock;
	pthread_cond_t acked;
	unsigned int reported, completed;
	/* A synchronous id (rdma_create_id without a channel, rdma_create_ep): it has a channel of its own, and
	 * resolve, connect and accept wait for the event that ends them (librdmacm's ucma_complete). */
	int sync;
	int own_channel;               /* made with the id (a request's id shares its synchronous listener's) */
	struct ibv_pd *ep_pd;          /* rdma_create_ep's PD and QP attributes, for the QPs of its requests */
	struct ibv_qp_init_attr *ep_qp_init;
	struct ibv_pd *own_pd;         /* rdma_create_qp without a PD: the id's own, freed with it */
	int own_cqs;                   /* rdma_create_qp without CQs: made for the id, destroyed with its QP */
	struct ibv_sa_path_rec path;   /* route.path_rec once the route is resolved */
	int tos;                       /* RDMA_OPTION_ID_TOS, -1 when not set: the path's traffic class */
};

struct rc_event {
	struct rdma_cm_event ev;
	uint8_t private_data[RC_PRIVATE_MAX];
};

struct rc_java {
	jclass cls;
	jmethodID create_channel, destroy_channel, create_id, destroy_id, bind, listen, resolve_addr, resolve_route,
		use_qp, connect, accept, reject, disconnect, address, get_event, adopt_id, own_qp, init_qp_attr,
		establish, comm_established, set_option, at_exit;
};
extern struct rc_java rc_java;

/* rc_java.c: the calling thread's JNIEnv with NativeCm's methods looked up, or NULL with errno set */
JNIEnv *rc_env(void);
/* after a call into Java: 0 or its errno (as libibverbs maps exceptions) */
int rc_exception(JNIEnv *env, const char *what);
/* returns -1 with errno = err (librdmacm's convention), or 0 when err is 0 */
int rc_fail(int err);

/* rc_addr.c: the device's verbs context for every id; an id's route as the agent knows it now */
struct ibv_context *rc_verbs(void);
void rc_refresh_addr(JNIEnv *env, struct rc_id *id);

/* rc_live.c: the ids and channels that exist now (the set an entry point checks before it reads through a
 * program's pointer) */
#define RC_LIVE_ID 0
#define RC_LIVE_CHANNEL 1
int rc_live_add(int kind, const void *p);  /* 0 or ENOMEM */
int rc_live_remove(int kind, const void *p); /* whether it was there */
int rc_live_has(int kind, const void *p);
/* 0 for an id that exists on a channel that exists; EINVAL for NULL, ENOENT for an id destroyed (or never made),
 * EBADF for an id whose channel is destroyed */
int rc_id_check(struct rdma_cm_id *id);
/* the entry points' first line: return -1 (or `fail`) with the errno of rc_id_check unless the id is usable */
#define RC_ID_OR(id, fail)                        \
	do {                                      \
		int e_ = rc_id_check(id);         \
		if (e_ != 0) {                    \
			errno = e_;               \
			return fail;              \
		}                                 \
	} while (0)

/* rc_id.c */
/* a new id, in the live set; NULL when memory is short */
struct rc_id *rc_new_id(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps, int handle);
/* out of the live set and freed */
void rc_free_id(struct rc_id *id);
/* a synchronous id's wait for the event that ends its call: 0, or -1 with errno from the event's status */
int rc_complete(struct rdma_cm_id *id, enum rdma_cm_event_type expected);
/* rc_channel.c: counts an event handed out on its id */
void rc_reported(struct rdma_cm_id *id);

/* jv_log.c of libibverbs, built into this library too */
void jv_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void jv_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int jv_unsupported(const char *verb, int *said, int err);
#define RC_UNSUPPORTED(verb) ({ static int said_; rc_fail(jv_unsupported(verb, &said_, ENOSYS)); })

#define RC_ENV_OR(fail)                  \
	JNIEnv *env = rc_env();          \
	if (env == NULL)                 \
		return fail;

#endif
