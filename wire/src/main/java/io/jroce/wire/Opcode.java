package io.jroce.wire;

import static io.jroce.wire.Opcode.Ext.AETH;
import static io.jroce.wire.Opcode.Ext.ATOMIC_ACK_ETH;
import static io.jroce.wire.Opcode.Ext.ATOMIC_ETH;
import static io.jroce.wire.Opcode.Ext.CNP_RESERVED;
import static io.jroce.wire.Opcode.Ext.DETH;
import static io.jroce.wire.Opcode.Ext.IETH;
import static io.jroce.wire.Opcode.Ext.IMM_DT;
import static io.jroce.wire.Opcode.Ext.NONE;
import static io.jroce.wire.Opcode.Ext.RETH;

/**
 * The BTH opcodes jroce speaks: RC, UD SEND and CNP. Names follow Linux {@code include/rdma/ib_pack.h}
 * without the {@code IB_OPCODE_} prefix; the values and header layouts are the IBTA opcode table as implemented by
 * rdma_rxe ({@code rxe_opcode.c} {@code rxe_opcode[]}). UC, RD, FLUSH and ATOMIC_WRITE are not supported:
 * {@link #of(int)} returns null for them, like for reserved values.
 *
 * <p>Header layout is precomputed per constant (offsets, lengths), so the hot-path accessors are field reads.
 */
public enum Opcode {
    RC_SEND_FIRST(0x00, Operation.SEND, Position.FIRST, NONE),
    RC_SEND_MIDDLE(0x01, Operation.SEND, Position.MIDDLE, NONE),
    RC_SEND_LAST(0x02, Operation.SEND, Position.LAST, NONE),
    RC_SEND_LAST_WITH_IMMEDIATE(0x03, Operation.SEND, Position.LAST, IMM_DT),
    RC_SEND_ONLY(0x04, Operation.SEND, Position.ONLY, NONE),
    RC_SEND_ONLY_WITH_IMMEDIATE(0x05, Operation.SEND, Position.ONLY, IMM_DT),
    RC_RDMA_WRITE_FIRST(0x06, Operation.RDMA_WRITE, Position.FIRST, RETH),
    RC_RDMA_WRITE_MIDDLE(0x07, Operation.RDMA_WRITE, Position.MIDDLE, NONE),
    RC_RDMA_WRITE_LAST(0x08, Operation.RDMA_WRITE, Position.LAST, NONE),
    RC_RDMA_WRITE_LAST_WITH_IMMEDIATE(0x09, Operation.RDMA_WRITE, Position.LAST, IMM_DT),
    RC_RDMA_WRITE_ONLY(0x0A, Operation.RDMA_WRITE, Position.ONLY, RETH),
    RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE(0x0B, Operation.RDMA_WRITE, Position.ONLY, RETH | IMM_DT),
    RC_RDMA_READ_REQUEST(0x0C, Operation.RDMA_READ_REQUEST, Position.ONLY, RETH),
    RC_RDMA_READ_RESPONSE_FIRST(0x0D, Operation.RDMA_READ_RESPONSE, Position.FIRST, AETH),
    /** The only READ response without an AETH (rxe_opcode.c gives MIDDLE no AETH). */
    RC_RDMA_READ_RESPONSE_MIDDLE(0x0E, Operation.RDMA_READ_RESPONSE, Position.MIDDLE, NONE),
    RC_RDMA_READ_RESPONSE_LAST(0x0F, Operation.RDMA_READ_RESPONSE, Position.LAST, AETH),
    RC_RDMA_READ_RESPONSE_ONLY(0x10, Operation.RDMA_READ_RESPONSE, Position.ONLY, AETH),
    RC_ACKNOWLEDGE(0x11, Operation.ACKNOWLEDGE, Position.ONLY, AETH),
    RC_ATOMIC_ACKNOWLEDGE(0x12, Operation.ATOMIC_ACKNOWLEDGE, Position.ONLY, AETH | ATOMIC_ACK_ETH),
    RC_COMPARE_SWAP(0x13, Operation.COMPARE_SWAP, Position.ONLY, ATOMIC_ETH),
    RC_FETCH_ADD(0x14, Operation.FETCH_ADD, Position.ONLY, ATOMIC_ETH),
    RC_SEND_LAST_WITH_INVALIDATE(0x16, Operation.SEND, Position.LAST, IETH),
    RC_SEND_ONLY_WITH_INVALIDATE(0x17, Operation.SEND, Position.ONLY, IETH),
    UD_SEND_ONLY(0x64, Operation.SEND, Position.ONLY, DETH),
    UD_SEND_ONLY_WITH_IMMEDIATE(0x65, Operation.SEND, Position.ONLY, DETH | IMM_DT),
    /** RoCEv2 CNP (IBA RoCEv2 annex A17, congestion notification; scapy {@code cnp()}): BTH followed by 16 reserved bytes, counted here as header. */
    CNP(0x81, Operation.CNP, Position.ONLY, CNP_RESERVED);

