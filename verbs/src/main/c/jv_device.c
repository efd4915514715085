/*
 * The device list, opening a device, and the device, port and GID queries. All of these are answered in C
 * from the device's address and its interface: listing or querying the device (ibv_devices, ibv_devinfo)
 * starts no JVM and binds no socket, so it never disturbs a program already using the address.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "jv.h"

/* rdma_rxe's bound on the headers of one packet, taken off the interface MTU before it is rounded down to an
 * IB MTU (rxe_param.h, eth_mtu_int_to_enum). */
#define JV_MAX_HDR_LENGTH 80

static struct jv_device the_device;
static int device_state; /* 0 not looked up, 1 present, -1 absent */
static pthread_once_t device_once = PTHREAD_ONCE_INIT;

static enum ibv_mtu mtu_enum(int bytes)
{
	if (bytes >= 4096) return IBV_MTU_4096;
	if (bytes >= 2048) return IBV_MTU_2048;
	if (bytes >= 1024) return IBV_MTU_1024;
	if (bytes >= 512) return IBV_MTU_512;
	return IBV_MTU_256;
}

static int same_prefix(const unsigned char *a, const unsigned char *b, const unsigned char *mask, int len)
{
	for (int i = 0; i < len; i++)
		if ((a[i] & mask[i]) != (b[i] & mask[i]))
			return 0;
	return 1;
}

/* True when the host may bind the address (one of its own, or one of a local range such as 127/8). */
static int bindable(int family, const void *addr)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int ok, s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return 0;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, addr, 4);
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, addr, 16);
		len = sizeof(*in6);
	}
	ok = bind(s, (struct sockaddr *)&ss, len) == 0;
	close(s);
	return ok;
}

/* The interface holding the address: the one carrying it, else (an address of a local range such as
 * 127.0.0.2, which the host binds without it being configured) the one whose prefix covers it. Then its
 * index, MTU and MAC (all zero for loopback). */
static int find_interface(struct jv_device *d, const unsigned char *addr, unsigned char mac[6])
{
	struct ifaddrs *list, *ifa;
	int len = d->family == AF_INET ? 4 : 16;
	int found = 0;

	if (!bindable(d->family, addr) || getifaddrs(&list) != 0)
		return -1;
	for (int pass = 0; pass < 2 && !found; pass++) {
		for (ifa = list; ifa != NULL && !found; ifa = ifa->ifa_next) {
			if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != d->family)
				continue;
			const unsigned char *ia, *im;
			if (d->family == AF_INET) {
				ia = (const unsigned char *)&((struct sockaddr_in *)ifa->ifa_addr)->sin_addr;
				im = ifa->ifa_netmask ? (const unsigned char *)&((struct sockaddr_in *)ifa->ifa_netmask)->sin_addr : NULL;
			} else {
				ia = (const unsigned char *)&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
				im = ifa->ifa_netmask ? (const unsigned char *)&((struct sockaddr_in6 *)ifa->ifa_netmask)->sin6_addr : NULL;
			}
			found = pass == 0 ? memcmp(ia, addr, len) == 0 : im != NULL && same_prefix(ia, addr, im, len);
			if (found)
				snprintf(d->ifname, sizeof(d->ifname), "%s", ifa->ifa_name);
		}
	}
	freeifaddrs(list);
	if (!found)
		return -1;

	d->ifindex = if_nametoindex(d->ifname);
	d->ifmtu = 1500;
	memset(mac, 0, 6);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		struct ifreq req;
		memset(&req, 0, sizeof(req));
		snprintf(req.ifr_name, sizeof(req.ifr_name), "%s", d->ifname);
		if (ioctl(s, SIOCGIFMTU, &req) == 0)
			d->ifmtu = req.ifr_mtu;
		if (ioctl(s, SIOCGIFHWADDR, &req) == 0)
			memcpy(mac, req.ifr_hwaddr.sa_data, 6);
		close(s);
	}
	return 0;
}

/* Modified EUI-64 from a MAC (RFC 4291 appendix A), as the kernel forms a RoCE device's default GID and
 * node GUID. An interface without a MAC (loopback) gets one from the address's low bytes, locally
 * administered, so two devices on one host still differ. */
static void make_eui64(struct jv_device *d, const unsigned char mac_in[6], const unsigned char *addr, int addrlen)
{
	unsigned char mac[6], eui[8];
	static const unsigned char zero[6];

	memcpy(mac, mac_in, 6);
	if (memcmp(mac, zero, 6) == 0) {
		mac[0] = 0x02;
		mac[1] = 0x00;
		memcpy(mac + 2, addr + addrlen - 4, 4);
	}
	eui[0] = mac[0] ^ 0x02;
	eui[1] = mac[1];
	eui[2] = mac[2];
	eui[3] = 0xff;
	eui[4] = 0xfe;
	eui[5] = mac[3];
	eui[6] = mac[4];
	eui[7] = mac[5];
	memcpy(&d->guid, eui, 8);
}

