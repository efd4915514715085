package io.jroce.endpoint.cm;

import java.net.InetAddress;

/**
 * Where a {@link CmAgent} sends and receives its MADs: QP 1 (the GSI) of one device, or, in tests, an in-memory
 * exchange. Every MAD sent is a full, zero-padded 256-byte CM MAD addressed to the peer's QP 1 (the Linux CM always
 * uses remote QPN 1 and Q_Key 0x80010000, cm.c cm_alloc_msg). The agent knows nothing else about the transport.
 */
public interface MadPort extends AutoCloseable {

    /** Receives MADs; called from the port's own thread, must not block. */
    @FunctionalInterface
    interface Receiver {
        /**
         * One received MAD: {@code length} bytes of {@code mad} (normally 256; a shorter one reads as zero-padded),
         * sent by the device at {@code from} from QP {@code srcQpn}. The array is the receiver's to keep.
         */
        void receive(InetAddress from, int srcQpn, byte[] mad, int length);
    }

    /** The address of this port's device (the source address of what it sends). */
    InetAddress localAddress();

    /** Starts delivering received MADs to {@code receiver}. Called once. */
    void start(Receiver receiver);

    /** Sends one 256-byte MAD to QP 1 of the device at {@code peer}; may drop it (a datagram), never blocks long. */
    void send(InetAddress peer, byte[] mad);

    /**
     * Sends one 256-byte MAD to QP {@code qpn} of the device at {@code peer} (the MAD layer answers a Get or Set to
     * the QP it came from, mad.c agent_send_response). Ports that reach only QP 1 send it there.
     */
    default void send(InetAddress peer, int qpn, byte[] mad) {
        send(peer, mad);
    }

    /** Stops receiving and releases the port's resources. */
    @Override
    void close();
}
