/*
 * The rest of rdma-core's exported verbs, so that every program linked against its libibverbs.so.1 loads with
 * this one (a program built with BIND_NOW needs every function it references): the rate conversions, which
 * need no device, and the verbs jroce's device does not have, answered as libibverbs answers for a provider
 * without them (libibverbs/dummy_ops.c: EOPNOTSUPP), with one line on stderr, once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stddef.h>

#include "jv.h"

/* The static rates of IBA 9.11.1 (PortInfo, path records) as enum ibv_rate, with each one's multiple of 2.5 Gb/s
 * (0: not a multiple, as for the 64b/66b rates) and its data rate in Mb/s. */
static const struct {
	enum ibv_rate rate;
	int mult, mbps;
} rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },      { IBV_RATE_5_GBPS, 2, 5000 },        { IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_20_GBPS, 8, 20000 },      { IBV_RATE_30_GBPS, 12, 30000 },     { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },     { IBV_RATE_80_GBPS, 32, 80000 },     { IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, 0, 14062 },      { IBV_RATE_56_GBPS, 0, 56250 },      { IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 },    { IBV_RATE_25_GBPS, 0, 25781 },      { IBV_RATE_100_GBPS, 0, 103125 },
	{ IBV_RATE_200_GBPS, 0, 206250 },    { IBV_RATE_300_GBPS, 0, 309375 },    { IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },     { IBV_RATE_400_GBPS, 160, 425000 },  { IBV_RATE_600_GBPS, 240, 637500 },
	{ IBV_RATE_800_GBPS, 320, 850000 },  { IBV_RATE_1200_GBPS, 480, 1275000 },
};
#define RATES (sizeof(rates) / sizeof(rates[0]))

int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < RATES; i++)
		if (rates[i].rate == rate && rates[i].mult != 0)
			return rates[i].mult;
	return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < RATES; i++)
		if (mult != 0 && rates[i].mult == mult)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < RATES; i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < RATES; i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/* ------------------------------------------------------------------ verbs jroce's device does not have */

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return JV_UNSUPPORTED("ibv_resize_cq", EOPNOTSUPP);
}

int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length, int access)
{
	errno = JV_UNSUPPORTED("ibv_rereg_mr", EOPNOTSUPP);
	return IBV_REREG_MR_ERR_INPUT; /* the old region stays as it was */
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
	return JV_UNSUPPORTED("ibv_modify_srq (shared receive queues)", EOPNOTSUPP);
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	return JV_UNSUPPORTED("ibv_query_srq (shared receive queues)", EOPNOTSUPP);
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access)
{
	errno = JV_UNSUPPORTED("ibv_reg_dmabuf_mr (dma-buf regions)", EOPNOTSUPP);
	return NULL;
}

/* Importing objects of another process's context needs the uverbs command file they live in: jroce has none. */
struct ibv_context *ibv_import_device(int cmd_fd)
{
	errno = JV_UNSUPPORTED("ibv_import_device", EOPNOTSUPP);
	return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	errno = JV_UNSUPPORTED("ibv_import_pd", EOPNOTSUPP);
	return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	errno = JV_UNSUPPORTED("ibv_import_mr", EOPNOTSUPP);
	return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	errno = JV_UNSUPPORTED("ibv_import_dm (device memory)", EOPNOTSUPP);
	return NULL;
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
}

/* 0: no promise that a message's data lands in order before its completion (what libibverbs gives for a provider
 * that says nothing; the endpoint writes a message's packets as they arrive) */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	return 0;
}

#pragma GCC diagnostic pop
