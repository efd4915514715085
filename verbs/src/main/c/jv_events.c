/*
 * Completion channels: a channel is a pipe whose read end is the program's fd (it may poll, epoll or make
 * it non-blocking, as with rdma-core's). An armed CQ of the channel, when its notification fires on the
 * endpoint's event loop, calls back NativeVerbs.cqEvent with the CQ's address, which goes down the pipe;
 * ibv_get_cq_event reads it back. A pointer is 8 bytes, less than PIPE_BUF, so writes never interleave.
 *
 * Asynchronous events (a QP gone to the error state, a CQ overrun): the endpoint's listener calls back
 * NativeVerbs.asyncEvent with the event and the C object it concerns; every open context queues it and
 * counts its async_fd (an eventfd in semaphore mode) up by one; ibv_get_async_event reads one count and
 * takes one event.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct jv_context *open_contexts;

void jv_async_open(struct jv_context *c)
{
	pthread_mutex_init(&c->async.lock, NULL);
	pthread_mutex_lock(&open_lock);
	c->next_open = open_contexts;
	open_contexts = c;
	pthread_mutex_unlock(&open_lock);
}

void jv_async_close(struct jv_context *c)
{
	pthread_mutex_lock(&open_lock);
	for (struct jv_context **p = &open_contexts; *p != NULL; p = &(*p)->next_open) {
		if (*p == c) {
			*p = c->next_open;
			break;
		}
	}
	pthread_mutex_unlock(&open_lock);
	pthread_mutex_destroy(&c->async.lock);
}

/* NativeVerbs.asyncEvent(int type, long object): on the endpoint's event loop */
static void JNICALL async_event(JNIEnv *env, jclass cls, jint type, jlong cookie)
{
	(void)env;
	(void)cls;
	struct ibv_async_event e;
	memset(&e, 0, sizeof(e));
	e.event_type = (enum ibv_event_type)type;
	if (type == IBV_EVENT_CQ_ERR)
		e.element.cq = (struct ibv_cq *)(uintptr_t)cookie;
	else
		e.element.qp = (struct ibv_qp *)(uintptr_t)cookie;
	pthread_mutex_lock(&open_lock);
	for (struct jv_context *c = open_contexts; c != NULL; c = c->next_open) {
		struct jv_async_ring *r = &c->async;
		pthread_mutex_lock(&r->lock);
		int queued = r->count < JV_ASYNC_RING;
		if (queued)
			r->events[(r->head + r->count++) % JV_ASYNC_RING] = e;
		else if (r->lost++ == 0)
			jv_warn("asynchronous events are not being read (ibv_get_async_event): newer ones are lost");
		pthread_mutex_unlock(&r->lock);
		if (queued) {
			uint64_t one = 1;
			if (write(c->vctx.context.async_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
				jv_warn("cannot signal an asynchronous event: %s", strerror(errno));
		}
	}
	pthread_mutex_unlock(&open_lock);
	jv_debug("asynchronous event %s", ibv_event_type_str(e.event_type));
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	uint64_t one;
	for (;;) {
		ssize_t n = read(context->async_fd, &one, sizeof(one)); /* blocks unless the program made it non-blocking */
		if (n == (ssize_t)sizeof(one))
			break;
		if (n < 0 && errno == EINTR)
			continue;
		return -1;
	}
	struct jv_async_ring *r = &jv_ctx(context)->async;
	pthread_mutex_lock(&r->lock);
	int have = r->count > 0;
	if (have) {
		*event = r->events[r->head];
		r->head = (r->head + 1) % JV_ASYNC_RING;
		r->count--;
	}
	pthread_mutex_unlock(&r->lock);
	if (!have) {
		errno = EAGAIN;
		return -1;
	}
	return 0;
}

/* Counts the acknowledgement on the object, as rdma-core does (events_completed), for programs that look. */
void ibv_ack_async_event(struct ibv_async_event *event)
{
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct ibv_cq *cq = event->element.cq;
		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_broadcast(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
		break;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ibv_qp *qp = event->element.qp;
		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_broadcast(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
		break;
	}
	default:
		break;
	}
}

int jv_register_natives(JNIEnv *env, jclass cls)
{
	JNINativeMethod m[] = {
		{ "cqEvent", "(J)V", (void *)cq_event },
		{ "asyncEvent", "(IJ)V", (void *)async_event },
	};
	if ((*env)->RegisterNatives(env, cls, m, 2) != 0) {
		(*env)->ExceptionClear(env);
		jv_warn("cannot bind NativeVerbs' native methods: the class path holds another jroce version");
		return ENOENT;
	}
	return 0;
}
