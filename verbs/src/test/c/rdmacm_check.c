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
 *    device's is ENODEV, a port another id holds EADDRINUSE; what is not implemented is ENOSYS, the IB port space EOPNOTSUPP;
 *  - rdma_set_option: each RDMA_OPTION_ID_* option with the value size, state rules and errno of the kernel's
 *    ucma_set_option_id and cma.c; TOS and ACK_TIMEOUT applied on a connection of the device to itself (TOS in the
 *    route and the REQ's path, ACK_TIMEOUT as the QP's local ACK timeout at RTS, on both sides);
 *  - a QP the program connects itself (conn_param.qp_num, as rping -q): rdma_init_qp_attr's attributes take it
 *    to RTS, CONNECT_RESPONSE comes instead of ESTABLISHED, rdma_establish sends the RTU; rdma_notify(COMM_EST)
 *    establishes the passive side still waiting for that RTU, EISCONN once it is established;
 *  - an id or channel used after it is destroyed, or a pointer that never named one (what perftest's -R client passes
 *    on its retry after a REJ: rdma_cm_destroy_cma, then rdma_resolve_addr on the ids it freed), is an error and no
 *    crash: -1 with ENOENT for an id (ucma.c _ucma_find_context: a handle the kernel no longer has), EBADF for a
 *    channel and for an id whose channel is destroyed (librdmacm writes to the channel's closed fd).
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
#include <sys/mman.h>

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

/* the next event on ch, which must come within 10 s and be of this type; not acknowledged */
static struct rdma_cm_event *take(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	char what[128];
	snprintf(what, sizeof(what), "%s comes", rdma_event_str(type));
	CHECK(readable(ch->fd, 10000), what, ETIMEDOUT);
	struct rdma_cm_event *e;
	CHECK(rdma_get_cm_event(ch, &e) == 0, "rdma_get_cm_event", errno);
	snprintf(what, sizeof(what), "the event is %s, status 0 (it is %s)", rdma_event_str(type), rdma_event_str(e->event));
	CHECK(e->event == type && e->status == 0, what, EINVAL);
	return e;
}

#define SET(id, name, val, len) rdma_set_option(id, RDMA_OPTION_ID, name, val, len)

/* rdma_set_option's checks (ucma.c ucma_set_option_id, cma.c rdma_set_reuseaddr / rdma_set_afonly /
 * rdma_set_ack_timeout) on a new RC id */
static void option_rules(struct rdma_event_channel *ch, uint16_t port)
{
	struct rdma_cm_id *id, *ud;
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0 && rdma_create_id(ch, &ud, NULL, RDMA_PS_UDP) == 0, "ids for the options", errno);
	uint8_t byte = 0x20;
	int on = 1, off = 0;
	CHECK(SET(id, RDMA_OPTION_ID_TOS, &byte, sizeof(byte)) == 0, "RDMA_OPTION_ID_TOS (a byte)", errno);
	CHECK(SET(id, RDMA_OPTION_ID_TOS, &on, sizeof(on)) == -1 && errno == EINVAL, "RDMA_OPTION_ID_TOS of an int's size is EINVAL", errno);
	uint8_t timeout = 14; /* perftest's -R */
	CHECK(SET(id, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout)) == 0, "RDMA_OPTION_ID_ACK_TIMEOUT (a byte)", errno);
	CHECK(SET(id, RDMA_OPTION_ID_ACK_TIMEOUT, &on, sizeof(on)) == -1 && errno == EINVAL, "RDMA_OPTION_ID_ACK_TIMEOUT of an int's size is EINVAL", errno);
	uint8_t big = 32;
	CHECK(SET(id, RDMA_OPTION_ID_ACK_TIMEOUT, &big, 1) == -1 && errno == EINVAL, "RDMA_OPTION_ID_ACK_TIMEOUT above 31 is EINVAL", errno);
	CHECK(SET(ud, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout)) == -1 && errno == EINVAL, "RDMA_OPTION_ID_ACK_TIMEOUT on a UD id is EINVAL", errno);
	CHECK(SET(id, RDMA_OPTION_ID_REUSEADDR, &on, sizeof(on)) == 0, "RDMA_OPTION_ID_REUSEADDR (an int)", errno);
	CHECK(SET(id, RDMA_OPTION_ID_REUSEADDR, &byte, sizeof(byte)) == -1 && errno == EINVAL, "RDMA_OPTION_ID_REUSEADDR of a byte's size is EINVAL", errno);
	CHECK(SET(id, RDMA_OPTION_ID_AFONLY, &on, sizeof(on)) == 0, "RDMA_OPTION_ID_AFONLY (an int)", errno);
	CHECK(SET(id, RDMA_OPTION_ID_AFONLY, &byte, sizeof(byte)) == -1 && errno == EINVAL, "RDMA_OPTION_ID_AFONLY of a byte's size is EINVAL", errno);
	CHECK(SET(id, 99, &on, sizeof(on)) == -1 && errno == ENOSYS, "an unknown RDMA_OPTION_ID option is ENOSYS", errno);
	CHECK(rdma_set_option(id, 7, 0, &on, sizeof(on)) == -1 && errno == ENOSYS, "an unknown level is ENOSYS", errno);
	CHECK(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &on, sizeof(on)) == -1 && errno == ENOSYS,
	      "RDMA_OPTION_IB_PATH is ENOSYS", errno);
	CHECK(SET(id, RDMA_OPTION_ID_TOS, NULL, 1) == -1 && errno == EFAULT, "a NULL value is EFAULT", errno);
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(port) };
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&any) == 0, "bound", errno);
	CHECK(SET(id, RDMA_OPTION_ID_AFONLY, &off, sizeof(off)) == 0, "AFONLY while bound", errno);
	CHECK(SET(id, RDMA_OPTION_ID_REUSEADDR, &off, sizeof(off)) == -1 && errno == EINVAL, "REUSEADDR off once bound is EINVAL", errno);
	CHECK(rdma_listen(id, 1) == 0, "listening", errno);
	CHECK(SET(id, RDMA_OPTION_ID_REUSEADDR, &on, sizeof(on)) == -1 && errno == EINVAL, "REUSEADDR on a listener is EINVAL", errno);
	CHECK(SET(id, RDMA_OPTION_ID_AFONLY, &on, sizeof(on)) == -1 && errno == EINVAL, "AFONLY on a listener is EINVAL", errno);
	CHECK(rdma_destroy_id(id) == 0 && rdma_destroy_id(ud) == 0, "the options' ids destroyed", errno);

	/* REUSEADDR applied (cma.c cma_check_port): ids that all set it share a port, a listener holds its port alone */
	struct rdma_cm_id *a, *b, *c;
	CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0 && rdma_create_id(ch, &b, NULL, RDMA_PS_TCP) == 0
	      && rdma_create_id(ch, &c, NULL, RDMA_PS_TCP) == 0, "ids for REUSEADDR", errno);
	struct sockaddr_in shared = { .sin_family = AF_INET, .sin_port = htons(port + 1) };
	CHECK(SET(a, RDMA_OPTION_ID_REUSEADDR, &on, sizeof(on)) == 0 && SET(b, RDMA_OPTION_ID_REUSEADDR, &on, sizeof(on)) == 0,
	      "REUSEADDR on two ids", errno);
	CHECK(rdma_bind_addr(a, (struct sockaddr *)&shared) == 0 && rdma_bind_addr(b, (struct sockaddr *)&shared) == 0,
	      "two ids with REUSEADDR bind one port", errno);
	CHECK(rdma_bind_addr(c, (struct sockaddr *)&shared) == -1 && errno == EADDRINUSE, "a third without it is EADDRINUSE", errno);
	CHECK(rdma_listen(a, 1) == -1 && errno == EADDRINUSE, "listening on a shared port is EADDRINUSE", errno);
	CHECK(rdma_destroy_id(b) == 0, "the other id gone", errno);
	CHECK(rdma_listen(a, 1) == 0, "then the port is the listener's alone", errno);
	CHECK(SET(c, RDMA_OPTION_ID_REUSEADDR, &on, sizeof(on)) == 0, "REUSEADDR on the third", errno);
	CHECK(rdma_bind_addr(c, (struct sockaddr *)&shared) == -1 && errno == EADDRINUSE, "REUSEADDR does not share a listener's port", errno);
	CHECK(rdma_destroy_id(a) == 0 && rdma_destroy_id(c) == 0, "the REUSEADDR ids destroyed", errno);
}

