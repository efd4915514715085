/*
 * rdma-core's provider interface (version node IBVERBS_PRIVATE_34). perftest links the direct-verbs provider
 * libraries (libmlx5, libefa) itself; they bind these symbols (BIND_NOW) and, when loaded, register with
 * libibverbs from a constructor. So the symbols exist here: registration is accepted and ignored (jroce
 * has no hardware devices, so no provider is ever asked for a context), and the rest, which only a
 * provider's own device context could reach, stop the program with a message should they ever run.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "jv.h"

/* read by providers when a device is disassociated (never, here) */
bool verbs_allow_disassociate_destroy;

void verbs_register_driver_34(const void *ops);
void verbs_register_driver_34(const void *ops)
{
	(void)ops;
	jv_debug("a hardware provider registered itself: jroce has no device for it");
}

void __verbs_log(void *ctx, unsigned int level, const char *fmt, ...);
void __verbs_log(void *ctx, unsigned int level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

static void unreachable(const char *name) __attribute__((noreturn));
static void unreachable(const char *name)
{
	jv_warn("%s: a hardware provider's internal call reached jroce's libibverbs, which has no hardware devices", name);
	abort();
}

#define JV_PROVIDER_ENTRY(name) \
	void name(void);        \
	void name(void) { unreachable(#name); }

JV_PROVIDER_ENTRY(_verbs_init_and_alloc_context)
JV_PROVIDER_ENTRY(execute_ioctl)
JV_PROVIDER_ENTRY(ibv_cmd_advise_mr)
JV_PROVIDER_ENTRY(ibv_cmd_alloc_dm)
JV_PROVIDER_ENTRY(ibv_cmd_alloc_mw)
JV_PROVIDER_ENTRY(ibv_cmd_alloc_pd)
JV_PROVIDER_ENTRY(ibv_cmd_attach_mcast)
JV_PROVIDER_ENTRY(ibv_cmd_close_xrcd)
JV_PROVIDER_ENTRY(ibv_cmd_create_ah)
JV_PROVIDER_ENTRY(ibv_cmd_create_counters)
JV_PROVIDER_ENTRY(ibv_cmd_create_cq_ex)
JV_PROVIDER_ENTRY(ibv_cmd_create_flow)
JV_PROVIDER_ENTRY(ibv_cmd_create_flow_action_esp)
JV_PROVIDER_ENTRY(ibv_cmd_create_qp_ex)
JV_PROVIDER_ENTRY(ibv_cmd_create_qp_ex2)
JV_PROVIDER_ENTRY(ibv_cmd_create_rwq_ind_table)
JV_PROVIDER_ENTRY(ibv_cmd_create_srq)
JV_PROVIDER_ENTRY(ibv_cmd_create_srq_ex)
JV_PROVIDER_ENTRY(ibv_cmd_create_wq)
JV_PROVIDER_ENTRY(ibv_cmd_dealloc_mw)
JV_PROVIDER_ENTRY(ibv_cmd_dealloc_pd)
JV_PROVIDER_ENTRY(ibv_cmd_dereg_mr)
JV_PROVIDER_ENTRY(ibv_cmd_destroy_ah)
JV_PROVIDER_ENTRY(ibv_cmd_destroy_counters)
JV_PROVIDER_ENTRY(ibv_cmd_destroy_cq)
JV_PROVIDER_ENTRY(ibv_cmd_destroy_flow)
JV_PROVIDER_ENTRY(ibv_cmd_destroy_flow_action)
JV_PROVIDER_ENTRY(ibv_cmd_destroy_qp)
JV_PROVIDER_ENTRY(ibv_cmd_destroy_rwq_ind_table)
JV_PROVIDER_ENTRY(ibv_cmd_destroy_srq)
JV_PROVIDER_ENTRY(ibv_cmd_destroy_wq)
JV_PROVIDER_ENTRY(ibv_cmd_detach_mcast)
JV_PROVIDER_ENTRY(ibv_cmd_free_dm)
JV_PROVIDER_ENTRY(ibv_cmd_get_context)
JV_PROVIDER_ENTRY(ibv_cmd_modify_cq)
JV_PROVIDER_ENTRY(ibv_cmd_modify_flow_action_esp)
JV_PROVIDER_ENTRY(ibv_cmd_modify_qp)
JV_PROVIDER_ENTRY(ibv_cmd_modify_qp_ex)
JV_PROVIDER_ENTRY(ibv_cmd_modify_srq)
JV_PROVIDER_ENTRY(ibv_cmd_modify_wq)
JV_PROVIDER_ENTRY(ibv_cmd_open_qp)
JV_PROVIDER_ENTRY(ibv_cmd_open_xrcd)
JV_PROVIDER_ENTRY(ibv_cmd_query_context)
JV_PROVIDER_ENTRY(ibv_cmd_query_device_any)
JV_PROVIDER_ENTRY(ibv_cmd_query_mr)
JV_PROVIDER_ENTRY(ibv_cmd_query_port)
JV_PROVIDER_ENTRY(ibv_cmd_query_qp)
JV_PROVIDER_ENTRY(ibv_cmd_query_srq)
JV_PROVIDER_ENTRY(ibv_cmd_read_counters)
JV_PROVIDER_ENTRY(ibv_cmd_reg_dm_mr)
JV_PROVIDER_ENTRY(ibv_cmd_reg_dmabuf_mr)
JV_PROVIDER_ENTRY(ibv_cmd_reg_mr)
JV_PROVIDER_ENTRY(ibv_cmd_rereg_mr)
JV_PROVIDER_ENTRY(ibv_cmd_resize_cq)
JV_PROVIDER_ENTRY(verbs_init_cq)
JV_PROVIDER_ENTRY(verbs_open_device)
JV_PROVIDER_ENTRY(verbs_set_ops)
JV_PROVIDER_ENTRY(verbs_uninit_context)
