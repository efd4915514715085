/* The bridge to the Java facade io.jroce.verbs.NativeVerbs (verbs/src/main/java). */
#ifndef JV_JAVA_H
#define JV_JAVA_H

#include <jni.h>
#include <stddef.h>

struct jv_java {
	JavaVM *vm;
	jclass cls;
	jmethodID open, release, alloc_pd, reg_mr, create_cq, create_qp, modify_qp,
		post_send, post_recv, poll_cq, arm_cq, watch_cq, create_ah, last_refusal, query_qp, at_exit;
};
extern struct jv_java jv_java;

/* Starts the VM and opens the device, once; 0, or the errno every verb needing the endpoint then returns. */
int jv_java_start(void);
/* The calling thread's JNIEnv (attached as a daemon on first use, detached at its exit), or NULL when the VM
 * cannot run (it failed to start, or this is a child after fork(): then one line on stderr says so). */
JNIEnv *jv_env(void);
/* Why jv_env() gave NULL, as an errno: the start's error, else EIO. */
int jv_env_error(void);
/* After a call into Java: 0, or the errno for the exception it threw (EOPNOTSUPP for an unsupported
 * feature, said once on stderr; EINVAL otherwise, its message under JROCE_VERBS_LOG=debug). */
int jv_exception(JNIEnv *env, const char *what);
/* At least `need` bytes of the calling thread's scratch memory, and the direct ByteBuffer over it. */
void *jv_scratch(JNIEnv *env, size_t need, jobject *buf);
/* jv_events.c: the native methods the facade calls back (completion events). */
int jv_register_natives(JNIEnv *env, jclass cls);

#endif
