/*
 * A verbs program compiled against rdma-core's headers and linked against jroce's libibverbs.so.1, run by
 * VerbsCheckTest with JROCE_ADDR set. Checks, printing one "ok ..." line each and exiting 1 at the first
 * failure ("FAIL ..."):
 *  - a program that dlopens libibverbs.so.1 and looks a symbol up by version (as NCCL and UCX do) gets ours;
 *  - the inline verbs of verbs.h (ibv_post_send, ibv_post_recv, ibv_poll_cq) reach the library through
 *    context->ops, and data moves between two RC QPs of one device: a SEND, and an RDMA WRITE that lands in
 *    the program's own buffer (the memory region is that buffer, not a copy);
 *  - bad use gets rdma-core's answers: a post to a QP in RESET is EINVAL with bad_wr on the first WR, a
 *    chain whose second WR has too many SGEs stops at that WR (the first was posted), a full receive
 *    queue is ENOMEM, port 2 and GID 2 do not exist, an inline SEND needs no region, a zero-length region is EINVAL, destroying a CQ or PD
 *    still in use is EBUSY;
 *  - a table of bad uses answered as rdma-core over rdma_rxe answers them (bad_use below: each case names the
 *    rdma-core or kernel function whose answer it checks); an SGE that names no usable region is posted and fails
 *    in its completion, the QP entering the error state (sge_faults);
 *  - ibv_fork_init is 0 and ibv_is_fork_initialized says IBV_FORK_UNNEEDED, as rdma-core's on a kernel with
 *    copy-on-fork; after fork() the child's verbs fail (EIO, one line on stderr) and the parent's go on, its
 *    regions still its own memory (an RDMA WRITE after the child wrote its copy lands in the parent's buffer);
 *  - a QP that fails raises IBV_EVENT_QP_FATAL on the context's async_fd.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what, int err)
{
	printf("FAIL %s (%d: %s)\n", what, err, strerror(err));
	exit(1);
}

#define CHECK(cond, what, err) do { if (!(cond)) fail(what, err); printf("ok %s\n", what); } while (0)

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n != 0)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > 30)
			return 0;
	}
}

static void to_rts_access(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid, unsigned int access)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	CHECK(rc == 0, "modify to INIT", rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
			   | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	CHECK(rc == 0, "modify to RTR", rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN
			   | IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(rc == 0, "modify to RTS", rc);
}

static void to_rts(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid)
{
	to_rts_access(qp, dest_qpn, dgid, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
}


/* One bad use: what rdma-core over rdma_rxe returns (ret, errno) and where that answer comes from. */
struct bad_case {
	const char *what, *source;
	int want, got;
};

static void report(struct bad_case *c)
{
	char line[512];
	snprintf(line, sizeof(line), "bad use: %s is %s (%s)", c->what, c->want == 0 ? "0" : strerror(c->want), c->source);
	CHECK(c->got == c->want, line, c->got);
}

/* the answer of a verb returning a pointer: 0, or errno when it returned NULL */
#define PTR_ERR(p) ((p) != NULL ? 0 : errno)

