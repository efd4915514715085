/*
 * The embedded JVM: started once, by the first verb that needs the endpoint (ibv_alloc_pd), on a thread of
 * its own (as the java launcher does: the primordial thread's stack is not the VM's to size or guard). Every
 * program thread that calls a verb attaches itself as a daemon thread, so the program's exit is not held up.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jv.h"
#include "jv_java.h"
#include "jroce_private.h"

struct jv_java jv_java;

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static int start_error; /* errno of a failed start, 0 once running */
static __thread JNIEnv *thread_env;
/* detaches a program thread from the VM when it exits, so the VM keeps no record of dead threads */
static pthread_key_t detach_key;
/* set in the child of a fork(): the VM's threads were not copied, so the verbs cannot run there */
static int forked_child;

static void detach_thread(void *unused)
{
	(void)unused;
	if (jv_java.vm != NULL && !forked_child)
		(*jv_java.vm)->DetachCurrentThread(jv_java.vm);
}

static void in_child(void)
{
	forked_child = 1;
	thread_env = NULL;
}

/* libjvm.so of $JAVA_HOME, else of the java on PATH (resolving its links: /usr/bin/java -> .../bin/java) */
static int find_libjvm(char *out, size_t len)
{
	const char *home = getenv("JAVA_HOME");
	if (home != NULL && *home != '\0') {
		if (snprintf(out, len, "%s/lib/server/libjvm.so", home) < (int)len && access(out, R_OK) == 0)
			return 0;
		jv_warn("JAVA_HOME=%s has no lib/server/libjvm.so", home);
	}
	const char *path = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof(dirs), "%s", path != NULL ? path : "/usr/bin");
	for (char *save = NULL, *dir = strtok_r(dirs, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		char java[PATH_MAX], real[PATH_MAX];
		if (snprintf(java, sizeof(java), "%s/java", dir) >= (int)sizeof(java) || access(java, X_OK) != 0 || realpath(java, real) == NULL)
			continue;
		char *bin = strrchr(real, '/');       /* .../bin/java */
		if (bin == NULL)
			continue;
		*bin = '\0';
		char *home_end = strrchr(real, '/');  /* .../bin */
		if (home_end == NULL)
			continue;
		*home_end = '\0';
		if (snprintf(out, len, "%s/lib/server/libjvm.so", real) < (int)len && access(out, R_OK) == 0)
			return 0;
	}
	return -1;
}

/* JROCE_CLASSPATH, else JROCE_JAR, else jroce-verbs.jar in the directory above this library's (the build
 * puts the library in verbs/target/native/ and the jar in verbs/target/). */
static const char *class_path(void)
{
	static char beside[PATH_MAX];
	const char *cp = getenv("JROCE_CLASSPATH");
	if (cp == NULL || *cp == '\0')
		cp = getenv("JROCE_JAR");
	if (cp != NULL && *cp != '\0')
		return cp;
	Dl_info self;
	if (dladdr((void *)class_path, &self) == 0 || self.dli_fname == NULL)
		return NULL;
	char lib[PATH_MAX];
	if (realpath(self.dli_fname, lib) == NULL)
		return NULL;
	char *slash = strrchr(lib, '/');
	if (slash == NULL)
		return NULL;
	*slash = '\0';
	if (snprintf(beside, sizeof(beside), "%s/../jroce-verbs.jar", lib) >= (int)sizeof(beside) || access(beside, R_OK) != 0)
		return NULL;
	return beside;
}

/* Splits JROCE_JAVA_OPTS on spaces into extra VM options. */
static int extra_options(JavaVMOption *opts, int max, char *buf, size_t len)
{
	const char *extra = getenv("JROCE_JAVA_OPTS");
	int n = 0;
	if (extra == NULL)
		return 0;
	snprintf(buf, len, "%s", extra);
	for (char *save = NULL, *o = strtok_r(buf, " ", &save); o != NULL && n < max; o = strtok_r(NULL, " ", &save))
		opts[n++].optionString = o;
	return n;
}

static jmethodID method(JNIEnv *env, const char *name, const char *sig)
{
	jmethodID m = (*env)->GetStaticMethodID(env, jv_java.cls, name, sig);
	if (m == NULL) {
		(*env)->ExceptionClear(env);
		jv_warn("io.jroce.verbs.NativeVerbs has no method %s%s: the class path holds another jroce version", name, sig);
	}
	return m;
}

