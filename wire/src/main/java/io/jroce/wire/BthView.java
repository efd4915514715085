package io.jroce.wire;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over a Base Transport Header (IBA 9.2; rxe_hdr.h {@code struct rxe_bth}; 12 bytes, big-endian).
 *
 * <pre>
 * byte 0     OpCode
 * byte 1     SE(7) MigReq(6) PadCnt(5..4) TVer(3..0)
 * bytes 2-3  P_Key
 * byte 4     FECN(7) BECN(6) resv6a  -- the whole byte is masked out of the ICRC
 * bytes 5-7  DestQP
 * byte 8     AckReq(7) resv7(6..0)
 * bytes 9-11 PSN
 * </pre>
 *
 * One instance is reused: {@link #wrap} points it at a header; getters and setters use absolute
 * {@link ByteBuf} accessors and never move the reader or writer index. Setters truncate values to the
 * field width (so PSN arithmetic may hand in unmasked sums).
 */
public final class BthView {
    public static final int LENGTH = 12;

    private static final int SE = 0x80;
    private static final int MIG_REQ = 0x40;
    private static final int FECN = 0x80;
    private static final int BECN = 0x40;
    private static final int ACK_REQ = 0x80;

    private ByteBuf buf;
    private int off;

    public BthView wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public ByteBuf buffer() {
        return buf;
    }

    public int offset() {
        return off;
    }

    public int opcode() {
        return buf.getUnsignedByte(off);
    }

    public boolean se() {
        return (buf.getByte(off + 1) & SE) != 0;
    }

    public boolean migReq() {
        return (buf.getByte(off + 1) & MIG_REQ) != 0;
    }

    public int padCount() {
        return (buf.getByte(off + 1) >>> 4) & 3;
    }

    public int tver() {
        return buf.getByte(off + 1) & 0x0F;
    }

    public int pkey() {
        return buf.getUnsignedShort(off + 2);
    }

    public boolean fecn() {
        return (buf.getByte(off + 4) & FECN) != 0;
    }

    public boolean becn() {
        return (buf.getByte(off + 4) & BECN) != 0;
    }

    public int destQp() {
        return buf.getInt(off + 4) & 0xFFFFFF;
    }

    public boolean ackReq() {
        return (buf.getByte(off + 8) & ACK_REQ) != 0;
    }

    public int reserved7() {
        return buf.getByte(off + 8) & 0x7F;
    }

    public int psn() {
        return buf.getInt(off + 8) & Psn.MASK;
    }

    /**
     * Writes all 12 bytes. TVer is 0 (the only defined version), byte 4 (FECN, BECN, resv6a) is 0 since only
     * switches set FECN and only CNPs set BECN ({@link #becn(boolean)}), and resv7 is 0.
     */
    public BthView write(int opcode, boolean se, boolean migReq, int padCount, int pkey, int destQp,
                         boolean ackReq, int psn) {
        int b1 = (se ? SE : 0) | (migReq ? MIG_REQ : 0) | (padCount & 3) << 4;
        buf.setInt(off, (opcode & 0xFF) << 24 | b1 << 16 | (pkey & 0xFFFF));
        buf.setInt(off + 4, destQp & 0xFFFFFF);
        buf.setInt(off + 8, (ackReq ? 1 << 31 : 0) | (psn & Psn.MASK));
        return this;
    }

    public BthView opcode(int opcode) {
        buf.setByte(off, opcode);
        return this;
    }

    public BthView se(boolean se) {
        return setBit(off + 1, SE, se);
    }

    public BthView migReq(boolean migReq) {
        return setBit(off + 1, MIG_REQ, migReq);
    }

    public BthView padCount(int padCount) {
        int b = buf.getByte(off + 1);
        buf.setByte(off + 1, (b & ~0x30) | (padCount & 3) << 4);
        return this;
    }

    public BthView tver(int tver) {
        int b = buf.getByte(off + 1);
        buf.setByte(off + 1, (b & ~0x0F) | (tver & 0x0F));
        return this;
    }

    public BthView pkey(int pkey) {
        buf.setShort(off + 2, pkey);
        return this;
    }

    public BthView fecn(boolean fecn) {
        return setBit(off + 4, FECN, fecn);
    }

    public BthView becn(boolean becn) {
        return setBit(off + 4, BECN, becn);
    }

    public BthView destQp(int destQp) {
        buf.setMedium(off + 5, destQp);
        return this;
    }

    public BthView ackReq(boolean ackReq) {
        return setBit(off + 8, ACK_REQ, ackReq);
    }

    public BthView psn(int psn) {
        buf.setMedium(off + 9, psn);
        return this;
    }

    private BthView setBit(int index, int mask, boolean on) {
        int b = buf.getByte(index);
        buf.setByte(index, on ? b | mask : b & ~mask);
        return this;
    }
}
