/*
 * What an id knows of the device and the network: the device's verbs context (libibverbs' jroce0, one for every
 * id) and the id's route (addresses, ports, GIDs) as the agent knows it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "rc.h"

/* ------------------------------------------------------------------ the device's verbs context */

static pthread_once_t verbs_once = PTHREAD_ONCE_INIT;
static struct ibv_context *verbs;

/* One context of the device for every id, open for the life of the process (as rdma-core keeps its devices'). */
static void open_verbs(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (list == NULL)
		return;
	if (n > 0)
		verbs = ibv_open_device(list[0]);
	ibv_free_device_list(list);
}

struct ibv_context *rc_verbs(void)
{
	pthread_once(&verbs_once, open_verbs);
	return verbs;
}

/* ------------------------------------------------------------------ addresses */

static void put_addr(struct sockaddr_storage *ss, const jbyte *addr, int len, int port)
{
	memset(ss, 0, sizeof(*ss));
	if (len == 4) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		memcpy(&in->sin_addr, addr, 4);
	} else if (len == 16) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		memcpy(&in6->sin6_addr, addr, 16);
	}
}

/* The RoCE v2 GID of an address: IPv4-mapped for IPv4 (as the device's GID 1). */
static void put_gid(union ibv_gid *gid, const jbyte *addr, int len)
{
	memset(gid, 0, sizeof(*gid));
	if (len == 4) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, addr, 4);
	} else if (len == 16) {
		memcpy(gid->raw, addr, 16);
	}
}

/* The id's route as the agent knows it now: source and destination addresses, ports and GIDs. */
void rc_refresh_addr(JNIEnv *env, struct rc_id *id)
{
	jintArray ports = (*env)->NewIntArray(env, 2);
	jbyteArray local = (*env)->NewByteArray(env, 16);
	jbyteArray remote = (*env)->NewByteArray(env, 16);
	if (ports == NULL || local == NULL || remote == NULL) {
		(*env)->ExceptionClear(env);
		goto out; /* the route stays as it was */
	}
	jint lens = (*env)->CallStaticIntMethod(env, rc_java.cls, rc_java.address, (jint)id->handle, ports, local, remote);
	if (rc_exception(env, "the id's addresses") == 0) {
		jint p[2];
		jbyte l[16], r[16];
		(*env)->GetIntArrayRegion(env, ports, 0, 2, p);
		(*env)->GetByteArrayRegion(env, local, 0, 16, l);
		(*env)->GetByteArrayRegion(env, remote, 0, 16, r);
		struct rdma_addr *a = &id->id.route.addr;
		int llen = lens >> 8, rlen = lens & 0xff;
		put_addr(&a->src_storage, l, llen, p[0]);
		put_gid(&a->addr.ibaddr.sgid, l, llen);
		a->addr.ibaddr.pkey = htons(0xffff);
		if (rlen > 0) {
			put_addr(&a->dst_storage, r, rlen, p[1]);
			put_gid(&a->addr.ibaddr.dgid, r, rlen);
		}
		id->path.sgid = a->addr.ibaddr.sgid;
		id->path.dgid = a->addr.ibaddr.dgid;
		id->path.pkey = a->addr.ibaddr.pkey;
	}
out:
	if (ports != NULL)
		(*env)->DeleteLocalRef(env, ports);
	if (local != NULL)
		(*env)->DeleteLocalRef(env, local);
	if (remote != NULL)
		(*env)->DeleteLocalRef(env, remote);
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	RC_ID_OR(id, 0);
	struct rdma_addr *a = &id->route.addr;
	return a->src_addr.sa_family == AF_INET6 ? a->src_sin6.sin6_port : a->src_sin.sin_port;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	RC_ID_OR(id, 0);
	struct rdma_addr *a = &id->route.addr;
	return a->dst_addr.sa_family == AF_INET6 ? a->dst_sin6.sin6_port : a->dst_sin.sin_port;
}