static int look_up_methods(JNIEnv *env)
{
	jclass c = (*env)->FindClass(env, "io/jroce/verbs/NativeVerbs");
	if (c == NULL) {
		(*env)->ExceptionClear(env);
		jv_warn("class io.jroce.verbs.NativeVerbs not found on the class path %s", class_path());
		return ENOENT;
	}
	jv_java.cls = (*env)->NewGlobalRef(env, c);
	struct { jmethodID *m; const char *name, *sig; } all[] = {
		{ &jv_java.open, "open", "(Ljava/lang/String;I)V" },
		{ &jv_java.release, "release", "(I)V" },
		{ &jv_java.alloc_pd, "allocPd", "()I" },
		{ &jv_java.reg_mr, "regMr", "(ILjava/nio/ByteBuffer;I[I)I" },
		{ &jv_java.create_cq, "createCq", "(IJ)I" },
		{ &jv_java.create_qp, "createQp", "(IIII[I[IJ)I" },
		{ &jv_java.modify_qp, "modifyQp", "(II[I[B)V" },
		{ &jv_java.post_send, "postSend", "(ILjava/nio/ByteBuffer;I)I" },
		{ &jv_java.post_recv, "postRecv", "(ILjava/nio/ByteBuffer;I)I" },
		{ &jv_java.poll_cq, "pollCq", "(ILjava/nio/ByteBuffer;I)I" },
		{ &jv_java.arm_cq, "armCq", "(IZ)V" },
		{ &jv_java.watch_cq, "watchCq", "(IJ)V" },
		{ &jv_java.create_ah, "createAh", "(I[B)I" },
		{ &jv_java.last_refusal, "lastRefusal", "()Ljava/lang/String;" },
		{ &jv_java.query_qp, "queryQp", "(I[I)V" },
		{ &jv_java.at_exit, "atExit", "()V" },
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if ((*all[i].m = method(env, all[i].name, all[i].sig)) == NULL)
			return ENOENT;
	return jv_register_natives(env, jv_java.cls);
}

struct start_args {
	struct jv_device *device;
	int err;
};

static void *start_vm(void *p)
{
	struct start_args *a = p;
	char libjvm[PATH_MAX];
	const char *cp = class_path();

	a->err = ENOSYS;
	if (cp == NULL) {
		jv_warn("no jroce-verbs.jar beside the library's directory: set JROCE_JAR to it (or JROCE_CLASSPATH to a class path)");
		return NULL;
	}
	if (find_libjvm(libjvm, sizeof(libjvm)) != 0) {
		jv_warn("no Java found: set JAVA_HOME or put java (17 or later) on PATH");
		return NULL;
	}
	void *lib = dlopen(libjvm, RTLD_NOW | RTLD_GLOBAL);
	if (lib == NULL) {
		jv_warn("cannot load %s: %s", libjvm, dlerror());
		return NULL;
	}
	jint (*create)(JavaVM **, void **, void *) = (jint (*)(JavaVM **, void **, void *))dlsym(lib, "JNI_CreateJavaVM");
	if (create == NULL) {
		jv_warn("%s has no JNI_CreateJavaVM", libjvm);
		return NULL;
	}

	char cp_opt[8192], extra_buf[2048];
	snprintf(cp_opt, sizeof(cp_opt), "-Djava.class.path=%s", cp);
	JavaVMOption opts[40];
	int n = 0;
	opts[n++].optionString = cp_opt;
	/* the program keeps its signals (SIGINT, SIGTERM, SIGQUIT): the VM installs no shutdown or dump handlers */
	opts[n++].optionString = "-Xrs";
	/* the endpoint logs through SLF4J; without a provider on the class path SLF4J would warn on stderr */
	opts[n++].optionString = "-Dslf4j.internal.verbosity=ERROR";
	n += extra_options(opts + n, 40 - n, extra_buf, sizeof(extra_buf));
	JavaVMInitArgs args = { .version = JNI_VERSION_10, .nOptions = n, .options = opts, .ignoreUnrecognized = JNI_FALSE };

	JNIEnv *env;
	if (create(&jv_java.vm, (void **)&env, &args) != JNI_OK) {
		jv_warn("starting the Java VM (%s) failed", libjvm);
		return NULL;
	}
	a->err = look_up_methods(env);
	if (a->err == 0) {
		jstring addr = (*env)->NewStringUTF(env, a->device->address);
		(*env)->CallStaticVoidMethod(env, jv_java.cls, jv_java.open, addr, (jint)a->device->active_mtu);
		a->err = jv_exception(env, "opening the jroce device");
		if (a->err != 0)
			jv_warn("cannot open the jroce device on %s (with JROCE_VERBS_LOG=debug: why)", a->device->address);
	}
	(*jv_java.vm)->DetachCurrentThread(jv_java.vm);
	return NULL;
}

/*
 * At the program's exit: the device sends what it holds and closes (its capture, with -Djroce.pcap, is complete).
 * librdmacm's handler, registered later and so run first, has ended the program's connections by then.
 */
static void at_exit(void)
{
	if (forked_child || start_error != 0 || jv_java.vm == NULL)
		return;
	JNIEnv *env = jv_env();
	if (env == NULL)
		return;
	(*env)->CallStaticVoidMethod(env, jv_java.cls, jv_java.at_exit);
	jv_exception(env, "closing the device at exit");
}

static void start_once_fn(void)
{
	struct start_args a = { .device = jv_device_get(), .err = ENODEV };
	pthread_attr_t attr;
	pthread_t t;

	if (a.device == NULL) {
		start_error = ENODEV;
		return;
	}
	pthread_key_create(&detach_key, detach_thread);
	pthread_atfork(NULL, NULL, in_child);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 8 << 20);
	if (pthread_create(&t, &attr, start_vm, &a) != 0) {
		start_error = EAGAIN;
		return;
	}
	pthread_join(t, NULL);
	pthread_attr_destroy(&attr);
	start_error = a.err;
	jv_debug("Java VM %s", start_error == 0 ? "running the device" : "failed");
	if (start_error == 0 && atexit(at_exit) != 0)
		jv_debug("atexit: no room; the device is not closed at exit");
}

