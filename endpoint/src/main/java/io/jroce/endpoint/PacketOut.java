package io.jroce.endpoint;

import io.jroce.wire.Opcode;
import io.netty.buffer.ByteBuf;

/**
 * What the engines see of the transmit path (the send half of rdma_rxe's rxe_net.c with rxe_icrc.c's stamp):
 * start a packet at its final size with its BTH written, write the extension headers through {@link #views()} and
 * the payload (from registered memory through {@link #payload}, which may leave it there to be gathered), finish it (pad, ICRC, counters, capture) and it leaves with the shard's next flush. Engines never
 * see the socket, the receive path or the other queue pairs.
 */
interface PacketOut {
    /** A packet to {@code qp}'s peer: headers, {@code payload} bytes, pad and ICRC allocated, the BTH written. */
    ByteBuf startPacket(QueuePair qp, Opcode op, int payload, boolean se, boolean ackReq, int psn);

    /**
     * The packet's next {@code len} payload bytes are {@code mr}'s at region offset {@code offset}: copied into
     * {@code b}, or, where the socket can gather them, left in the region and sent from there (the place in {@code b}
     * is skipped). The region's bytes are read no later than the shard's next flush.
     */
    void payload(ByteBuf b, MemoryRegion mr, int offset, int len);

    /**
     * Registered memory is about to be written by this shard (a request executed, a response placed): datagrams
     * queued with their payload left in a region are sent (or copied) now, so that they carry the bytes their
     * ICRC was computed over and a READ's responses the bytes as they were before a later request changed them.
     */
    void beforeMemoryWrite();

    /** Ends a packet from {@link #startPacket}: zero pad, the ICRC, and the datagram queued for the batch. */
    void finishPacket(QueuePair qp, ByteBuf b);

    /** A UD packet to {@code destQpn} (AckReq clear: UD is never acknowledged); DETH and payload follow. */
    ByteBuf startUdPacket(Opcode op, int payload, boolean se, int destQpn, int psn);

    /** Ends a UD packet for the destination in {@code ah} (a UD QP has no peer of its own). */
    void finishUdPacket(QueuePair qp, ByteBuf b, AddressHandle ah);

    /** The flyweights to write extension headers with. */
    HeaderViews views();
}
