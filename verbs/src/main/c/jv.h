/*
 * jroce's libibverbs: the verbs of an embedded jroce endpoint behind rdma-core's ABI.
 *
 * Internal declarations shared by the library's source files. Every object handed to the program is one
 * of rdma-core's public structs (struct ibv_context, ibv_pd, ...) embedded in one of ours, so the
 * program's view (and the inline verbs of verbs.h, which read context->ops) is exactly rdma-core's.
 */
#ifndef JV_H
#define JV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>

#define JV_DEVICE_NAME "jroce0"
/* The device's GID table, in rdma_rxe's order for an interface with one address: the link-local GID
 * the kernel derives from the interface's MAC, then the address itself (IPv4-mapped for IPv4), all
 * RoCE v2. So `ibv_rc_pingpong -g 1` and perftest `-x 1` pick the device's address, as with rxe. */
#define JV_GID_COUNT 2
#define JV_GID_ADDRESS 1

/* enum ibv_gid_type_sysfs of rdma-core's private ABI (ibv_query_gid_type): what sysfs gid_attrs/types says */
#define JV_GID_TYPE_SYSFS_ROCE_V2 1

/* The one device, described from the environment (JROCE_ADDR) when the device list is first asked for. */
struct jv_device {
	struct ibv_device dev;
	int family;                    /* AF_INET or AF_INET6 */
	char address[INET6_ADDRSTRLEN];
	char ifname[IF_NAMESIZE];      /* the interface holding the address */
	unsigned int ifindex;
	int ifmtu;
	union ibv_gid gids[JV_GID_COUNT];
	__be64 guid;                   /* EUI-64: node GUID and the link-local GID's interface ID */
	enum ibv_mtu active_mtu;
};

/* Asynchronous events waiting for ibv_get_async_event: a bounded ring per context (a program that never
 * reads them loses the newest, counted and said once, rather than growing memory). */
#define JV_ASYNC_RING 64
struct jv_async_ring {
	pthread_mutex_t lock;
	struct ibv_async_event events[JV_ASYNC_RING];
	unsigned int head, count, lost;
};

struct jv_context {
	struct jv_device *device;
	struct jv_context *next_open;  /* the open contexts, which each get every asynchronous event */
	struct jv_async_ring async;
	struct verbs_context vctx;     /* must be last: it ends with the struct ibv_context the program sees */
};

/* The device's limits (ibv_query_device); creating a CQ or QP past them is EINVAL, as rdma_rxe's
 * rxe_cq_chk_attr and rxe_qp_chk_cap refuse them. */
#define JV_MAX_QP_WR (1 << 16)
#define JV_MAX_SGE 32
#define JV_MAX_CQE ((1 << 22) - 1)

/* jv_device.c */
struct jv_device *jv_device_get(void);
struct jv_context *jv_ctx(struct ibv_context *context);
/* jv_events.c: a context's asynchronous events start and end with it */
void jv_async_open(struct jv_context *c);
void jv_async_close(struct jv_context *c);
/* jv_post.c: the data-path verbs verbs.h inlines through context->ops */
void jv_install_ops(struct ibv_context_ops *ops);

/* jv_log.c: messages on stderr, prefixed "jroce: "; JROCE_VERBS_LOG=debug adds tracing */
void jv_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void jv_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* says once per verb that it is not implemented; returns the errno to give */
int jv_unsupported(const char *verb, int *said, int err);

#define JV_UNSUPPORTED(verb, err) ({ static int said_; jv_unsupported(verb, &said_, err); })

#endif
