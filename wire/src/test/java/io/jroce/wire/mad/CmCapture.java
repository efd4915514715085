package io.jroce.wire.mad;

import io.jroce.wire.BthView;
import io.jroce.wire.DethView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.RoceV2;
import io.jroce.wire.pcap.PcapWriter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;

/**
 * Writes {@code testdata/cm/cm-messages.pcap}: one rdma_cm connection's CM MADs as rdma_rxe would carry them (UD
 * SEND Only to QP 1, DETH Q_Key 0x80010000, source QP 1, P_Key 0xFFFF, a full 256-byte MAD), then a REJ and a
 * plain UD SEND between two application QPs. Active side A = 192.0.2.10 (QPN 0x000011), passive side B =
 * 192.0.2.11 (QPN 0x0000d2), rdma_cm port 7174 (rping's default) from source port 40000.
 *
 * <p>Frames: 1 REQ A&gt;B, 2 MRA B&gt;A, 3 REP B&gt;A, 4 RTU A&gt;B, 5 DREQ A&gt;B, 6 DREP B&gt;A, 7 REJ B&gt;A
 * (reason 12, invalid GID, with a GID as ARI), 8 UD SEND A QP 0x000011 &gt; B QP 0x000055, Q_Key 0x11111111.
 */
final class CmCapture {
    static final int A = 0xC000020A;
    static final int B = 0xC000020B;
    static final int LENGTH = BthView.LENGTH + DethView.LENGTH + MadHeader.MAD_SIZE + RoceV2.ICRC_LENGTH;
    private static final long T0 = 1_767_225_600_000_000_000L; // 2026-01-01T00:00:00Z

    private CmCapture() {
    }

    static byte[] gid(int ipv4) {
        byte[] g = new byte[16];
        g[10] = (byte) 0xFF;
        g[11] = (byte) 0xFF;
        g[12] = (byte) (ipv4 >>> 24);
        g[13] = (byte) (ipv4 >>> 16);
        g[14] = (byte) (ipv4 >>> 8);
        g[15] = (byte) ipv4;
        return g;
    }

