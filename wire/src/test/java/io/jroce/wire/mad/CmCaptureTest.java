package io.jroce.wire.mad;

import io.jroce.testkit.TestData;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.RocePacket;
import io.jroce.wire.pcap.CaptureReader;
import io.jroce.wire.pcap.PcapFrame;
import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code testdata/cm/cm-messages.pcap}: the decoder reads back the values below, which are the ones Wireshark 4.0
 * ({@code tshark -V -o infiniband.identify_payload:FALSE}) printed for the same file, field by field (see
 * testdata/README.md for where tshark disagrees and why).
 */
class CmCaptureTest {
    static final String FILE = "cm/cm-messages.pcap";
    private static final HexFormat HEX = HexFormat.of();

    /** The checked-in capture is exactly what the encoder writes today (-Djroce.cm.regenerate=true rewrites it). */
    @Test
    void checkedInCaptureIsWhatTheEncoderWrites() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        CmCapture.write(out);
        if (Boolean.getBoolean("jroce.cm.regenerate")) {
            Files.write(TestData.dir().resolve(FILE), out.toByteArray());
        }
        assertArrayEquals(Files.readAllBytes(TestData.file(FILE)), out.toByteArray());
    }

    private static List<RocePacket> packets() throws IOException {
        List<RocePacket> list = new ArrayList<>();
        try (CaptureReader r = CaptureReader.open(TestData.file(FILE))) {
            for (PcapFrame f; (f = r.next()) != null; ) {
                RocePacket p = new RocePacket();
                assertEquals(Problem.NONE, p.decode(f.asByteBuf(), f.udpPayloadOffset(), f.udpPayloadLength()));
                list.add(p);
            }
        }
        return list;
    }

    private static String hex(byte[] b) {
        return HEX.formatHex(b);
    }

    @Test
    void everyCmMessageIsAUdSendToQp1WithTheGsiQkey() throws Exception {
        List<RocePacket> ps = packets();
        assertEquals(8, ps.size());
        int[] attributes = {0x0010, 0x0011, 0x0013, 0x0014, 0x0015, 0x0016, 0x0012};
        MadHeader h = new MadHeader();
        for (int i = 0; i < 7; i++) {
            RocePacket p = ps.get(i);
            assertEquals(Opcode.UD_SEND_ONLY, p.opcode());
            assertEquals(1, p.destQp());
            assertEquals(0xFFFF, p.pkey());
            assertEquals(0x80010000, p.deth().qkey());
            assertEquals(1, p.deth().srcQp());
            assertEquals(256, p.payloadLength());
            h.wrap(p.buffer(), p.payloadOffset());
            assertTrue(h.isCmSend(), "frame " + (i + 1));
            assertEquals(0, h.status());
            assertEquals(0, h.classSpecific());
            assertEquals(attributes[i], h.attributeId());
            assertEquals(0, h.attributeModifier());
        }
        RocePacket ud = ps.get(7);
        assertEquals(0x000055, ud.destQp());
        assertEquals(0x11111111, ud.deth().qkey());
        assertEquals(0x000011, ud.deth().srcQp());
    }

    @Test
    void reqFieldsAsWiresharkShowsThem() throws Exception {
        RocePacket p = packets().get(0);
        CmReq req = new CmReq().wrap(p.buffer(), p.payloadOffset());
        assertEquals(0x000000071a2b3c4dL, req.header().transactionId());
        assertEquals(0x1a2b3c4d, req.localCommId());
        assertEquals(0x0000000001061c06L, req.serviceId()); // Prefix 0000000001, Protocol 0x06, Port 0x1c06
        assertEquals(CmaHeader.PS_TCP, CmaHeader.portSpace(req.serviceId()));
        assertEquals(7174, CmaHeader.port(req.serviceId()));
        assertEquals(0x0200c0fffe00020aL, req.localCaGuid());
        assertEquals(0, req.localQkey());
        assertEquals(0x000011, req.localQpn());
        assertEquals(1, req.responderResources());
        assertEquals(0, req.localEecn());
        assertEquals(2, req.initiatorDepth());
        assertEquals(0, req.remoteEecn());
        assertEquals(0x14, req.remoteCmResponseTimeout());
        assertEquals(0, req.transportServiceType());
        assertTrue(req.endToEndFlowControl());
        assertEquals(0xabcde1, req.startingPsn());
        assertEquals(0x15, req.localCmResponseTimeout());
        assertEquals(7, req.retryCount());
        assertEquals(0xffff, req.pkey());
        assertEquals(3, req.pathMtu());
        assertFalse(req.rdcExists());
        assertEquals(6, req.rnrRetryCount());
        assertEquals(15, req.maxCmRetries());
        assertFalse(req.srq());
        assertEquals(0, req.extendedTransportType());
        CmPath path = req.primaryPath();
        assertEquals(65535, path.localLid());
        assertEquals(65535, path.remoteLid());
        byte[] gid = new byte[16];
        path.localGid(gid, 0);
        assertEquals("00000000000000000000ffffc000020a", hex(gid)); // Wireshark: 192.0.2.10
        path.remoteGid(gid, 0);
        assertEquals("00000000000000000000ffffc000020b", hex(gid)); // Wireshark: 192.0.2.11
        // Wireshark 4.0 misplaces the flow label and packet rate (0x00abc, 0x2b); MAD bytes 112-115 are ab cd e0 07
        assertEquals(0xabcde, path.flowLabel());
        assertEquals(7, path.packetRate());
        assertEquals(0x28, path.trafficClass());
        assertEquals(0x40, path.hopLimit());
        assertEquals(3, path.sl());
        assertFalse(path.subnetLocal());
        assertEquals(0x13, path.localAckTimeout());
        assertEquals(0, req.alternatePath().localLid());

        CmaHeader cma = new CmaHeader().wrap(p.buffer(), req.privateDataIndex());
        assertEquals(0, cma.cmaVersion());
        assertEquals(4, cma.ipVersion());
        assertEquals(0x9c40, cma.port());
        assertEquals(InetAddress.getByName("192.0.2.10"), cma.sourceAddress());
        assertEquals(InetAddress.getByName("192.0.2.11"), cma.destinationAddress());
        byte[] pd = new byte[92];
        req.privateData(pd, 0);
        assertEquals("jroce", new String(pd, CmaHeader.LENGTH, 5, StandardCharsets.US_ASCII));
        assertEquals(0, pd[CmaHeader.LENGTH + 5]);
    }

    @Test
    void mraRepRtuDreqDrepRejAsWiresharkShowsThem() throws Exception {
        List<RocePacket> ps = packets();
        RocePacket p = ps.get(1); // Wireshark 4.0 does not dissect MRA ("Dissector Not Implemented")
        CmMra mra = new CmMra().wrap(p.buffer(), p.payloadOffset());
        assertEquals(0x5e6f7081, mra.localCommId());
        assertEquals(0x1a2b3c4d, mra.remoteCommId());
        assertEquals(CmMra.MRAED_REQ, mra.messageMraed());
        assertEquals(24, mra.serviceTimeout());
        assertEquals(0xC0, p.buffer().getUnsignedByte(p.payloadOffset() + 33)); // 24 << 3

        p = ps.get(2);
        CmRep rep = new CmRep().wrap(p.buffer(), p.payloadOffset());
        assertEquals(0x000000071a2b3c4dL, rep.header().transactionId());
        assertEquals(0x5e6f7081, rep.localCommId());
        assertEquals(0x1a2b3c4d, rep.remoteCommId());
        assertEquals(0, rep.localQkey());
        assertEquals(0x0000d2, rep.localQpn());
        assertEquals(0, rep.localEecn());
        assertEquals(0x123456, rep.startingPsn());
        assertEquals(2, rep.responderResources());
        assertEquals(1, rep.initiatorDepth());
        assertEquals(0x0f, rep.targetAckDelay());
        assertEquals(1, rep.failoverAccepted());
        assertTrue(rep.endToEndFlowControl());
        assertEquals(7, rep.rnrRetryCount());
        assertFalse(rep.srq());
        assertEquals(0x0200c0fffe00020bL, rep.localCaGuid());
        assertEquals(0, rep.vendorId());
        byte[] pd = new byte[196];
        rep.privateData(pd, 0);
        assertEquals("rep-data", new String(pd, 0, 8, StandardCharsets.US_ASCII));

        p = ps.get(3);
        CmRtu rtu = new CmRtu().wrap(p.buffer(), p.payloadOffset());
        assertEquals(0x1a2b3c4d, rtu.localCommId());
        assertEquals(0x5e6f7081, rtu.remoteCommId());

        p = ps.get(4);
        CmDreq dreq = new CmDreq().wrap(p.buffer(), p.payloadOffset());
        assertEquals(0x000000081a2b3c4dL, dreq.header().transactionId());
        assertEquals(0x1a2b3c4d, dreq.localCommId());
        assertEquals(0x5e6f7081, dreq.remoteCommId());
        assertEquals(0x0000d2, dreq.remoteQpn());

        p = ps.get(5);
        CmDrep drep = new CmDrep().wrap(p.buffer(), p.payloadOffset());
        assertEquals(0x000000081a2b3c4dL, drep.header().transactionId());
        assertEquals(0x5e6f7081, drep.localCommId());
        assertEquals(0x1a2b3c4d, drep.remoteCommId());

        p = ps.get(6);
        CmRej rej = new CmRej().wrap(p.buffer(), p.payloadOffset());
        assertEquals(0, rej.localCommId());
        assertEquals(0x1a2b3c50, rej.remoteCommId());
        assertEquals(CmRej.REJECTED_REQ, rej.messageRejected());
        assertEquals(0x10, rej.rejectInfoLength());
        assertEquals(0x000c, rej.reason());
        assertEquals("INVALID_GID", CmRej.reasonName(rej.reason()));
        byte[] ari = new byte[72];
        rej.ari(ari, 0);
        assertEquals("fe800000000000000200c0fffe00020b" + "00".repeat(56), hex(ari));
    }

    /**
     * Runs tshark, when installed, and checks that it still prints the values pinned above; skipped without it.
     * The pinned values do not depend on this test.
     */
    @Test
    void tsharkAgrees() throws Exception {
        Path file = TestData.file(FILE);
        String out;
        try {
            Process p = new ProcessBuilder("tshark", "-r", file.toString(), "-V", "-o",
                    "infiniband.identify_payload:FALSE").redirectError(ProcessBuilder.Redirect.DISCARD).start();
            out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "tshark did not finish");
            assertEquals(0, p.exitValue(), "tshark failed");
        } catch (IOException e) { // no tshark on this machine
            Assumptions.abort("tshark is not installed: " + e.getMessage());
            return;
        }
        String[] expected = {
            "Queue Key: 0x0000000080010000", "Source Queue Pair: 0x00000001",
            "Transaction ID: 0x000000071a2b3c4d", "Attribute ID: 0x0010",
            "Local Communication ID: 0x1a2b3c4d", "Destination Port: 0x1c06", "Local CA GUID: 0x0200c0fffe00020a",
            "Local QPN: 0x000011", "Responder Resources: 0x01", "Initiator Depth: 0x02",
            "Remote CM Response Timeout: 0x14", "End-to-End Flow Control: 0x1", "Starting PSN: 0xabcde1",
            "Local CM Response Timeout: 0x15", "Retry Count: 0x7", "Partition Key: 0xffff",
            "Path Packet Payload MTU: 0x3", "RNR Retry Count: 0x6", "Max CM Retries: 0xf",
            "Primary Local Port GID: 192.0.2.10", "Primary Remote Port GID: 192.0.2.11",
            "Primary Traffic Class: 0x28", "Primary Hop Limit: 0x40", "Primary SL: 0x3",
            "Primary Local ACK Timeout: 0x13", "IP CM IP Version: 0x4", "IP CM Source Port: 0x9c40",
            "IP CM Source IP: 192.0.2.10", "IP CM Destination IP: 192.0.2.11",
            "Remote Communication ID: 0x1a2b3c4d", "Local QPN: 0x0000d2", "Starting PSN: 0x123456",
            "Target ACK Delay: 0x0f", "Failover Accepted: 0x1", "RNR Retry Count: 0x7",
            "Local CA GUID: 0x0200c0fffe00020b", "Remote QPN/EECN: 0x0000d2",
            "Reject Info Length: 0x10", "Reason: 0x000c",
            "Additional Reject Information (ARI): fe800000000000000200c0fffe00020b",
            "Queue Key: 0x0000000011111111", "Source Queue Pair: 0x00000011",
        };
        for (String e : expected) {
            assertTrue(out.contains(e), "tshark output lacks \"" + e + "\"");
        }
        for (String m : new String[] {"ConnectRequest", "MsgRcptAck", "ConnectReply", "ReadyToUse",
                "DisconnectRequest", "DisconnectReply", "ConnectReject"}) {
            assertTrue(out.contains("CM " + m), m);
        }
        assertFalse(out.contains("Malformed"), "tshark reports a malformed packet");
    }
}
