/*
 * rdmacm_exit SERVER PORT: connects to SERVER:PORT through librdmacm (a synchronous endpoint, rdma_create_ep),
 * prints "connected" and returns from main with the connection up, destroying nothing, as perftest's
 * ib_atomic_lat server does. The peer must still hear that the connection ended (the kernel's rdma_cm sends a DREQ
 * for each id a process leaves open when it exits). Run by CmExitTest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: rdmacm_exit SERVER PORT\n");
		return 2;
	}
	struct rdma_addrinfo hints, *res;
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(argv[1], argv[2], &hints, &res) != 0) {
		fprintf(stderr, "rdma_getaddrinfo: %s\n", strerror(errno));
		return 1;
	}
	struct ibv_qp_init_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	struct rdma_cm_id *id;
	if (rdma_create_ep(&id, res, NULL, &attr) != 0) {
		fprintf(stderr, "rdma_create_ep: %s\n", strerror(errno));
		return 1;
	}
	rdma_freeaddrinfo(res);
	if (rdma_connect(id, NULL) != 0) {
		fprintf(stderr, "rdma_connect: %s\n", strerror(errno));
		return 1;
	}
	printf("connected\n");
	fflush(stdout);
	return 0;
}
