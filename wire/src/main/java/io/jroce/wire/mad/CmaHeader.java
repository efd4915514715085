package io.jroce.wire.mad;

import io.netty.buffer.ByteBuf;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Flyweight over the header rdma_cm puts at the start of a REQ's private data for the IP port spaces (Linux
 * drivers/infiniband/core/cma.c {@code struct cma_hdr}, {@code cma_format_hdr}; IBTA annex A11 "RDMA IP CM
 * Service"), 36 bytes: CMA version u8 @0 (0), IP version in bits 7-4 of byte 1 (4 or 6), port u16 @2 (the active
 * side's source port), source address @4 and destination address @20, 16 bytes each; an IPv4 address takes the
 * last 4 bytes after 12 zero bytes (not the ::ffff: mapped form). REP, REJ, RTU and DREQ carry no such header.
 *
 * <p>Also the rdma_cm service IDs (cma.c {@code rdma_get_service_id}): {@code (port space << 16) + port}.
 */
public final class CmaHeader {
    public static final int LENGTH = 36;
    /** CMA_VERSION; cma_save_ip_info refuses any other. */
    public static final int CMA_VERSION = 0;
    /** Port spaces (rdma_cma.h enum rdma_ucm_port_space). */
    public static final int PS_TCP = 0x0106;
    public static final int PS_UDP = 0x0111;
    public static final int PS_IB = 0x013F;
    /** RDMA_IB_IP_PS_MASK: the bits of a service ID that name the port space. */
    private static final long PS_MASK = 0xFFFFFFFFFFFF0000L;

    private ByteBuf buf;
    private int off;

    public CmaHeader wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public int cmaVersion() {
        return buf.getUnsignedByte(off);
    }

    /** 4 or 6 in a valid header. */
    public int ipVersion() {
        return buf.getUnsignedByte(off + 1) >>> 4;
    }

    public int port() {
        return buf.getUnsignedShort(off + 2);
    }

    /** Copies the 16-byte source address field into dst at dstIndex. */
    public void sourceField(byte[] dst, int dstIndex) {
        buf.getBytes(off + 4, dst, dstIndex, 16);
    }

    public void destinationField(byte[] dst, int dstIndex) {
        buf.getBytes(off + 20, dst, dstIndex, 16);
    }

    /** The source address per {@link #ipVersion()}: the last 4 bytes for 4, all 16 for 6; null for other versions. */
    public InetAddress sourceAddress() {
        return address(off + 4);
    }

    public InetAddress destinationAddress() {
        return address(off + 20);
    }

    /**
     * Writes all 36 bytes as cma_format_hdr does: version 0, the IP version of the addresses, the port, and the
     * addresses (IPv4 ones after 12 zero bytes). Both addresses must be of the same family.
     */
    public CmaHeader write(int port, InetAddress src, InetAddress dst) {
        if ((src instanceof Inet4Address) != (dst instanceof Inet4Address)) {
            throw new IllegalArgumentException("source and destination must both be IPv4 or both IPv6");
        }
        boolean v4 = src instanceof Inet4Address;
        buf.setZero(off, LENGTH);
        buf.setByte(off, CMA_VERSION);
        buf.setByte(off + 1, (v4 ? 4 : 6) << 4);
        buf.setShort(off + 2, port);
        buf.setBytes(off + (v4 ? 16 : 4), src.getAddress());
        buf.setBytes(off + (v4 ? 32 : 20), dst.getAddress());
        return this;
    }

    private InetAddress address(int at) {
        byte[] a;
        switch (ipVersion()) {
            case 4 -> {
                a = new byte[4];
                buf.getBytes(at + 12, a);
            }
            case 6 -> {
                a = new byte[16];
                buf.getBytes(at, a);
            }
            default -> {
                return null;
            }
        }
        try {
            return toAddress(a);
        } catch (UnknownHostException e) {
            throw new AssertionError(e); // 4 or 16 bytes are always valid
        }
    }

    private static InetAddress toAddress(byte[] a) throws UnknownHostException {
        // InetAddress.getByAddress would turn a ::ffff:a.b.c.d IPv6 field into an Inet4Address; keep the family
        return a.length == 16 ? Inet6Address.getByAddress(null, a, -1) : InetAddress.getByAddress(a);
    }

    /** The rdma_cm service ID of a port in a port space: {@code (ps << 16) + port}. */
    public static long serviceId(int portSpace, int port) {
        return ((long) (portSpace & 0xFFFF) << 16) + (port & 0xFFFF);
    }

    /** The port space of an rdma_cm IP service ID (TCP, UDP or IB), or -1 if the ID is not one. */
    public static int portSpace(long serviceId) {
        long ps = serviceId & PS_MASK;
        if (ps == (long) PS_TCP << 16 || ps == (long) PS_UDP << 16 || ps == (long) PS_IB << 16) {
            return (int) (ps >>> 16);
        }
        return -1;
    }

    /** The port of an rdma_cm service ID: its low 16 bits (cma.c cma_port_from_service_id). */
    public static int port(long serviceId) {
        return (int) (serviceId & 0xFFFF);
    }
}