int jv_java_start(void)
{
	pthread_once(&start_once, start_once_fn);
	return start_error;
}

JNIEnv *jv_env(void)
{
	if (thread_env != NULL)
		return thread_env;
	if (forked_child) {
		static int said;
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			jv_warn("the verbs do not run in a child process after fork(): its jroce endpoint stayed in the parent");
		return NULL;
	}
	if (jv_java_start() != 0)
		return NULL;
	JNIEnv *env;
	JavaVMAttachArgs args = { .version = JNI_VERSION_10, .name = NULL, .group = NULL };
	if ((*jv_java.vm)->AttachCurrentThreadAsDaemon(jv_java.vm, (void **)&env, &args) != JNI_OK)
		return NULL;
	thread_env = env;
	pthread_setspecific(detach_key, env); /* any non-NULL value: the destructor runs at the thread's exit */
	return env;
}

int jv_env_error(void)
{
	return !forked_child && start_error != 0 ? start_error : EIO;
}

int jv_exception(JNIEnv *env, const char *what)
{
	jthrowable t = (*env)->ExceptionOccurred(env);
	if (t == NULL)
		return 0;
	(*env)->ExceptionClear(env);
	int err = EINVAL;
	jclass unsupported = (*env)->FindClass(env, "java/lang/UnsupportedOperationException");
	if (unsupported != NULL && (*env)->IsInstanceOf(env, t, unsupported))
		err = EOPNOTSUPP;
	jclass object = (*env)->FindClass(env, "java/lang/Object");
	jmethodID to_string = object != NULL ? (*env)->GetMethodID(env, object, "toString", "()Ljava/lang/String;") : NULL;
	jstring s = to_string != NULL ? (*env)->CallObjectMethod(env, t, to_string) : NULL;
	if (s != NULL) {
		const char *c = (*env)->GetStringUTFChars(env, s, NULL);
		if (err == EOPNOTSUPP)
			jv_warn("%s: %s", what, c);
		else
			jv_debug("%s: %s", what, c);
		(*env)->ReleaseStringUTFChars(env, s, c);
	}
	(*env)->ExceptionClear(env);
	(*env)->DeleteLocalRef(env, t);
	return err;
}

/* The calling thread's buffer for work requests and completions, seen from Java as a direct buffer. */
static __thread struct { void *mem; size_t cap; jobject buf; } scratch;

void *jv_scratch(JNIEnv *env, size_t need, jobject *buf)
{
	if (need == 0)
		need = 1; /* a poll of 0 entries still gets a buffer */
	if (scratch.cap < need) {
		size_t cap = scratch.cap ? scratch.cap : 64 << 10;
		while (cap < need)
			cap *= 2;
		void *mem = malloc(cap);
		if (mem == NULL)
			return NULL;
		jobject local = (*env)->NewDirectByteBuffer(env, mem, (jlong)cap);
		if (local == NULL) {
			(*env)->ExceptionClear(env);
			free(mem);
			return NULL;
		}
		if (scratch.buf != NULL)
			(*env)->DeleteGlobalRef(env, scratch.buf);
		free(scratch.mem);
		scratch.buf = (*env)->NewGlobalRef(env, local);
		(*env)->DeleteLocalRef(env, local);
		scratch.mem = mem;
		scratch.cap = cap;
	}
	*buf = scratch.buf;
	return scratch.mem;
}

/* ------------------------------------------------------------------ lent to librdmacm (jroce_private.h) */

JNIEnv *jroce_verbs_env(int *err)
{
	JNIEnv *env = jv_env();
	if (env == NULL && err != NULL)
		*err = jv_env_error();
	return env;
}

int jroce_verbs_exception(JNIEnv *env, const char *what)
{
	return jv_exception(env, what);
}
