/*
 * The bridge to io.jroce.verbs.NativeCm, in the VM jroce's libibverbs started (jroce_verbs_env): looked up once,
 * by the first call that needs the connection manager.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../jroce_private.h"
#include "rc.h"

struct rc_java rc_java;

static pthread_mutex_t lookup_lock = PTHREAD_MUTEX_INITIALIZER;
static int looked_up; /* 0 not yet, 1 done, -errno failed */

int rc_fail(int err)
{
	if (err == 0)
		return 0;
	errno = err;
	return -1;
}

/* NativeCm.channelEvent(long channel): on the agent's thread, for each event queued on the channel */
static void JNICALL channel_event(JNIEnv *env, jclass cls, jlong cookie)
{
	(void)env;
	(void)cls;
	struct rc_channel *c = (struct rc_channel *)(uintptr_t)cookie;
	uint64_t one = 1;
	for (;;) {
		ssize_t n = write(c->ch.fd, &one, sizeof(one));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(one))
			jv_warn("lost a CM event's wake-up: %s", strerror(errno));
		return;
	}
}

/*
 * At the program's exit: the ids it left open are ended as the kernel ends them when a process exits with its
 * rdma_cm file open (ucma_close, rdma_destroy_id, cm.c cm_destroy_id): a connection gets its DREQ, a request its
 * REJ, so the peer hears of it at once instead of waiting out its DREQ's retries. perftest's ib_atomic_lat server
 * returns from main with its connections up; its client waits in rdma_get_cm_event for their DISCONNECTED.
 */
static void at_exit(void)
{
	if (__atomic_load_n(&looked_up, __ATOMIC_ACQUIRE) != 1 || rc_java.at_exit == NULL)
		return;
	int err = 0;
	JNIEnv *env = jroce_verbs_env(&err);
	if (env == NULL)
		return;
	(*env)->CallStaticVoidMethod(env, rc_java.cls, rc_java.at_exit);
	rc_exception(env, "ending the connections at exit");
}

static int look_up(JNIEnv *env)
{
	jclass c = (*env)->FindClass(env, "io/jroce/verbs/NativeCm");
	if (c == NULL) {
		(*env)->ExceptionClear(env);
		jv_warn("class io.jroce.verbs.NativeCm not found: the class path holds another jroce version");
		return ENOENT;
	}
	rc_java.cls = (*env)->NewGlobalRef(env, c);
	struct { jmethodID *m; const char *name, *sig; } all[] = {
		{ &rc_java.create_channel, "createChannel", "(J)I" },
		{ &rc_java.destroy_channel, "destroyChannel", "(I)V" },
		{ &rc_java.create_id, "createId", "(IJI)I" },
		{ &rc_java.destroy_id, "destroyId", "(I)V" },
		{ &rc_java.bind, "bind", "(II)I" },
		{ &rc_java.listen, "listen", "(II)I" },
		{ &rc_java.resolve_addr, "resolveAddr", "(I[BII)V" },
		{ &rc_java.resolve_route, "resolveRoute", "(II)V" },
		{ &rc_java.use_qp, "useQp", "(II)V" },
		{ &rc_java.connect, "connect", "(I[I[B)V" },
		{ &rc_java.accept, "accept", "(I[I[B)V" },
		{ &rc_java.reject, "reject", "(I[B)V" },
		{ &rc_java.disconnect, "disconnect", "(I)V" },
		{ &rc_java.address, "address", "(I[I[B[B)I" },
		{ &rc_java.get_event, "getEvent", "(I[J[B)I" },
		{ &rc_java.adopt_id, "adoptId", "(IJ)V" },
		{ &rc_java.own_qp, "ownQp", "(II)V" },
		{ &rc_java.init_qp_attr, "initQpAttr", "(II[I[B)I" },
		{ &rc_java.establish, "establish", "(I)V" },
		{ &rc_java.comm_established, "commEstablished", "(I)I" },
		{ &rc_java.set_option, "setOption", "(III)V" },
		{ &rc_java.at_exit, "atExit", "()V" },
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		*all[i].m = (*env)->GetStaticMethodID(env, rc_java.cls, all[i].name, all[i].sig);
		if (*all[i].m == NULL) {
			(*env)->ExceptionClear(env);
			jv_warn("io.jroce.verbs.NativeCm has no method %s%s: the class path holds another jroce version",
				all[i].name, all[i].sig);
			return ENOENT;
		}
	}
	JNINativeMethod natives[] = { { "channelEvent", "(J)V", (void *)channel_event } };
	if ((*env)->RegisterNatives(env, rc_java.cls, natives, 1) != 0) {
		(*env)->ExceptionClear(env);
		jv_warn("cannot bind NativeCm's native method: the class path holds another jroce version");
		return ENOENT;
	}
	return 0;
}

JNIEnv *rc_env(void)
{
	int err = 0;
	JNIEnv *env = jroce_verbs_env(&err);
	if (env == NULL) {
		errno = err != 0 ? err : EIO;
		return NULL;
	}
	if (__atomic_load_n(&looked_up, __ATOMIC_ACQUIRE) == 1)
		return env;
	pthread_mutex_lock(&lookup_lock);
	if (looked_up == 0) {
		int e = look_up(env);
		__atomic_store_n(&looked_up, e == 0 ? 1 : -e, __ATOMIC_RELEASE);
		if (e == 0 && atexit(at_exit) != 0)
			jv_debug("atexit: no room; connections left open at exit are not ended");
	}
	int state = looked_up;
	pthread_mutex_unlock(&lookup_lock);
	if (state != 1) {
		errno = -state;
		return NULL;
	}
	return env;
}

int rc_exception(JNIEnv *env, const char *what)
{
	return jroce_verbs_exception(env, what);
}
