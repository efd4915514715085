/*
 * Completion channels: a channel is a pipe whose read end is the program's fd (it may poll, epoll or make
 * it non-blocking, as with rdma-core's). An armed CQ of the channel, when its notification fires on the
 * endpoint's event loop, calls back NativeVerbs.cqEvent with the CQ's address, which goes down the pipe;
 * ibv_get_cq_event reads it back. A pointer is 8 bytes, less than PIPE_BUF, so writes never interleave.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "jv.h"
#include "jv_java.h"

struct jv_channel {
	struct ibv_comp_channel ch;    /* ch.fd: the read end */
	int write_fd;
};

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct jv_channel *c = calloc(1, sizeof(*c));
	int fds[2];

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC) != 0) {
		int err = errno;
		free(c);
		errno = err;
		return NULL;
	}
	c->ch.context = context;
	c->ch.fd = fds[0];
	c->ch.refcnt = 0;
	c->write_fd = fds[1];
	return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct jv_channel *c = (struct jv_channel *)channel;
	if (__atomic_load_n(&channel->refcnt, __ATOMIC_RELAXED) != 0)
		return EBUSY; /* CQs still use it, as rdma-core answers */
	close(c->ch.fd);
	close(c->write_fd);
	free(c);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct ibv_cq *got;
	size_t have = 0;

	while (have < sizeof(got)) {
		ssize_t n = read(channel->fd, (char *)&got + have, sizeof(got) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && have > 0 && errno == EAGAIN)
			continue; /* the rest of a pointer is on its way: one write put it there */
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	*cq = got;
	*cq_context = got->cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* NativeVerbs.cqEvent(long cq): on the endpoint's event loop, when an armed CQ's notification fires */
static void JNICALL cq_event(JNIEnv *env, jclass cls, jlong cookie)
{
	(void)env;
	(void)cls;
	struct ibv_cq *cq = (struct ibv_cq *)(uintptr_t)cookie;
	struct jv_channel *c = (struct jv_channel *)cq->channel;
	if (c == NULL)
		return;
	for (;;) {
		ssize_t n = write(c->write_fd, &cq, sizeof(cq));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(cq))
			jv_warn("lost a completion event: the channel's pipe is full (events not read)");
		return;
	}
}

int jv_register_natives(JNIEnv *env, jclass cls)
{
	JNINativeMethod m[] = { { "cqEvent", "(J)V", (void *)cq_event } };
	if ((*env)->RegisterNatives(env, cls, m, 1) != 0) {
		(*env)->ExceptionClear(env);
		jv_warn("cannot bind NativeVerbs.cqEvent: the class path holds another jroce version");
		return ENOENT;
	}
	return 0;
}
