package io.jroce.cli.conform;

import java.net.InetSocketAddress;

/**
 * The QP a peer offered us, as its out-of-band exchange described it.
 *
 * @param roce      where its RoCE packets go: the peer's GID as an address, UDP port 4791 (or --roce-port)
 * @param qpn       the peer's QPN
 * @param mtu       the path MTU both sides use, in bytes
 * @param region    memory the peer lets us access remotely, or null when it published none
 * @param readOnly  a region without remote write access (for the access-not-granted case), or null
 * @param access    what {@code region} grants, as far as the exchange tells: a set of {@link Access} bits
 * @param receives  whether the peer posts receive WQEs (SEND can complete), as far as the exchange tells
 * @param sendNote  why SENDs must not be sent to this QP (the peer's application reads each one as a message of its own
 *                  protocol and ends on anything else), or null when they may
 * @param cm        the connection manager's connection that gave us the QP, or null when it came another way
 */
record Target(InetSocketAddress roce, int qpn, int mtu, Region region, Region readOnly, int access, boolean receives, String sendNote,
              CmConnection cm) {

    /** Remote access bits the tester relies on; unknown access is all of them (cases then judge the answers). */
    static final class Access {
        static final int WRITE = 1;
        static final int READ = 2;
        static final int ATOMIC = 4;
        static final int ALL = WRITE | READ | ATOMIC;

        private Access() {
        }
    }

    /** A remote region: base VA, R_Key and length (0 = unknown). */
    record Region(long va, int rkey, long length) {
    }

    boolean grants(int bits) {
        return region != null && (access & bits) == bits;
    }
}