static void look_up_device(void)
{
	struct jv_device *d = &the_device;
	const char *addr = getenv("JROCE_ADDR");
	unsigned char raw[16], mac[6];

	device_state = -1;
	if (addr == NULL || *addr == '\0') {
		jv_warn("no device: set JROCE_ADDR to the IPv4 or IPv6 address the jroce device binds");
		return;
	}
	memset(d, 0, sizeof(*d));
	if (inet_pton(AF_INET, addr, raw) == 1) {
		d->family = AF_INET;
	} else if (inet_pton(AF_INET6, addr, raw) == 1) {
		d->family = AF_INET6;
	} else {
		jv_warn("no device: JROCE_ADDR=%s is not an IPv4 or IPv6 address", addr);
		return;
	}
	inet_ntop(d->family, raw, d->address, sizeof(d->address));
	if (find_interface(d, raw, mac) != 0) {
		jv_warn("no device: JROCE_ADDR=%s is not an address of this host", d->address);
		return;
	}
	int addrlen = d->family == AF_INET ? 4 : 16;
	make_eui64(d, mac, raw, addrlen);
	d->active_mtu = mtu_enum(d->ifmtu - JV_MAX_HDR_LENGTH);

	/* GID 0: fe80::/64 + EUI-64; GID 1: the address */
	d->gids[0].raw[0] = 0xfe;
	d->gids[0].raw[1] = 0x80;
	memcpy(&d->gids[0].raw[8], &d->guid, 8);
	if (d->family == AF_INET) {
		d->gids[JV_GID_ADDRESS].raw[10] = 0xff;
		d->gids[JV_GID_ADDRESS].raw[11] = 0xff;
		memcpy(&d->gids[JV_GID_ADDRESS].raw[12], raw, 4);
	} else {
		memcpy(d->gids[JV_GID_ADDRESS].raw, raw, 16);
	}

	d->dev.node_type = IBV_NODE_CA;
	d->dev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->dev.name, sizeof(d->dev.name), "%s", JV_DEVICE_NAME);
	snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs_%s", JV_DEVICE_NAME);
	/* no such sysfs directories exist: programs that read sysfs through them find nothing */
	snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs_%s", JV_DEVICE_NAME);
	snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s", JV_DEVICE_NAME);
	device_state = 1;
	jv_debug("device %s on %s (%s, MTU %d)", JV_DEVICE_NAME, d->address, d->ifname, d->ifmtu);
}

struct jv_device *jv_device_get(void)
{
	pthread_once(&device_once, look_up_device);
	return device_state > 0 ? &the_device : NULL;
}

struct jv_context *jv_ctx(struct ibv_context *context)
{
	return (struct jv_context *)((char *)context - offsetof(struct jv_context, vctx.context));
}

static int is_ours(struct ibv_device *device)
{
	return device != NULL && device == &jv_device_get()->dev;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct jv_device *d = jv_device_get();
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (d != NULL)
		list[0] = &d->dev;
	if (num_devices != NULL)
		*num_devices = d != NULL ? 1 : 0;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	return is_ours(device) ? the_device.guid : 0;
}

int ibv_get_device_index(struct ibv_device *device)
{
	return is_ours(device) ? 0 : -1;
}

static int query_port_ex(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr, size_t len);
static int query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
			   struct ibv_device_attr_ex *attr, size_t attr_size);

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	if (!is_ours(device)) {
		errno = ENODEV;
		return NULL;
	}
	struct jv_context *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->device = &the_device;
	struct verbs_context *v = &c->vctx;
	v->sz = sizeof(*v);
	v->query_port = query_port_ex;
	v->query_device_ex = query_device_ex;
	struct ibv_context *ctx = &v->context;
	ctx->device = device;
	jv_install_ops(&ctx->ops);
	ctx->cmd_fd = -1;
	/* a real descriptor, readable while asynchronous events wait: a program may poll it or make it non-blocking */
	ctx->async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE); /* one count per queued event */
	if (ctx->async_fd < 0) {
		int err = errno;
		free(c);
		errno = err;
		return NULL;
	}
	ctx->num_comp_vectors = 1;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	jv_async_open(c);
	return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
	struct jv_context *c = jv_ctx(context);
	jv_async_close(c);
	close(context->async_fd);
	pthread_mutex_destroy(&context->mutex);
	free(c);
	return 0;
}