    static void write(OutputStream out) throws IOException {
        ByteBuf p = Unpooled.buffer(LENGTH, LENGTH);
        int mad = BthView.LENGTH + DethView.LENGTH;
        try (PcapWriter w = new PcapWriter(out)) {
            Icrc icrc = new Icrc();
            int[] frame = {0};
            Sender send = (src, dst, destQp, qkey, srcQp, psn) -> {
                p.writerIndex(LENGTH);
                new BthView().wrap(p, 0).write(Opcode.UD_SEND_ONLY.code(), false, false, 0, RoceV2.DEFAULT_PKEY,
                        destQp, true, psn);
                new DethView().wrap(p, BthView.LENGTH).write(qkey, srcQp);
                int id = 0x4d00 + frame[0];
                int sport = RoceV2.qpSourcePort(srcQp);
                icrc.writeIpv4(src, dst, id, Icrc.IPV4_DF, sport, RoceV2.UDP_PORT, p, 0, LENGTH);
                w.writeUdpIpv4(T0 + frame[0] * 1_000_000L, src, sport, dst, RoceV2.UDP_PORT, id, Icrc.IPV4_DF,
                        p, 0, LENGTH);
                frame[0]++;
            };

            CmReq req = new CmReq().wrap(p, mad).init(0x000000071A2B3C4DL)
                    .localCommId(0x1A2B3C4D).serviceId(CmaHeader.serviceId(CmaHeader.PS_TCP, 7174))
                    .localCaGuid(0x0200C0FFFE00020AL).localQkey(0).localQpn(0x000011)
                    .responderResources(1).initiatorDepth(2).remoteCmResponseTimeout(20)
                    .transportServiceType(CmReq.TRANSPORT_RC).endToEndFlowControl(true).startingPsn(0xABCDE1)
                    .localCmResponseTimeout(21).retryCount(7).pkey(0xFFFF).pathMtu(3).rnrRetryCount(6)
                    .maxCmRetries(15);
            req.primaryPath().localLid(0xFFFF).remoteLid(0xFFFF).localGid(gid(A)).remoteGid(gid(B))
                    .flowLabel(0xABCDE).packetRate(7).trafficClass(0x28).hopLimit(64).sl(3).localAckTimeout(19);
            byte[] pd = new byte[CmAttribute.REQ.privateDataLength()];
            ByteBuf pdBuf = Unpooled.wrappedBuffer(pd);
            new CmaHeader().wrap(pdBuf, 0).write(40000, InetAddress.getByAddress(addr(A)),
                    InetAddress.getByAddress(addr(B)));
            byte[] hello = "jroce".getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(hello, 0, pd, CmaHeader.LENGTH, hello.length);
            req.privateData(pd, 0, pd.length);
            send.send(A, B, MadHeader.GSI_QPN, RoceV2.GSI_QKEY, MadHeader.GSI_QPN, 0);

            new CmMra().wrap(p, mad).init(0x000000071A2B3C4DL).localCommId(0x5E6F7081).remoteCommId(0x1A2B3C4D)
                    .messageMraed(CmMra.MRAED_REQ).serviceTimeout(24);
            send.send(B, A, MadHeader.GSI_QPN, RoceV2.GSI_QKEY, MadHeader.GSI_QPN, 0);

            byte[] rep = "rep-data".getBytes(StandardCharsets.US_ASCII);
            new CmRep().wrap(p, mad).init(0x000000071A2B3C4DL).localCommId(0x5E6F7081).remoteCommId(0x1A2B3C4D)
                    .localQkey(0).localQpn(0x0000D2).startingPsn(0x123456).responderResources(2).initiatorDepth(1)
                    .targetAckDelay(15).failoverAccepted(1).endToEndFlowControl(true).rnrRetryCount(7)
                    .srq(false).localCaGuid(0x0200C0FFFE00020BL).privateData(rep, 0, rep.length);
            send.send(B, A, MadHeader.GSI_QPN, RoceV2.GSI_QKEY, MadHeader.GSI_QPN, 1);

            new CmRtu().wrap(p, mad).init(0x000000071A2B3C4DL).localCommId(0x1A2B3C4D).remoteCommId(0x5E6F7081);
            send.send(A, B, MadHeader.GSI_QPN, RoceV2.GSI_QKEY, MadHeader.GSI_QPN, 1);

            new CmDreq().wrap(p, mad).init(0x000000081A2B3C4DL).localCommId(0x1A2B3C4D).remoteCommId(0x5E6F7081)
                    .remoteQpn(0x0000D2);
            send.send(A, B, MadHeader.GSI_QPN, RoceV2.GSI_QKEY, MadHeader.GSI_QPN, 2);

            new CmDrep().wrap(p, mad).init(0x000000081A2B3C4DL).localCommId(0x5E6F7081).remoteCommId(0x1A2B3C4D);
            send.send(B, A, MadHeader.GSI_QPN, RoceV2.GSI_QKEY, MadHeader.GSI_QPN, 2);

            byte[] linkLocal = {(byte) 0xFE, (byte) 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, (byte) 0xC0, (byte) 0xFF,
                    (byte) 0xFE, 0, 0x02, 0x0B};
            new CmRej().wrap(p, mad).init(0x000000091A2B3C50L).localCommId(0).remoteCommId(0x1A2B3C50)
                    .messageRejected(CmRej.REJECTED_REQ).reason(12).ari(linkLocal, 0, linkLocal.length);
            send.send(B, A, MadHeader.GSI_QPN, RoceV2.GSI_QKEY, MadHeader.GSI_QPN, 3);

            // an application UD SEND: not to QP 1, so no MAD is decoded; the payload is left as the REJ's bytes
            send.send(A, B, 0x000055, 0x11111111, 0x000011, 0x000777);
        }
    }

    private static byte[] addr(int ipv4) {
        return new byte[] {(byte) (ipv4 >>> 24), (byte) (ipv4 >>> 16), (byte) (ipv4 >>> 8), (byte) ipv4};
    }

    @FunctionalInterface
    private interface Sender {
        void send(int src, int dst, int destQp, int qkey, int srcQp, int psn) throws IOException;
    }
}
