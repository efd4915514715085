package io.jroce.wire;

import io.netty.buffer.ByteBuf;

/**
 * Reusable decoder: {@link #decode} checks a RoCEv2 UDP payload and points the header views at it. One
 * instance per thread, reused for every datagram; nothing is allocated per packet. The views read the
 * buffer lazily, so they are valid until the buffer is released or rewritten. After a failed decode only
 * {@link #buffer()}, {@link #offset()} and {@link #length()} are meaningful.
 *
 * <p>The ICRC is not checked here: see {@link Icrc}.
 */
public final class RocePacket {
    private final BthView bth = new BthView();
    private final RethView rethView = new RethView();
    private final AethView aethView = new AethView();
    private final AtomicEthView atomicEthView = new AtomicEthView();
    private final AtomicAckEthView atomicAckEthView = new AtomicAckEthView();
    private final ImmDtView immDtView = new ImmDtView();
    private final IethView iethView = new IethView();
    private final DethView dethView = new DethView();

    private ByteBuf buf;
    private int off;
    private int len;
    private Opcode opcode;
    private int payloadLength;

    // The views of the headers the last decoded opcode carries; null when absent.
    private RethView reth;
    private AethView aeth;
    private AtomicEthView atomicEth;
    private AtomicAckEthView atomicAckEth;
    private ImmDtView immDt;
    private IethView ieth;
    private DethView deth;

    /**
     * Decodes the UDP payload buf[off, off+len) (BTH .. ICRC inclusive). Never throws and never reads outside
     * the slice. A slice that does not lie inside the buffer's capacity is reported as {@link Problem#TOO_SHORT}
     * (its bytes are not all there).
     *
     * <p>Checks, in order: length for BTH+ICRC, TVer 0 (the only defined version; rxe_recv.c {@code hdr_check} drops others), a known opcode,
     * length for the opcode's headers+ICRC, pad not larger than what follows the headers, and the payload
     * rules: no bytes at all between headers and ICRC for opcodes without payload; at least one payload byte
     * on FIRST/MIDDLE/LAST (only ONLY may be empty); pad 0 on FIRST/MIDDLE, whose payload is exactly one PMTU
     * (a multiple of 4). Whether FIRST/MIDDLE payload equals the PMTU is the QP's business.
     */
    public Problem decode(ByteBuf buf, int off, int len) {
        this.buf = buf;
        this.off = off;
        this.len = len;
        this.opcode = null;
        if (buf == null || off < 0 || len < BthView.LENGTH + RoceV2.ICRC_LENGTH || len > buf.capacity() - off) {
            return Problem.TOO_SHORT;
        }
        int b1 = buf.getByte(off + 1);
        if ((b1 & 0x0F) != 0) {
            return Problem.BAD_TVER;
        }
        Opcode op = Opcode.of(buf.getUnsignedByte(off));
        if (op == null) {
            return Problem.UNKNOWN_OPCODE;
        }
        int afterHeaders = len - op.headerLength() - RoceV2.ICRC_LENGTH;
        if (afterHeaders < 0) {
            return Problem.TRUNCATED_HEADERS;
        }
        int pad = (b1 >>> 4) & 3;
        if (pad > afterHeaders) {
            return Problem.PAD_EXCEEDS_PAYLOAD;
        }
        int payload = afterHeaders - pad;
        if (!payloadAllowed(op, afterHeaders, payload, pad)) {
            return Problem.BAD_PAYLOAD_LENGTH;
        }
        this.opcode = op;
        this.payloadLength = payload;
        bth.wrap(buf, off);
        reth = op.hasReth() ? rethView.wrap(buf, off + op.rethOffset()) : null;
        aeth = op.hasAeth() ? aethView.wrap(buf, off + op.aethOffset()) : null;
        atomicEth = op.hasAtomicEth() ? atomicEthView.wrap(buf, off + op.atomicEthOffset()) : null;
        atomicAckEth = op.hasAtomicAckEth() ? atomicAckEthView.wrap(buf, off + op.atomicAckEthOffset()) : null;
        immDt = op.hasImmDt() ? immDtView.wrap(buf, off + op.immDtOffset()) : null;
        ieth = op.hasIeth() ? iethView.wrap(buf, off + op.iethOffset()) : null;
        deth = op.hasDeth() ? dethView.wrap(buf, off + op.dethOffset()) : null;
        return Problem.NONE;
    }

    private static boolean payloadAllowed(Opcode op, int afterHeaders, int payload, int pad) {
        if (!op.hasPayload()) {
            return afterHeaders == 0;
        }
        switch (op.position()) {
            case FIRST:
            case MIDDLE:
                return payload > 0 && pad == 0;
            case LAST:
                return payload > 0;
            default:
                return true;
        }
    }

    /** The decoded opcode; null if the last decode failed. */
    public Opcode opcode() {
        return opcode;
    }

    public int psn() {
        return bth.psn();
    }

    public int destQp() {
        return bth.destQp();
    }

    public boolean ackReq() {
        return bth.ackReq();
    }

    public boolean se() {
        return bth.se();
    }

    public int padCount() {
        return bth.padCount();
    }

    public int pkey() {
        return bth.pkey();
    }

    public BthView bth() {
        return bth;
    }

    /** Null if the opcode carries no RETH; likewise for the other extension headers. */
    public RethView reth() {
        return reth;
    }

    public AethView aeth() {
        return aeth;
    }

    public AtomicEthView atomicEth() {
        return atomicEth;
    }

    public AtomicAckEthView atomicAckEth() {
        return atomicAckEth;
    }

    public ImmDtView immDt() {
        return immDt;
    }

    public IethView ieth() {
        return ieth;
    }

    public DethView deth() {
        return deth;
    }

    /** Absolute buffer index of the first payload byte. */
    public int payloadOffset() {
        return off + opcode.headerLength();
    }

    /** Payload bytes, excluding pad. */
    public int payloadLength() {
        return payloadLength;
    }

    /** Absolute buffer index of the 4 ICRC bytes. */
    public int icrcOffset() {
        return off + len - RoceV2.ICRC_LENGTH;
    }

    public ByteBuf buffer() {
        return buf;
    }

    public int offset() {
        return off;
    }

    public int length() {
        return len;
    }
}