/* A connection of the device to itself: the client connects a QP of its own (conn_param.qp_num) with
 * rdma_init_qp_attr, with TOS 0x48 and ACK_TIMEOUT 17; the server accepts with rdma_create_qp's QP and ACK_TIMEOUT 19. */
static void self_connection(const char *self, uint16_t port)
{
	struct rdma_event_channel *sch = rdma_create_event_channel(), *cch = rdma_create_event_channel();
	CHECK(sch != NULL && cch != NULL, "two more channels", errno);
	struct rdma_cm_id *listener, *client, *server;
	CHECK(rdma_create_id(sch, &listener, sch, RDMA_PS_TCP) == 0 && rdma_create_id(cch, &client, cch, RDMA_PS_TCP) == 0, "listener and client ids", errno);
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port) };
	CHECK(inet_pton(AF_INET, self, &addr.sin_addr) == 1, "the device's address", EINVAL);
	CHECK(rdma_bind_addr(listener, (struct sockaddr *)&addr) == 0 && rdma_listen(listener, 4) == 0, "listening on the device's own address", errno);
	struct ibv_qp_attr qa;
	int mask = 0;
	qa.qp_state = IBV_QPS_INIT;
	CHECK(rdma_init_qp_attr(client, &qa, &mask) == 0 && mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
	      && qa.qp_access_flags == 0 && qa.port_num == 1, "INIT attributes before a connection: pkey, port, no access (cma_ib_init_qp_attr)", errno);
	uint8_t tos = 0x48, ack = 17, server_ack = 12;
	CHECK(SET(client, RDMA_OPTION_ID_TOS, &tos, 1) == 0 && SET(client, RDMA_OPTION_ID_ACK_TIMEOUT, &ack, 1) == 0, "TOS and ACK_TIMEOUT on the client", errno);
	CHECK(rdma_resolve_addr(client, NULL, (struct sockaddr *)&addr, 2000) == 0, "resolving the device's own address", errno);
	rdma_ack_cm_event(take(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	int on = 1;
	CHECK(SET(client, RDMA_OPTION_ID_AFONLY, &on, sizeof(on)) == -1 && errno == EINVAL, "AFONLY once resolving is EINVAL", errno);
	CHECK(rdma_resolve_route(client, 2000) == 0, "rdma_resolve_route", errno);
	rdma_ack_cm_event(take(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	CHECK(client->route.path_rec != NULL && client->route.path_rec->traffic_class == 0x48, "the route's traffic class is the TOS", EINVAL);

	struct ibv_pd *pd = ibv_alloc_pd(client->verbs);
	struct ibv_cq *cq = ibv_create_cq(client->verbs, 16, NULL, NULL, 0);
	CHECK(pd != NULL && cq != NULL, "PD and CQ", errno);
	struct ibv_qp_init_attr init = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *own = ibv_create_qp(pd, &init);
	CHECK(own != NULL, "the client's own QP (ibv_create_qp)", errno);
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7, .qp_num = own->qp_num };
	CHECK(rdma_connect(client, NULL) == -1 && errno == EINVAL, "rdma_connect without a QP or conn_param is EINVAL", errno);
	CHECK(rdma_connect(client, &param) == 0, "rdma_connect naming the client's own QP", errno);
	qa.qp_state = IBV_QPS_RTR;
	CHECK(rdma_init_qp_attr(client, &qa, &mask) == -1 && errno == EINVAL, "RTR attributes before the REP are EINVAL", errno);
	qa.qp_state = IBV_QPS_INIT;
	CHECK(rdma_init_qp_attr(client, &qa, &mask) == 0 && (qa.qp_access_flags & IBV_ACCESS_REMOTE_WRITE), "INIT attributes once the REQ is sent", errno);

	struct rdma_cm_event *req = take(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	server = req->id;
	CHECK(req->listen_id == listener, "the request's listener", EINVAL);
	rdma_ack_cm_event(req);
	qa.qp_state = IBV_QPS_RTR;
	CHECK(rdma_init_qp_attr(server, &qa, &mask) == 0 && (mask & IBV_QP_AV) && qa.ah_attr.grh.traffic_class == 0x48
	      && qa.dest_qp_num == own->qp_num, "the server's RTR attributes: the REQ's path (traffic class 0x48) and the client's QP", errno);
	CHECK(rdma_notify(server, IBV_EVENT_COMM_EST) == -1 && errno == EINVAL, "rdma_notify before accept is EINVAL", errno);
	CHECK(SET(server, RDMA_OPTION_ID_ACK_TIMEOUT, &server_ack, 1) == 0, "ACK_TIMEOUT on the server's id", errno);
	CHECK(rdma_create_qp(server, pd, &init) == 0, "the server's QP (rdma_create_qp)", errno);
	CHECK(rdma_accept(server, NULL) == 0, "rdma_accept", errno);
	struct ibv_qp_init_attr qi;
	CHECK(ibv_query_qp(server->qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT, &qi) == 0 && qa.qp_state == IBV_QPS_RTS && qa.timeout == 12,
	      "the server's QP is in RTS with ACK_TIMEOUT's 12 (the CM alone gives 19)", EINVAL);

	struct rdma_cm_event *resp = take(cch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	CHECK(resp->id == client, "CONNECT_RESPONSE on the client", EINVAL);
	rdma_ack_cm_event(resp);
	enum ibv_qp_state states[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
	for (int i = 0; i < 3; i++) {
		qa.qp_state = states[i];
		CHECK(rdma_init_qp_attr(client, &qa, &mask) == 0 && ibv_modify_qp(own, &qa, mask) == 0, "the own QP moved with rdma_init_qp_attr's attributes", errno);
		if (states[i] == IBV_QPS_RTS)
			CHECK(qa.timeout == 17 && (mask & IBV_QP_TIMEOUT), "RTS attributes carry ACK_TIMEOUT's 17", EINVAL);
	}
	CHECK(ibv_query_qp(own, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT, &qi) == 0 && qa.qp_state == IBV_QPS_RTS && qa.timeout == 17, "the own QP is in RTS", EINVAL);

	/* the RTU is not sent yet: the server waits in REP_SENT until told its QP had traffic */
	CHECK(!readable(sch->fd, 200), "no ESTABLISHED on the server before the RTU", EINVAL);
	CHECK(rdma_notify(server, IBV_EVENT_QP_FATAL) == -1 && errno == EINVAL, "rdma_notify of another event is EINVAL", errno);
	CHECK(rdma_notify(server, IBV_EVENT_COMM_EST) == 0, "rdma_notify(COMM_EST) on the server", errno);
	struct rdma_cm_event *est = take(sch, RDMA_CM_EVENT_ESTABLISHED);
	CHECK(est->id == server, "ESTABLISHED on the server's id", EINVAL);
	rdma_ack_cm_event(est);
	CHECK(rdma_notify(server, IBV_EVENT_COMM_EST) == -1 && errno == EISCONN, "rdma_notify(COMM_EST) again is EISCONN", errno);
	CHECK(rdma_establish(server) == -1 && errno == EINVAL, "rdma_establish on an id with a QP of rdma_create_qp is EINVAL", errno);
	CHECK(rdma_establish(client) == 0, "rdma_establish sends the RTU", errno);
	CHECK(rdma_establish(client) == -1 && errno == EINVAL, "rdma_establish twice is EINVAL", errno);
	CHECK(!readable(cch->fd, 200), "no ESTABLISHED event on the client (librdmacm reports none after rdma_establish)", EINVAL);

	CHECK(rdma_disconnect(client) == 0, "rdma_disconnect", errno);
	rdma_ack_cm_event(take(cch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(take(sch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(server);
	CHECK(ibv_destroy_qp(own) == 0, "the own QP destroyed", errno);
	CHECK(rdma_destroy_id(server) == 0 && rdma_destroy_id(client) == 0 && rdma_destroy_id(listener) == 0, "the ids destroyed", errno);
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0, "CQ and PD destroyed", errno);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* every entry point that takes an id, on one that is not there: -1 and `err`, or nothing for the void ones */
static void calls_refused(struct rdma_cm_id *id, int err, const char *what)
{
	char line[160];
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(1) };
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct rdma_conn_param param = { .qp_num = 1 };
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1, .max_recv_wr = 1 } };
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT };
	int mask, on = 1;
	struct rdma_cm_id *req;
#define REFUSED(call, name)                                                                                   \
	do {                                                                                              \
		errno = 0;                                                                                \
		int r_ = (call);                                                                          \
		snprintf(line, sizeof(line), "%s on %s is -1, %s", name, what, strerror(err));           \
		CHECK(r_ == -1 && errno == err, line, errno);                                             \
	} while (0)
	REFUSED(rdma_resolve_addr(id, NULL, (struct sockaddr *)&addr, 2000), "rdma_resolve_addr");
	REFUSED(rdma_resolve_route(id, 2000), "rdma_resolve_route");
	REFUSED(rdma_bind_addr(id, (struct sockaddr *)&addr), "rdma_bind_addr");
	REFUSED(rdma_listen(id, 1), "rdma_listen");
	REFUSED(rdma_connect(id, &param), "rdma_connect");
	REFUSED(rdma_accept(id, &param), "rdma_accept");
	REFUSED(rdma_reject(id, NULL, 0), "rdma_reject");
	REFUSED(rdma_disconnect(id), "rdma_disconnect");
	REFUSED(rdma_create_qp(id, NULL, &init), "rdma_create_qp");
	REFUSED(rdma_init_qp_attr(id, &qa, &mask), "rdma_init_qp_attr");
	REFUSED(rdma_establish(id), "rdma_establish");
	REFUSED(rdma_notify(id, IBV_EVENT_COMM_EST), "rdma_notify");
	REFUSED(SET(id, RDMA_OPTION_ID_REUSEADDR, &on, sizeof(on)), "rdma_set_option");
	REFUSED(rdma_get_request(id, &req), "rdma_get_request");
#undef REFUSED
	snprintf(line, sizeof(line), "rdma_get_src_port, rdma_get_dst_port, rdma_destroy_qp, rdma_destroy_ep on %s: 0, no crash", what);
	CHECK(rdma_get_src_port(id) == 0 && rdma_get_dst_port(id) == 0, line, EINVAL);
	rdma_destroy_qp(id);
	rdma_destroy_ep(id);
}

/* ids and channels used after they are destroyed: errors, no crash */
static void after_destroy(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id, *orphan;
	CHECK(ch != NULL && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0 && rdma_create_id(ch, &orphan, NULL, RDMA_PS_TCP) == 0,
	      "a channel and ids to destroy", errno);
	CHECK(rdma_destroy_id(id) == 0, "an id destroyed", errno);
	calls_refused(id, ENOENT, "a destroyed id");
	CHECK(rdma_destroy_id(id) == -1 && errno == ENOENT, "rdma_destroy_id again is -1, ENOENT", errno);

	/* perftest passes what it reads from memory it freed: a pointer to memory that is not even mapped */
	void *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(gone != MAP_FAILED && munmap(gone, 4096) == 0, "a page unmapped", errno);
	calls_refused((struct rdma_cm_id *)gone, ENOENT, "a pointer to unmapped memory");
	CHECK(rdma_destroy_id((struct rdma_cm_id *)gone) == -1 && errno == ENOENT, "rdma_destroy_id of it is -1, ENOENT", errno);

	/* the channel destroyed before its id (ucma_close destroys the ids of its file) */
	rdma_destroy_event_channel(ch);
	calls_refused(orphan, EBADF, "an id whose channel is destroyed");
	CHECK(rdma_destroy_id(orphan) == -1 && errno == EBADF, "rdma_destroy_id of it is -1, EBADF", errno);
	CHECK(rdma_destroy_id(orphan) == -1 && errno == ENOENT, "and then ENOENT: it is released", errno);
	struct rdma_cm_event *e;
	CHECK(rdma_get_cm_event(ch, &e) == -1 && errno == EBADF, "rdma_get_cm_event on a destroyed channel is -1, EBADF", errno);
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == -1 && errno == EBADF, "rdma_create_id on a destroyed channel is -1, EBADF", errno);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel((struct rdma_event_channel *)gone);
	CHECK(1, "rdma_destroy_event_channel of a destroyed channel and of unmapped memory: no crash", 0);

	/* what still exists works on */
	struct rdma_event_channel *again = rdma_create_event_channel();
	CHECK(again != NULL && rdma_create_id(again, &id, NULL, RDMA_PS_TCP) == 0 && rdma_destroy_id(id) == 0,
	      "a new channel and id work", errno);
	rdma_destroy_event_channel(again);
}

int main(int argc, char **argv)
{
	if (argc != 4)
		fail("usage: rdmacm_check SELF_IPV4 PEER_IPV4 FIRST_PORT (it uses 5 rdma_cm ports from there)", EINVAL);
	const char *self = argv[1];
	uint16_t first = (uint16_t)atoi(argv[3]);
	argv++;
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
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(first + 1) };
	CHECK(rdma_create_id(ch, &holder, NULL, RDMA_PS_TCP) == 0 && rdma_create_id(ch, &second, NULL, RDMA_PS_TCP) == 0, "two more ids", errno);
	CHECK(rdma_bind_addr(holder, (struct sockaddr *)&any) == 0 && rdma_get_src_port(holder) == htons(first + 1), "bound to a port", errno);
	CHECK(rdma_bind_addr(second, (struct sockaddr *)&any) == -1 && errno == EADDRINUSE, "a port another id holds is EADDRINUSE", errno);
	CHECK(rdma_bind_addr(holder, (struct sockaddr *)&any) == -1 && errno == EINVAL, "binding an id twice is EINVAL", errno);
	CHECK(rdma_destroy_id(second) == 0 && rdma_destroy_id(holder) == 0, "both destroyed", errno);

	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(first) };
	CHECK(inet_pton(AF_INET, argv[1], &peer.sin_addr) == 1, "the peer's address", EINVAL);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&peer, 2000) == 0, "rdma_resolve_addr", errno);
	expect(ch, id, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(rdma_get_dst_port(id) == htons(first) && rdma_get_src_port(id) != 0, "the route's ports", EINVAL);
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

	CHECK(rdma_establish(id) == -1 && errno == EINVAL, "rdma_establish on an id with a QP of rdma_create_qp is EINVAL", errno);
	CHECK(rsocket(AF_INET, SOCK_STREAM, 0) == -1 && errno == ENOSYS, "rsocket is ENOSYS", errno);
	CHECK(strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED") == 0, "rdma_event_str", EINVAL);

	rdma_destroy_qp(id);
	CHECK(id->qp == NULL, "rdma_destroy_qp", EINVAL);
	CHECK(rdma_destroy_id(id) == 0, "rdma_destroy_id", errno);
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0, "the CQ and PD are free again", errno);
	option_rules(ch, first + 2); /* and first + 3 */
	rdma_destroy_event_channel(ch);
	self_connection(self, first + 4);
	after_destroy();
	printf("all ok\n");
	return 0;
}
