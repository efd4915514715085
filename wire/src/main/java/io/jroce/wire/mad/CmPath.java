package io.jroce.wire.mad;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over one 44-byte path description of a REQ (IBTA 12.6.5 Table 106: the primary path at REQ byte 52,
 * the alternate at byte 96, i.e. MAD offsets 76 and 120): Local Port LID u16 @0, Remote Port LID u16 @2, Local
 * Port GID @4, Remote Port GID @20, Flow Label (bits 31-12 of the word @36), Packet Rate (bits 5-0 of byte 39),
 * Traffic Class @40, Hop Limit @41, SL (bits 7-4 of byte 42), Subnet Local (bit 3 of byte 42), Local ACK Timeout
 * (bits 7-3 of byte 43). "Local" is the REQ sender's side.
 */
public final class CmPath {
    public static final int LENGTH = 44;
    public static final int GID_LENGTH = 16;

    private ByteBuf buf;
    private int off;

    public CmPath wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public int localLid() {
        return buf.getUnsignedShort(off);
    }

    public int remoteLid() {
        return buf.getUnsignedShort(off + 2);
    }

    /** Copies the 16-byte Local Port GID (network order) into dst at dstIndex. */
    public void localGid(byte[] dst, int dstIndex) {
        buf.getBytes(off + 4, dst, dstIndex, GID_LENGTH);
    }

    public void remoteGid(byte[] dst, int dstIndex) {
        buf.getBytes(off + 20, dst, dstIndex, GID_LENGTH);
    }

    public int flowLabel() {
        return buf.getInt(off + 36) >>> 12;
    }

    public int packetRate() {
        return buf.getUnsignedByte(off + 39) & 0x3F;
    }

    public int trafficClass() {
        return buf.getUnsignedByte(off + 40);
    }

    public int hopLimit() {
        return buf.getUnsignedByte(off + 41);
    }

    public int sl() {
        return buf.getUnsignedByte(off + 42) >>> 4;
    }

    public boolean subnetLocal() {
        return (buf.getUnsignedByte(off + 42) & 0x08) != 0;
    }

    public int localAckTimeout() {
        return buf.getUnsignedByte(off + 43) >>> 3;
    }

    public CmPath localLid(int lid) {
        buf.setShort(off, lid);
        return this;
    }

    public CmPath remoteLid(int lid) {
        buf.setShort(off + 2, lid);
        return this;
    }

    public CmPath localGid(byte[] gid) {
        checkGid(gid);
        buf.setBytes(off + 4, gid);
        return this;
    }

    public CmPath remoteGid(byte[] gid) {
        checkGid(gid);
        buf.setBytes(off + 20, gid);
        return this;
    }

    /** Sets the 20-bit flow label; bits 11-0 of the word (reserved, packet rate) are kept. */
    public CmPath flowLabel(int label) {
        int w = buf.getInt(off + 36);
        buf.setInt(off + 36, (label & 0xFFFFF) << 12 | (w & 0xFFF));
        return this;
    }

    public CmPath packetRate(int rate) {
        int b = buf.getUnsignedByte(off + 39);
        buf.setByte(off + 39, (b & 0xC0) | (rate & 0x3F));
        return this;
    }

    public CmPath trafficClass(int tclass) {
        buf.setByte(off + 40, tclass);
        return this;
    }

    public CmPath hopLimit(int hopLimit) {
        buf.setByte(off + 41, hopLimit);
        return this;
    }

    public CmPath sl(int sl) {
        int b = buf.getUnsignedByte(off + 42);
        buf.setByte(off + 42, (b & 0x0F) | (sl & 0xF) << 4);
        return this;
    }

    public CmPath subnetLocal(boolean local) {
        int b = buf.getUnsignedByte(off + 42);
        buf.setByte(off + 42, local ? b | 0x08 : b & ~0x08);
        return this;
    }

    /** Sets bits 7-3 of byte 43; bits 2-0 (reserved, or the REQ's SAP Supported bit after the alternate path) are kept. */
    public CmPath localAckTimeout(int timeout) {
        int b = buf.getUnsignedByte(off + 43);
        buf.setByte(off + 43, (b & 0x07) | (timeout & 0x1F) << 3);
        return this;
    }

    private static void checkGid(byte[] gid) {
        if (gid.length != GID_LENGTH) {
            throw new IllegalArgumentException("a GID is 16 bytes, not " + gid.length);
        }
    }
}