static void bad_use(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq, const union ibv_gid *gid)
{
	struct ibv_device_attr dev;
	CHECK(ibv_query_device(ctx, &dev) == 0, "ibv_query_device", errno);
	static char mem[8192] __attribute__((aligned(4096)));
	struct ibv_mr *mr = ibv_reg_mr(pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL, "a region for the bad uses", errno);
	struct ibv_mr *m;
	struct ibv_cq *c;
	struct ibv_qp *q;

	m = ibv_reg_mr(pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE);
	report(&(struct bad_case){ "ibv_reg_mr of NULL with a length", "kernel umem.c ib_umem_get: pinning address 0 fails", EFAULT, PTR_ERR(m) });
	m = ibv_reg_mr(pd, mem, sizeof(mem), IBV_ACCESS_REMOTE_WRITE);
	report(&(struct bad_case){ "ibv_reg_mr with remote write but not local write", "kernel ib_verbs.h ib_check_mr_access", EINVAL, PTR_ERR(m) });
	m = ibv_reg_mr(pd, mem, sizeof(mem), IBV_ACCESS_REMOTE_ATOMIC);
	report(&(struct bad_case){ "ibv_reg_mr with remote atomic but not local write", "kernel ib_verbs.h ib_check_mr_access", EINVAL, PTR_ERR(m) });

	c = ibv_create_cq(ctx, 0, NULL, NULL, 0);
	report(&(struct bad_case){ "ibv_create_cq of 0 entries", "kernel rxe_cq.c rxe_cq_chk_attr: cqe <= 0", EINVAL, PTR_ERR(c) });
	c = ibv_create_cq(ctx, dev.max_cqe + 1, NULL, NULL, 0);
	report(&(struct bad_case){ "ibv_create_cq of more than max_cqe entries", "kernel rxe_cq.c rxe_cq_chk_attr", EINVAL, PTR_ERR(c) });

	struct ibv_qp_init_attr init = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 16 } };
	struct ibv_qp_init_attr big = init;
	big.cap.max_send_wr = (uint32_t)dev.max_qp_wr + 1;
	q = ibv_create_qp(pd, &big);
	report(&(struct bad_case){ "ibv_create_qp with max_send_wr above max_qp_wr", "kernel rxe_qp.c rxe_qp_chk_cap", EINVAL, PTR_ERR(q) });
	big = init;
	big.cap.max_send_sge = (uint32_t)dev.max_sge + 1;
	q = ibv_create_qp(pd, &big);
	report(&(struct bad_case){ "ibv_create_qp with max_send_sge above max_sge", "kernel rxe_qp.c rxe_qp_chk_cap", EINVAL, PTR_ERR(q) });

	q = ibv_create_qp(pd, &init);
	CHECK(q != NULL, "a QP for the bad uses", errno);
	struct ibv_sge sge = { .addr = (uintptr_t)mem, .length = 64, .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *rbad = NULL;
	report(&(struct bad_case){ "ibv_post_recv on a QP in RESET", "providers/rxe/rxe.c rxe_post_recv (IBA C10-97.2.1)", EINVAL,
				   ibv_post_recv(q, &rwr, &rbad) });

	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	report(&(struct bad_case){ "ibv_modify_qp from RESET to RTR", "kernel verbs.c ib_modify_qp_is_ok: no such transition", EINVAL,
				   ibv_modify_qp(q, &a, IBV_QP_STATE) });
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	report(&(struct bad_case){ "ibv_modify_qp to INIT without its required access flags", "kernel verbs.c ib_modify_qp_is_ok: required attributes", EINVAL,
				   ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) });
	a.port_num = 2;
	report(&(struct bad_case){ "ibv_modify_qp to INIT on port 2", "kernel uverbs_cmd.c modify_qp: rdma_is_port_valid", EINVAL,
				   ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) });
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "the QP to INIT", errno);

	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad = NULL;
	report(&(struct bad_case){ "ibv_post_send on a QP in INIT", "kernel rxe_verbs.c rxe_post_send: state below RTS", EINVAL,
				   ibv_post_send(q, &swr, &sbad) });

	/* the QP to RTS towards itself, so that what follows is refused for the WR alone */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = q->qp_num;
	a.max_dest_rd_atomic = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.port_num = 1;
	CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
			    | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0, "the QP to RTR", errno);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN
			    | IBV_QP_MAX_QP_RD_ATOMIC) == 0, "the QP to RTS", errno);
	a.qp_state = IBV_QPS_INIT;
	report(&(struct bad_case){ "ibv_modify_qp from RTS to INIT", "kernel verbs.c ib_modify_qp_is_ok: no such transition", EINVAL,
				   ibv_modify_qp(q, &a, IBV_QP_STATE) });

	struct ibv_sge two[2] = { sge, sge };
	struct ibv_send_wr many = swr;
	many.sg_list = two;
	many.num_sge = 2;
	int rc = ibv_post_send(q, &many, &sbad);
	report(&(struct bad_case){ "ibv_post_send of more SGEs than max_send_sge", "providers/rxe/rxe.c validate_send_wr", EINVAL, rc });
	CHECK(sbad == &many, "bad use: bad_wr names that WR", 0);
	struct ibv_sge long_sge = { .addr = (uintptr_t)mem, .length = 64, .lkey = 0 };
	struct ibv_send_wr inl = swr;
	inl.sg_list = &long_sge;
	inl.send_flags |= IBV_SEND_INLINE;
	rc = ibv_post_send(q, &inl, &sbad);
	report(&(struct bad_case){ "an inline ibv_post_send longer than max_inline_data", "providers/rxe/rxe.c validate_send_wr", EINVAL, rc });
	CHECK(sbad == &inl, "bad use: bad_wr names that WR", 0);
	struct ibv_sge eight = { .addr = (uintptr_t)mem, .length = 8, .lkey = mr->lkey };
	struct ibv_send_wr atomic = { .wr_id = 3, .sg_list = &eight, .num_sge = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				      .send_flags = IBV_SEND_SIGNALED };
	atomic.wr.atomic.remote_addr = (uintptr_t)mem + 4;
	atomic.wr.atomic.rkey = mr->rkey;
	report(&(struct bad_case){ "an atomic at an address not 8-byte aligned", "providers/rxe/rxe.c validate_send_wr", EINVAL,
				   ibv_post_send(q, &atomic, &sbad) });
	struct ibv_recv_wr rmany = rwr;
	rmany.sg_list = two;
	rmany.num_sge = 2;
	report(&(struct bad_case){ "ibv_post_send of no WR", "providers/rxe/rxe.c rxe_post_send", EINVAL, ibv_post_send(q, NULL, &sbad) });
	report(&(struct bad_case){ "ibv_post_recv of no WR", "providers/rxe/rxe.c rxe_post_recv", EINVAL, ibv_post_recv(q, NULL, &rbad) });
	report(&(struct bad_case){ "ibv_post_recv of more SGEs than max_recv_sge", "providers/rxe/rxe.c rxe_post_one_recv", EINVAL,
				   ibv_post_recv(q, &rmany, &rbad) });

	report(&(struct bad_case){ "ibv_resize_cq", "libibverbs dummy_ops.c resize_cq: jroce's device cannot resize", EOPNOTSUPP,
				   ibv_resize_cq(cq, 128) });
	CHECK(ibv_rate_to_mbps(IBV_RATE_100_GBPS) == 103125 && mbps_to_ibv_rate(25781) == IBV_RATE_25_GBPS
	      && ibv_rate_to_mult(IBV_RATE_40_GBPS) == 16 && ibv_rate_to_mult(IBV_RATE_14_GBPS) == -1
	      && mult_to_ibv_rate(48) == IBV_RATE_120_GBPS, "the rate conversions", EINVAL);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	CHECK(mw == NULL && errno == EOPNOTSUPP, "bad use: ibv_alloc_mw is EOPNOTSUPP (jroce has no memory windows; verbs.h ibv_alloc_mw without the op)", errno);
	report(&(struct bad_case){ "ibv_dealloc_pd of a PD with a QP and a region", "kernel uverbs_std_types.c uverbs_free_pd: ib_destroy_usecnt", EBUSY,
				   ibv_dealloc_pd(pd) });
	CHECK(ibv_destroy_qp(q) == 0 && ibv_dereg_mr(mr) == 0, "the bad uses' QP and region destroyed", errno);
}