/* Limits: what the endpoint accepts (QueuePair.validateInit, CompletionQueue, MemoryRegion: a region is one
 * Java ByteBuffer, so at most 2^31 - 1 bytes). */
static void fill_device_attr(const struct jv_device *d, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "jroce %s", JV_VERSION);
	a->node_guid = d->guid;
	a->sys_image_guid = d->guid;
	a->max_mr_size = 0x7fffffff;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = 0xffffff;          /* no IEEE OUI, as rdma_rxe */
	a->vendor_part_id = 0;
	a->hw_ver = 0;
	a->max_qp = 1 << 16;
	a->max_qp_wr = JV_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID;
	a->max_sge = JV_MAX_SGE;
	a->max_sge_rd = JV_MAX_SGE;
	a->max_cq = 1 << 16;
	a->max_cqe = JV_MAX_CQE;
	a->max_mr = 1 << 16;
	a->max_pd = 1 << 16;
	a->max_qp_rd_atom = 128;          /* QueuePair.MAX_RD_ATOMIC, as rxe's RXE_MAX_QP_RD_ATOM */
	a->max_qp_init_rd_atom = 128;
	a->max_res_rd_atom = 128 << 16;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ah = 1 << 16;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	fill_device_attr(jv_ctx(context)->device, attr);
	return 0;
}

static int query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
			   struct ibv_device_attr_ex *attr, size_t attr_size)
{
	(void)input;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(attr, 0, attr_size);
	fill_device_attr(jv_ctx(context)->device, &attr->orig_attr);
	return 0;
}

/* Fills the port's attributes up to and including the field that ends at `len` bytes. */
static int fill_port_attr(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *out, size_t len)
{
	struct ibv_port_attr a;
	const struct jv_device *d = jv_ctx(context)->device;

	if (port_num != 1)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	a.state = IBV_PORT_ACTIVE;
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = d->active_mtu;
	a.gid_tbl_len = JV_GID_COUNT;
	a.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	a.max_msg_sz = 0x80000000u;
	a.pkey_tbl_len = 1;
	a.max_vl_num = 1;
	a.active_width = 1;               /* 1X */
	a.active_speed = 32;              /* EDR (25 Gb/s per lane) */
	a.phys_state = 5;                 /* LinkUp */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(out, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

static int query_port_ex(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr, size_t len)
{
	return fill_port_attr(context, port_num, attr, len);
}

/* The exported symbol is reached only by programs built without the verbs_context path (the inline
 * ibv_query_port of verbs.h goes through verbs_context.query_port): their struct ends at link_layer. */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *attr)
{
	return fill_port_attr(context, port_num, (struct ibv_port_attr *)attr,
			      offsetof(struct ibv_port_attr, link_layer) + 1);
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	const struct jv_device *d = jv_ctx(context)->device;
	if (port_num != 1 || index < 0 || index >= JV_GID_COUNT) {
		errno = EINVAL;
		return -1;
	}
	*gid = d->gids[index];
	return 0;
}

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index, unsigned int *type);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index, unsigned int *type)
{
	(void)context;
	if (port_num != 1 || index >= JV_GID_COUNT) {
		errno = EINVAL;
		return -1;
	}
	*type = JV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	const struct jv_device *d = jv_ctx(context)->device;
	struct ibv_gid_entry e;

	if (flags != 0 || port_num != 1 || entry_size < sizeof(e))
		return EINVAL;
	if (gid_index >= JV_GID_COUNT)
		return ENODATA;
	memset(&e, 0, sizeof(e));
	e.gid = d->gids[gid_index];
	e.gid_index = gid_index;
	e.port_num = port_num;
	e.gid_type = IBV_GID_TYPE_ROCE_V2;
	e.ndev_ifindex = d->ifindex;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	size_t n = 0;
	if (flags != 0 || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	for (uint32_t i = 0; i < JV_GID_COUNT && n < max_entries; i++, n++) {
		int rc = _ibv_query_gid_ex(context, 1, i, (struct ibv_gid_entry *)((char *)entries + n * entry_size),
					   0, entry_size);
		if (rc != 0)
			return -rc;
	}
	return (ssize_t)n;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htons(0xffff); /* the default partition, full membership */
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	(void)context;
	return port_num == 1 && (ntohs(pkey) & 0x7fff) == 0x7fff ? 0 : -1;
}

/* A plain helper some tools use to read sysfs attributes: reads dir/file into buf. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[512];
	FILE *f;
	size_t n;

	if (size == 0 || snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -1;
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return (int)n;
}
