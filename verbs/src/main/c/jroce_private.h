/*
 * What jroce's libibverbs lends jroce's librdmacm (version node JROCE_PRIVATE_1, in neither of rdma-core's
 * libraries): the one embedded VM, so the connection manager runs in the same VM as the verbs and an id's QP is
 * a QP of the program's libibverbs.
 */
#ifndef JROCE_PRIVATE_H
#define JROCE_PRIVATE_H

#include <jni.h>

/* The calling thread's JNIEnv, starting the VM and the device on first use; NULL with *err set when they cannot run. */
JNIEnv *jroce_verbs_env(int *err);
/* After a call into Java: 0, or the errno for the exception it threw (cleared). */
int jroce_verbs_exception(JNIEnv *env, const char *what);

#endif