static void expect_completion(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status status, const char *what)
{
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	int n = poll_one(cq, &wc);
	char line[256];
	snprintf(line, sizeof(line), "%s: wr %llu completes with %s (it is wr %llu, %s)", what, (unsigned long long)wr_id,
		 ibv_wc_status_str(status), (unsigned long long)wc.wr_id, n == 1 ? ibv_wc_status_str(wc.status) : "none");
	CHECK(n == 1 && wc.wr_id == wr_id && wc.status == status, line, n == 1 ? (int)wc.status : ETIMEDOUT);
}

static void expect_err_state(struct ibv_qp *qp, const char *what)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	char line[256];
	snprintf(line, sizeof(line), "%s: the QP is in the error state", what);
	CHECK(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR, line, (int)qa.qp_state);
}

/* takes the QP_FATAL events of these QPs off async_fd (each must come within 30 s) */
static void expect_fatal(struct ibv_context *ctx, struct ibv_qp **qps, int n)
{
	int seen = 0;
	while (seen != (1 << n) - 1) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		CHECK(poll(&pfd, 1, 30000) == 1, "async_fd becomes readable", errno);
		struct ibv_async_event ev;
		CHECK(ibv_get_async_event(ctx, &ev) == 0 && ev.event_type == IBV_EVENT_QP_FATAL, "ibv_get_async_event: QP_FATAL", (int)ev.event_type);
		for (int i = 0; i < n; i++)
			if (ev.element.qp == qps[i])
				seen |= 1 << i;
		ibv_ack_async_event(&ev);
	}
}