    /** Extension header bits; a nested class so the enum constructors may use them. */
    static final class Ext {
        static final int NONE = 0;
        static final int DETH = 1;
        static final int RETH = 1 << 1;
        static final int ATOMIC_ETH = 1 << 2;
        static final int AETH = 1 << 3;
        static final int ATOMIC_ACK_ETH = 1 << 4;
        static final int IMM_DT = 1 << 5;
        static final int IETH = 1 << 6;
        static final int CNP_RESERVED = 1 << 7;

        private Ext() {
        }
    }

    /** Bytes of reserved zeros after a CNP's BTH (annex A17.9.3). */
    static final int CNP_RESERVED_LENGTH = 16;

    private static final Opcode[] BY_CODE = new Opcode[256];

    static {
        for (Opcode op : values()) {
            BY_CODE[op.code] = op;
        }
    }

    private final int code;
    private final Operation operation;
    private final Position position;
    private final int ext;
    private final int headerLength;
    private final int rethOffset;
    private final int aethOffset;
    private final int atomicEthOffset;
    private final int atomicAckEthOffset;
    private final int immDtOffset;
    private final int iethOffset;
    private final int dethOffset;

    Opcode(int code, Operation operation, Position position, int ext) {
        this.code = code;
        this.operation = operation;
        this.position = position;
        this.ext = ext;
        // Extension headers follow the BTH in a fixed order (IBTA; rxe_opcode.c):
        // DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH. No opcode we support has two of the
        // mutually exclusive ones, so a running offset in this order gives every position.
        int at = BthView.LENGTH;
        this.dethOffset = (ext & DETH) != 0 ? at : -1;
        at += (ext & DETH) != 0 ? DethView.LENGTH : 0;
        this.rethOffset = (ext & RETH) != 0 ? at : -1;
        at += (ext & RETH) != 0 ? RethView.LENGTH : 0;
        this.atomicEthOffset = (ext & ATOMIC_ETH) != 0 ? at : -1;
        at += (ext & ATOMIC_ETH) != 0 ? AtomicEthView.LENGTH : 0;
        this.aethOffset = (ext & AETH) != 0 ? at : -1;
        at += (ext & AETH) != 0 ? AethView.LENGTH : 0;
        this.atomicAckEthOffset = (ext & ATOMIC_ACK_ETH) != 0 ? at : -1;
        at += (ext & ATOMIC_ACK_ETH) != 0 ? AtomicAckEthView.LENGTH : 0;
        this.immDtOffset = (ext & IMM_DT) != 0 ? at : -1;
        at += (ext & IMM_DT) != 0 ? ImmDtView.LENGTH : 0;
        this.iethOffset = (ext & IETH) != 0 ? at : -1;
        at += (ext & IETH) != 0 ? IethView.LENGTH : 0;
        at += (ext & CNP_RESERVED) != 0 ? CNP_RESERVED_LENGTH : 0;
        this.headerLength = at;
    }

    /** The 8-bit BTH opcode value. */
    public int code() {
        return code;
    }

    /** The opcode for a BTH opcode byte, or null for reserved or unsupported values (UC, RD, FLUSH, ...). */
    public static Opcode of(int code) {
        return (code & ~0xFF) == 0 ? BY_CODE[code] : null;
    }

    /** BTH plus all extension headers, in bytes: where the payload starts. */
    public int headerLength() {
        return headerLength;
    }

    public boolean hasReth() {
        return rethOffset >= 0;
    }

    public boolean hasAeth() {
        return aethOffset >= 0;
    }

    public boolean hasAtomicEth() {
        return atomicEthOffset >= 0;
    }

    public boolean hasAtomicAckEth() {
        return atomicAckEthOffset >= 0;
    }

    public boolean hasImmDt() {
        return immDtOffset >= 0;
    }

