/*
 * An rdma_cm program compiled against rdma-core's headers and linked against jroce's librdmacm.so.1 (and
 * libibverbs.so.1), run by RdmacmCheckTest with JROCE_ADDR set and the address of a peer that need not exist
 * (address and route resolution send nothing). Prints one "ok ..." line per check and exits 1 at the first
 * failure ("FAIL ..."):
 *  - looked up by version (RDMACM_1.0 ... RDMACM_1.3) a program gets ours;
 *  - an event channel's fd is not readable while no event waits, is readable while one is queued, is not
 *    readable once it is taken, and answers EAGAIN when made non-blocking (that a poll blocked on it wakes
 *    is shown by rping's server, whose CM thread polls it until the client's request comes: RpingToolsTest);
 *  - an id's verbs context is the device of the program's libibverbs (jroce0), its PD and CQ are made there,
 *    and rdma_create_qp gives the id a QP in INIT;
 *  - resolution fills the route (ports, destination address, one path); a source address that is not the
 *    device's is ENODEV, a port another id holds EADDRINUSE; what is not implemented is ENOSYS, the IB port space EOPNOTSUPP.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, int err)
{
	printf("FAIL %s (%d: %s)\n", what, err, strerror(err));
	exit(1);
}

#define CHECK(cond, what, err) do { if (!(cond)) fail(what, err); printf("ok %s\n", what); } while (0)

static int readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* the next event, which must come within 10 s and be of this type on this id */
static void expect(struct rdma_event_channel *ch, struct rdma_cm_id *id, enum rdma_cm_event_type type)
{
	char what[128];
	snprintf(what, sizeof(what), "the fd is readable with %s queued", rdma_event_str(type));
	CHECK(readable(ch->fd, 10000), what, ETIMEDOUT);
	struct rdma_cm_event *e;
	CHECK(rdma_get_cm_event(ch, &e) == 0, "rdma_get_cm_event", errno);
	snprintf(what, sizeof(what), "the event is %s on the id, status 0", rdma_event_str(type));
	CHECK(e->event == type && e->id == id && e->status == 0 && e->id->context == (void *)ch, what, EINVAL);
	CHECK(rdma_ack_cm_event(e) == 0, "rdma_ack_cm_event", errno);
	CHECK(!readable(ch->fd, 0), "the fd is not readable once the event is taken", EINVAL);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		fail("usage: rdmacm_check PEER_IPV4", EINVAL);
	const char *nodes[][2] = { { "rdma_create_id", "RDMACM_1.0" }, { "rdma_join_multicast_ex", "RDMACM_1.1" },
				   { "rdma_init_qp_attr", "RDMACM_1.2" }, { "rdma_set_local_ece", "RDMACM_1.3" } };
	void *lib = dlopen("librdmacm.so.1", RTLD_NOW);
	CHECK(lib != NULL, "dlopen librdmacm.so.1", errno);
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		char what[128];
		snprintf(what, sizeof(what), "dlvsym %s@%s", nodes[i][0], nodes[i][1]);
		CHECK(dlvsym(lib, nodes[i][0], nodes[i][1]) != NULL, what, ENOENT);
	}
	CHECK(dlvsym(lib, "rdma_create_id", "RDMACM_1.0") == (void *)rdma_create_id, "the same rdma_create_id as linked", ENOENT);

	struct rdma_event_channel *ch = rdma_create_event_channel();
	CHECK(ch != NULL && ch->fd >= 0, "rdma_create_event_channel (starts the endpoint)", errno);
	CHECK(!readable(ch->fd, 0), "a new channel's fd is not readable", EINVAL);

	struct rdma_cm_id *id;
	CHECK(rdma_create_id(ch, &id, ch, RDMA_PS_TCP) == 0, "rdma_create_id", errno);
	CHECK(id->verbs != NULL && strcmp(ibv_get_device_name(id->verbs->device), "jroce0") == 0,
	      "the id's verbs context is jroce0 of libibverbs", EINVAL);
	struct rdma_cm_id *udp;
	CHECK(rdma_create_id(ch, &udp, NULL, RDMA_PS_UDP) == 0 && udp->qp_type == IBV_QPT_UD, "an id of the UDP port space is UD", errno);
	CHECK(rdma_destroy_id(udp) == 0, "rdma_destroy_id of the UD id", errno);
	struct rdma_cm_id *ib;
	CHECK(rdma_create_id(ch, &ib, NULL, RDMA_PS_IB) == -1 && errno == EOPNOTSUPP, "the IB port space is EOPNOTSUPP", errno);

	struct sockaddr_in foreign = { .sin_family = AF_INET };
	inet_pton(AF_INET, "192.0.2.1", &foreign.sin_addr); /* TEST-NET-1 (RFC 5737): never this host's */
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&foreign) == -1 && errno == ENODEV, "binding an address of no device is ENODEV", errno);

	struct rdma_cm_id *holder, *second;
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(7175) };
	CHECK(rdma_create_id(ch, &holder, NULL, RDMA_PS_TCP) == 0 && rdma_create_id(ch, &second, NULL, RDMA_PS_TCP) == 0, "two more ids", errno);
	CHECK(rdma_bind_addr(holder, (struct sockaddr *)&any) == 0 && rdma_get_src_port(holder) == htons(7175), "bound to port 7175", errno);
	CHECK(rdma_bind_addr(second, (struct sockaddr *)&any) == -1 && errno == EADDRINUSE, "a port another id holds is EADDRINUSE", errno);
	CHECK(rdma_bind_addr(holder, (struct sockaddr *)&any) == -1 && errno == EINVAL, "binding an id twice is EINVAL", errno);
	CHECK(rdma_destroy_id(second) == 0 && rdma_destroy_id(holder) == 0, "both destroyed", errno);

	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(7174) };
	CHECK(inet_pton(AF_INET, argv[1], &peer.sin_addr) == 1, "the peer's address", EINVAL);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&peer, 2000) == 0, "rdma_resolve_addr", errno);
	expect(ch, id, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(rdma_get_dst_port(id) == htons(7174) && rdma_get_src_port(id) != 0, "the route's ports", EINVAL);
	struct sockaddr_in *dst = (struct sockaddr_in *)rdma_get_peer_addr(id);
	CHECK(dst->sin_family == AF_INET && dst->sin_addr.s_addr == peer.sin_addr.s_addr, "the route's destination", EINVAL);

	int flags = fcntl(ch->fd, F_GETFL);
	CHECK(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) == 0, "the fd made non-blocking", errno);
	struct rdma_cm_event *none;
	CHECK(rdma_get_cm_event(ch, &none) == -1 && errno == EAGAIN, "no event waiting: EAGAIN", errno);
	CHECK(fcntl(ch->fd, F_SETFL, flags) == 0, "the fd made blocking again", errno);

	CHECK(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route", errno);
	expect(ch, id, RDMA_CM_EVENT_ROUTE_RESOLVED);
	CHECK(id->route.num_paths == 1 && id->route.path_rec != NULL, "one path", EINVAL);

	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	CHECK(pd != NULL, "ibv_alloc_pd on the id's context", errno);
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	CHECK(cq != NULL, "ibv_create_cq on the id's context", errno);
	struct ibv_qp_init_attr attr = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	CHECK(rdma_create_qp(id, pd, &attr) == 0 && id->qp != NULL, "rdma_create_qp", errno);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	CHECK(ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_INIT, "the id's QP is in INIT", errno);
	CHECK(rdma_create_qp(id, pd, &attr) == -1 && errno == EINVAL, "a second QP on the id is EINVAL", errno);

	CHECK(rdma_establish(id) == -1 && errno == ENOSYS, "rdma_establish is ENOSYS", errno);
	CHECK(rsocket(AF_INET, SOCK_STREAM, 0) == -1 && errno == ENOSYS, "rsocket is ENOSYS", errno);
	CHECK(strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED") == 0, "rdma_event_str", EINVAL);

	rdma_destroy_qp(id);
	CHECK(id->qp == NULL, "rdma_destroy_qp", EINVAL);
	CHECK(rdma_destroy_id(id) == 0, "rdma_destroy_id", errno);
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0, "the CQ and PD are free again", errno);
	rdma_destroy_event_channel(ch);
	printf("all ok\n");
	return 0;
}