/*
 * An SGE that names no usable region is not refused at post time, as with rdma_rxe (whose post path never looks at
 * an lkey): the WR is posted (0, bad_wr untouched) and fails in its completion when its data would move, and the QP
 * enters the error state, flushing what follows (kernel 6.1's rdma_rxe):
 *  - SEND or WRITE outside its region: IBV_WC_LOC_PROT_ERR (rxe_req.c rxe_requester: finish_packet's copy_data -EFAULT);
 *  - SEND with an unknown lkey: IBV_WC_LOC_QP_OP_ERR (rxe_mr.c copy_data: lookup_mr fails, -EINVAL);
 *  - READ into memory outside its region: IBV_WC_LOC_PROT_ERR when the response comes (rxe_comp.c do_read);
 *  - a receive outside its region: IBV_WC_LOC_QP_OP_ERR when a SEND reaches it (rxe_resp.c RESPST_ERR_MALFORMED_WQE),
 *    the sender's SEND IBV_WC_REM_OP_ERR (the NAK's remote operational error).
 */
static void sge_faults(struct ibv_context *ctx, struct ibv_pd *pd, const union ibv_gid *gid)
{
	static char mem[2][8192] __attribute__((aligned(4096)));
	unsigned int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *mr = ibv_reg_mr(pd, mem[0], sizeof(mem[0]), access);
	struct ibv_mr *target = ibv_reg_mr(pd, mem[1], sizeof(mem[1]), access);
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	CHECK(mr != NULL && target != NULL && cq != NULL, "regions and a CQ for the SGE faults", errno);
	struct ibv_qp_init_attr init = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *q[5];
	for (int i = 0; i < 5; i++) {
		q[i] = ibv_create_qp(pd, &init);
		CHECK(q[i] != NULL, "a QP for the SGE faults", errno);
	}
	for (int i = 0; i < 3; i++)
		to_rts_access(q[i], q[i]->qp_num, gid, access); /* each its own peer */
	to_rts_access(q[3], q[4]->qp_num, gid, access);
	to_rts_access(q[4], q[3]->qp_num, gid, access);

	/* a chain of three WRITEs, the second reading past the end of its region */
	struct ibv_sge ok = { .addr = (uintptr_t)mem[0], .length = 64, .lkey = mr->lkey };
	struct ibv_sge outside = { .addr = (uintptr_t)mem[0] + sizeof(mem[0]) - 32, .length = 64, .lkey = mr->lkey };
	struct ibv_send_wr w[3], *bad = NULL;
	for (int i = 0; i < 3; i++) {
		w[i] = (struct ibv_send_wr){ .wr_id = 11 + i, .sg_list = i == 1 ? &outside : &ok, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					     .send_flags = IBV_SEND_SIGNALED, .next = i < 2 ? &w[i + 1] : NULL };
		w[i].wr.rdma.remote_addr = (uintptr_t)mem[1];
		w[i].wr.rdma.rkey = target->rkey;
	}
	int rc = ibv_post_send(q[0], &w[0], &bad);
	CHECK(rc == 0 && bad == NULL, "SGE fault: a chain whose second WRITE reads outside its region is posted whole (0, bad_wr untouched)", rc);
	expect_completion(cq, 11, IBV_WC_SUCCESS, "SGE fault: the WRITE before it");
	expect_completion(cq, 12, IBV_WC_LOC_PROT_ERR, "SGE fault: a WRITE outside its region (rxe_req.c, copy_data -EFAULT)");
	expect_completion(cq, 13, IBV_WC_WR_FLUSH_ERR, "SGE fault: the WRITE after it is flushed");
	expect_err_state(q[0], "SGE fault outside its region");

	/* a SEND whose lkey names no region */
	struct ibv_sge nokey = ok;
	nokey.lkey = mr->lkey ^ 0x55aa55aa;
	struct ibv_send_wr s = { .wr_id = 21, .sg_list = &nokey, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	rc = ibv_post_send(q[1], &s, &bad);
	CHECK(rc == 0, "SGE fault: a SEND with an unknown lkey is posted", rc);
	expect_completion(cq, 21, IBV_WC_LOC_QP_OP_ERR, "SGE fault: an unknown lkey (rxe_mr.c copy_data: lookup_mr fails)");
	expect_err_state(q[1], "SGE fault with an unknown lkey");

	/* a READ whose local buffer runs past its region */
	struct ibv_send_wr rd = { .wr_id = 31, .sg_list = &outside, .num_sge = 1, .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };
	rd.wr.rdma.remote_addr = (uintptr_t)mem[1];
	rd.wr.rdma.rkey = target->rkey;
	rc = ibv_post_send(q[2], &rd, &bad);
	CHECK(rc == 0, "SGE fault: a READ into memory outside its region is posted", rc);
	expect_completion(cq, 31, IBV_WC_LOC_PROT_ERR, "SGE fault: a READ response outside the region (rxe_comp.c do_read)");
	expect_err_state(q[2], "SGE fault of a READ");

	/* a receive outside its region, reached by the peer's SEND */
	struct ibv_recv_wr r = { .wr_id = 41, .sg_list = &outside, .num_sge = 1 }, *rbad = NULL;
	rc = ibv_post_recv(q[4], &r, &rbad);
	CHECK(rc == 0 && rbad == NULL, "SGE fault: a receive outside its region is posted", rc);
	struct ibv_send_wr send = { .wr_id = 42, .sg_list = &ok, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	CHECK(ibv_post_send(q[3], &send, &bad) == 0, "SGE fault: the peer's SEND is posted", errno);
	struct ibv_wc wc[2];
	for (int got = 0; got < 2; got++)
		CHECK(poll_one(cq, &wc[got]) == 1, "SGE fault: a completion of the receive or of the SEND", ETIMEDOUT);
	int recv_at = wc[0].wr_id == 41 ? 0 : 1;
	CHECK(wc[recv_at].wr_id == 41 && wc[recv_at].status == IBV_WC_LOC_QP_OP_ERR,
	      "SGE fault: the receive completes with IBV_WC_LOC_QP_OP_ERR (rxe_resp.c RESPST_ERR_MALFORMED_WQE)", (int)wc[recv_at].status);
	CHECK(wc[1 - recv_at].wr_id == 42 && wc[1 - recv_at].status == IBV_WC_REM_OP_ERR,
	      "SGE fault: the peer's SEND completes with IBV_WC_REM_OP_ERR", (int)wc[1 - recv_at].status);
	expect_err_state(q[4], "SGE fault of a receive");

	expect_fatal(ctx, q, 5);
	CHECK(1, "SGE fault: each failed QP raised IBV_EVENT_QP_FATAL", 0);
	for (int i = 0; i < 5; i++)
		CHECK(ibv_destroy_qp(q[i]) == 0, "the SGE faults' QP destroyed", errno);
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(target) == 0, "the SGE faults' CQ and regions destroyed", errno);
}

int main(void)
{
	/* 1. looked up by version, as NCCL and UCX do */
	void *lib = dlopen("libibverbs.so.1", RTLD_NOW);
	CHECK(lib != NULL, "dlopen libibverbs.so.1", errno);
	struct ibv_device **(*get_list)(int *) = (struct ibv_device **(*)(int *))dlvsym(lib, "ibv_get_device_list", "IBVERBS_1.1");
	CHECK(get_list != NULL, "dlvsym ibv_get_device_list@IBVERBS_1.1", ENOENT);
	int n = 0;
	struct ibv_device **list = get_list(&n);
	CHECK(list != NULL && n == 1 && strcmp(ibv_get_device_name(list[0]), "jroce0") == 0, "one device, jroce0", errno);

	struct ibv_context *ctx = ibv_open_device(list[0]);
	CHECK(ctx != NULL, "ibv_open_device", errno);
	struct ibv_port_attr port;
	CHECK(ibv_query_port(ctx, 1, &port) == 0 && port.state == IBV_PORT_ACTIVE && port.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "port 1 active, Ethernet", errno);
	CHECK(ibv_query_port(ctx, 2, &port) == EINVAL, "port 2 does not exist", EINVAL);
	union ibv_gid gid;
	CHECK(ibv_query_gid(ctx, 1, 1, &gid) == 0, "GID 1", errno);
	CHECK(ibv_query_gid(ctx, 1, 2, &gid) != 0, "GID 2 does not exist", 0);
	ibv_query_gid(ctx, 1, 1, &gid);

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "ibv_alloc_pd (starts the endpoint)", errno);

	static char buf[2][8192] __attribute__((aligned(4096)));
	struct ibv_mr *none = ibv_reg_mr(pd, buf[0], 0, IBV_ACCESS_LOCAL_WRITE);
	CHECK(none == NULL && errno == EINVAL, "a zero-length region is EINVAL", errno);
	struct ibv_mr *mr[2];
	for (int i = 0; i < 2; i++) {
		mr[i] = ibv_reg_mr(pd, buf[i], sizeof(buf[i]), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		CHECK(mr[i] != NULL && mr[i]->addr == buf[i], "ibv_reg_mr over the program's buffer", errno);
	}

	/* fork() with regions registered: rdma-core on a kernel with copy-on-fork needs no ibv_fork_init
	 * (libibverbs/memory.c), and neither does jroce. The child has no endpoint (the VM's threads stayed in the
	 * parent) and is told so; what it writes into its copy of a region stays its own; the parent goes on, its
	 * regions still its memory (the SEND and WRITE below land in buf[1]). */
	CHECK(ibv_fork_init() == 0, "ibv_fork_init is 0", errno);
	CHECK(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED, "ibv_is_fork_initialized is IBV_FORK_UNNEEDED", EINVAL);
	memset(buf[1], 0x11, sizeof(buf[1]));
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		memset(buf[1], 0xee, sizeof(buf[1]));
		struct ibv_pd *p = ibv_alloc_pd(ctx);
		_exit(p == NULL && errno == EIO ? 0 : 1);
	}
	int status = 0;
	CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "after fork() the child's verbs fail with EIO", status);
	CHECK(buf[1][0] == 0x11 && buf[1][sizeof(buf[1]) - 1] == 0x11, "the child's writes to its copy of a region stay in the child", 0);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHECK(cq != NULL, "ibv_create_cq", errno);
	struct ibv_qp_init_attr init = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 8, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1,
						  .max_inline_data = 64 } };
	struct ibv_qp *qp[2];
	for (int i = 0; i < 2; i++) {
		qp[i] = ibv_create_qp(pd, &init);
		CHECK(qp[i] != NULL, "ibv_create_qp", errno);
	}
	struct ibv_wc wc;
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "an empty CQ polls 0", 0);
	bad_use(ctx, pd, cq, &gid);
	sge_faults(ctx, pd, &gid);

	/* 2. bad use, in RESET */
	struct ibv_sge sge = { .addr = (uintptr_t)buf[0], .length = 64, .lkey = mr[0]->lkey };
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(qp[0], &swr, &bad);
	CHECK(rc == EINVAL && bad == &swr, "a send on a QP in RESET is EINVAL, bad_wr the first", rc);

	to_rts(qp[0], qp[1]->qp_num, &gid);
	to_rts(qp[1], qp[0]->qp_num, &gid);

	/* a receive queue of 2: the third receive of a chain is refused with ENOMEM, the first two are posted */
	struct ibv_sge rsge = { .addr = (uintptr_t)buf[1], .length = 4096, .lkey = mr[1]->lkey };
	struct ibv_recv_wr r[3];
	for (int i = 0; i < 3; i++)
		r[i] = (struct ibv_recv_wr){ .wr_id = 100 + i, .sg_list = &rsge, .num_sge = 1, .next = i < 2 ? &r[i + 1] : NULL };
	struct ibv_recv_wr *rbad = NULL;
	rc = ibv_post_recv(qp[1], &r[0], &rbad);
	CHECK(rc == ENOMEM && rbad == &r[2], "a full receive queue is ENOMEM, bad_wr the third", rc);

	/* a chain whose second WR has more SGEs than max_send_sge: the first is posted, bad_wr is the second (an
	 * SGE that names no region is no reason to stop: sge_faults) */
	memset(buf[0], 0x5a, 64);
	struct ibv_sge twosge[2] = { sge, sge };
	struct ibv_send_wr second = swr;
	second.wr_id = 2;
	second.sg_list = twosge;
	second.num_sge = 2;
	struct ibv_send_wr first = swr;
	first.next = &second;
	rc = ibv_post_send(qp[0], &first, &bad);
	CHECK(rc == EINVAL && bad == &second, "too many SGEs stop the chain at that WR", rc);

	/* the first WR was posted: a SEND of 64 bytes of 0x5a, received into buf[1] */
	int sends = 0, recvs = 0;
	while (sends + recvs < 2) {
		CHECK(poll_one(cq, &wc) == 1, "a completion", 0);
		if (wc.status != IBV_WC_SUCCESS)
			fail(ibv_wc_status_str(wc.status), (int)wc.status);
		if (wc.opcode == IBV_WC_SEND && wc.wr_id == 1)
			sends++;
		else if (wc.opcode == IBV_WC_RECV && wc.wr_id == 100 && wc.byte_len == 64)
			recvs++;
		else
			fail("an unexpected completion", (int)wc.opcode);
	}
	int same = 1;
	for (int i = 0; i < 64; i++)
		same &= buf[1][i] == 0x5a;
	CHECK(same, "SEND: the receiver's buffer holds the sender's bytes", 0);

	/* RDMA WRITE of 4096 bytes into the other QP's region: it lands in the program's own buffer */
	for (int i = 0; i < 4096; i++)
		buf[0][i] = (char)(i * 7 + 3);
	struct ibv_sge wsge = { .addr = (uintptr_t)buf[0], .length = 4096, .lkey = mr[0]->lkey };
	struct ibv_send_wr w = { .wr_id = 3, .sg_list = &wsge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED };
	w.wr.rdma.remote_addr = (uintptr_t)buf[1] + 4096;
	w.wr.rdma.rkey = mr[1]->rkey;
	rc = ibv_post_send(qp[0], &w, &bad);
	CHECK(rc == 0, "post RDMA WRITE", rc);
	CHECK(poll_one(cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 3 && wc.opcode == IBV_WC_RDMA_WRITE,
	      "RDMA WRITE completes", (int)wc.status);
	CHECK(memcmp(buf[0], buf[1] + 4096, 4096) == 0, "RDMA WRITE: the bytes are in the target's buffer", 0);

	/* an inline SEND from memory no region covers, the lkey ignored (verbs.h, IBV_SEND_INLINE), into the
	 * receive still posted (wr 101) */
	char local[32];
	for (int i = 0; i < 32; i++)
		local[i] = (char)(0xc0 + i);
	struct ibv_sge isge = { .addr = (uintptr_t)local, .length = 32, .lkey = 0 };
	struct ibv_send_wr iwr = { .wr_id = 5, .sg_list = &isge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE };
	rc = ibv_post_send(qp[0], &iwr, &bad);
	CHECK(rc == 0, "post an inline SEND from unregistered memory", rc);
	memset(local, 0, sizeof(local)); /* the data was taken at post time */
	for (int got = 0; got < 2;) {
		CHECK(poll_one(cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && (wc.wr_id == 5 || (wc.wr_id == 101 && wc.byte_len == 32)),
		      "inline SEND: a completion", (int)wc.status);
		got++;
	}
	int inl = 1;
	for (int i = 0; i < 32; i++)
		inl &= buf[1][i] == (char)(0xc0 + i);
	CHECK(inl, "inline SEND: the receiver has the bytes as they were at post time", 0);

	/* an RDMA WRITE with a wrong rkey: the responder refuses it, the requester's QP goes to the error state
	 * and the program hears of it on the context's async_fd (IBV_EVENT_QP_FATAL) */
	w.wr_id = 4;
	w.wr.rdma.rkey = mr[1]->rkey ^ 0x00ff00ff;
	rc = ibv_post_send(qp[0], &w, &bad);
	CHECK(rc == 0, "post RDMA WRITE with a wrong rkey", rc);
	/* the responder's QP fails too (rdma_rxe does the same): its posted receive, wr 101, is flushed */
	do
		CHECK(poll_one(cq, &wc) == 1 && (wc.wr_id == 4 || (wc.wr_id == 101 && wc.status == IBV_WC_WR_FLUSH_ERR)),
		      "a completion of the failed WRITE or the flushed receive", (int)wc.status);
	while (wc.wr_id != 4);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR, "the WRITE completes with a remote access error", (int)wc.status);
	struct ibv_async_event ev;
	int fatal0 = 0;
	for (int i = 0; i < 2 && !fatal0; i++) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		CHECK(poll(&pfd, 1, 30000) == 1, "async_fd becomes readable", errno);
		CHECK(ibv_get_async_event(ctx, &ev) == 0 && ev.event_type == IBV_EVENT_QP_FATAL
		      && (ev.element.qp == qp[0] || ev.element.qp == qp[1]), "ibv_get_async_event: QP_FATAL on a QP", (int)ev.event_type);
		fatal0 = ev.element.qp == qp[0];
		ibv_ack_async_event(&ev);
	}
	CHECK(fatal0, "the requester's QP had QP_FATAL", 0);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	CHECK(ibv_query_qp(qp[0], &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR && qi.cap.max_inline_data == 64,
	      "ibv_query_qp: the QP is in ERR now", (int)qa.qp_state);
	CHECK(qp[0]->events_completed == 1, "ibv_ack_async_event counts on the QP", 0);

	CHECK(ibv_destroy_cq(cq) == EBUSY, "a CQ its QPs still use is EBUSY", EBUSY);
	CHECK(ibv_dealloc_pd(pd) == EBUSY, "a PD with QPs and MRs is EBUSY", EBUSY);
	for (int i = 0; i < 2; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0, "ibv_destroy_qp", errno);
	CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq", errno);
	for (int i = 0; i < 2; i++)
		CHECK(ibv_dereg_mr(mr[i]) == 0, "ibv_dereg_mr", errno);
	CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd", errno);
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device", errno);
	ibv_free_device_list(list);
	printf("all ok\n");
	return 0;
}