    public boolean hasIeth() {
        return iethOffset >= 0;
    }

    public boolean hasDeth() {
        return dethOffset >= 0;
    }

    /** Offset of the RETH from the start of the BTH, or -1. */
    public int rethOffset() {
        return rethOffset;
    }

    public int aethOffset() {
        return aethOffset;
    }

    public int atomicEthOffset() {
        return atomicEthOffset;
    }

    public int atomicAckEthOffset() {
        return atomicAckEthOffset;
    }

    public int immDtOffset() {
        return immDtOffset;
    }

    public int iethOffset() {
        return iethOffset;
    }

    public int dethOffset() {
        return dethOffset;
    }

    /** True for opcodes that may carry payload bytes: SEND*, WRITE*, READ_RESPONSE* (RC and UD). */
    public boolean hasPayload() {
        return operation == Operation.SEND || operation == Operation.RDMA_WRITE
                || operation == Operation.RDMA_READ_RESPONSE;
    }

    public Position position() {
        return position;
    }

    public boolean startsMessage() {
        return position == Position.FIRST || position == Position.ONLY;
    }

    public boolean endsMessage() {
        return position == Position.LAST || position == Position.ONLY;
    }

    public Operation operation() {
        return operation;
    }

    /** Sent by a requester: SEND*, WRITE*, READ_REQUEST, COMPARE_SWAP, FETCH_ADD (RC and UD). */
    public boolean isRequest() {
        switch (operation) {
            case SEND:
            case RDMA_WRITE:
            case RDMA_READ_REQUEST:
            case COMPARE_SWAP:
            case FETCH_ADD:
                return true;
            default:
                return false;
        }
    }

    /** Sent by a responder: READ_RESPONSE*, ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE. */
    public boolean isResponse() {
        return operation == Operation.RDMA_READ_RESPONSE || operation == Operation.ACKNOWLEDGE
                || operation == Operation.ATOMIC_ACKNOWLEDGE;
    }

    /** Transport bits 7..5 of the BTH OpCode = 000, reliable connection (IBA 9.2). */
    public boolean isRc() {
        return (code >>> 5) == 0;
    }

    /** Transport bits 7..5 = 011. */
    public boolean isUd() {
        return (code >>> 5) == 3;
    }

    /**
     * The RC SEND opcode for one packet of a message. {@code withImm}/{@code withInv} describe the message:
     * they only affect the packet that ends it (IBTA puts ImmDt/IETH on the LAST or ONLY packet), so a
     * segmenter may pass the same flags for every packet.
     *
     * @throws IllegalArgumentException if both withImm and withInv are set (no such opcode)
     */
    public static Opcode rcSend(boolean first, boolean last, boolean withImm, boolean withInv) {
        if (withImm && withInv) {
            throw new IllegalArgumentException("a SEND carries either immediate data or an invalidate R_Key, not both");
        }
        if (!last) {
            return first ? RC_SEND_FIRST : RC_SEND_MIDDLE;
        }
        if (first) {
            return withImm ? RC_SEND_ONLY_WITH_IMMEDIATE : withInv ? RC_SEND_ONLY_WITH_INVALIDATE : RC_SEND_ONLY;
        }
        return withImm ? RC_SEND_LAST_WITH_IMMEDIATE : withInv ? RC_SEND_LAST_WITH_INVALIDATE : RC_SEND_LAST;
    }

    /** The RC RDMA WRITE opcode for one packet; {@code withImm} only affects the packet that ends the message. */
    public static Opcode rcWrite(boolean first, boolean last, boolean withImm) {
        if (!last) {
            return first ? RC_RDMA_WRITE_FIRST : RC_RDMA_WRITE_MIDDLE;
        }
        if (first) {
            return withImm ? RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE : RC_RDMA_WRITE_ONLY;
        }
        return withImm ? RC_RDMA_WRITE_LAST_WITH_IMMEDIATE : RC_RDMA_WRITE_LAST;
    }

    /** The RC READ RESPONSE opcode for one packet of a response. */
    public static Opcode rcReadResponse(boolean first, boolean last) {
        if (first) {
            return last ? RC_RDMA_READ_RESPONSE_ONLY : RC_RDMA_READ_RESPONSE_FIRST;
        }
        return last ? RC_RDMA_READ_RESPONSE_LAST : RC_RDMA_READ_RESPONSE_MIDDLE;
    }
}
