package io.jroce.cli.conform;

import io.jroce.testkit.Hex;
import io.jroce.testkit.Json;
import io.jroce.testkit.TestData;
import io.jroce.wire.Opcode;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tester's packets against the golden vectors (testdata/rocev2-golden.json, ICRCs cross-checked with Scapy and a
 * ConnectX capture): built field by field from a vector's header values and payload, every byte, ICRC included,
 * must equal the vector; and its answers decoded from the vectors read as the normalised answers the verdicts use.
 */
class PacketGoldenTest {
    @SuppressWarnings("unchecked")
    private static Map<String, Object> vector(String name) throws Exception {
        Map<String, Object> top = Json.object(Files.readString(TestData.goldenJson()));
        for (Object o : (List<Object>) top.get("vectors")) {
            Map<String, Object> v = (Map<String, Object>) o;
            if (v.get("name").equals(name)) return v;
        }
        throw new AssertionError("no vector " + name);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> part(Map<String, Object> v, String key) {
        return (Map<String, Object>) v.get(key);
    }

    private static long num(Object o) {
        return o instanceof String s ? Long.decode(s) : ((Number) o).longValue();
    }

    private static InetSocketAddress[] ends(Map<String, Object> v) throws Exception {
        Map<String, Object> ip = part(v, "ipv4");
        Map<String, Object> udp = part(v, "udp");
        assertEquals(0L, num(ip.get("id")), "the tester's socket sends IPv4 ID 0");
        return new InetSocketAddress[] {
            new InetSocketAddress(InetAddress.getByName((String) ip.get("src")), (int) num(udp.get("src_port"))),
            new InetSocketAddress(InetAddress.getByName((String) ip.get("dst")), (int) num(udp.get("dst_port"))),
        };
    }

    /** The vector's bytes, and the packet built from its fields with the payload the vector carries. */
    private static void same(String name, Packet p) throws Exception {
        Map<String, Object> v = vector(name);
        byte[] want = Hex.decode((String) v.get("udp_payload_hex"));
        Map<String, Object> bth = part(v, "bth");
        Opcode op = Opcode.of((int) num(v.get("opcode")));
        int payloadLen = (int) num(v.get("payload_len"));
        p.qp((int) num(bth.get("dest_qp"))).psn((int) num(bth.get("psn"))).ackReq(num(bth.get("ackreq")) == 1)
                .payload(Arrays.copyOfRange(want, op.headerLength(), op.headerLength() + payloadLen));
        InetSocketAddress[] e = ends(v);
        assertArrayEquals(want, p.build(e[0], e[1]), name);
    }

    @Test
    void requestsAreByteForByteTheGoldenVectors() throws Exception {
        Map<String, Object> w = part(vector("rc_rdma_write_only"), "ext");
        same("rc_rdma_write_only", Packet.of(Opcode.RC_RDMA_WRITE_ONLY).reth(num(w.get("reth_va")), (int) num(w.get("reth_rkey")),
                num(w.get("reth_len"))));
        Map<String, Object> wi = part(vector("rc_rdma_write_only_with_immediate"), "ext");
        same("rc_rdma_write_only_with_immediate", Packet.of(Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE).reth(num(wi.get("reth_va")),
                (int) num(wi.get("reth_rkey")), num(wi.get("reth_len"))).imm((int) num(wi.get("imm"))));
        Map<String, Object> f = part(vector("rc_fetch_add"), "ext");
        same("rc_fetch_add", Packet.of(Opcode.RC_FETCH_ADD).atomic(num(f.get("atomic_va")), (int) num(f.get("atomic_rkey")),
                num(f.get("swap_add")), num(f.get("compare"))));
        Map<String, Object> u = part(vector("ud_send_only_qp1"), "ext");
        same("ud_send_only_qp1", Packet.of(Opcode.UD_SEND_ONLY).deth((int) num(u.get("deth_qkey")), (int) num(u.get("deth_src_qp"))));
        Map<String, Object> a = part(vector("rc_ack_unlimited"), "ext");
        same("rc_ack_unlimited", Packet.of(Opcode.RC_ACKNOWLEDGE).aeth((int) num(a.get("aeth_syndrome")), (int) num(a.get("aeth_msn"))));
        Map<String, Object> aa = part(vector("rc_atomic_acknowledge"), "ext");
        same("rc_atomic_acknowledge", Packet.of(Opcode.RC_ATOMIC_ACKNOWLEDGE).aeth((int) num(aa.get("aeth_syndrome")),
                (int) num(aa.get("aeth_msn"))).atomicAck(Long.parseUnsignedLong(((String) aa.get("atomic_orig")).substring(2), 16)));
    }

    @Test
    void answersFromTheGoldenVectorsReadAsNormalised() throws Exception {
        assertEquals("ACK+0", decode("rc_ack_unlimited", 0).normalised(0x000100));
        assertEquals("NAK-SEQ+0", decode("rc_nak_psn_seq_error", 0).normalised(0x000102));
        assertEquals("RNR-1", decode("rc_rnr_nak_0_64ms", 0).normalised(0x000104));
        assertEquals("NAK-INV+0", decode("rc_nak_invalid_request", 0).normalised(0x000104));
        assertEquals("NAK-ACC+0", decode("rc_nak_remote_access_error", 0).normalised(0x000105));
        assertEquals("NAK-OP+0", decode("rc_nak_remote_op_error", 0).normalised(0x000106));
        Reply atomic = decode("rc_atomic_acknowledge", 0);
        assertEquals("ATOMIC-ACK+0", atomic.normalised(0x300000));
        assertEquals(0x2222222222222222L, atomic.atomicOrig());
        Reply first = decode("rc_rdma_read_response_first", 0);
        assertEquals("READ-FIRST+0", first.normalised(0x123456));
        assertEquals(256, first.data().length);
        assertEquals("READ-MIDDLE+1", decode("rc_rdma_read_response_middle", 0).normalised(0x123456));
        assertEquals("READ-LAST+2", decode("rc_rdma_read_response_last", 0).normalised(0x123456));
        // a corrupt ICRC is kept and marked: sending one is a departure in itself
        Reply bad = decode("bad_icrc_unmasked", 0);
        assertTrue(bad.normalised(0x000100).endsWith("!icrc"), bad.normalised(0x000100));
        // a request from the peer is told apart (its own traffic, acknowledged and left out)
        Reply req = decode("rc_rdma_write_only", 1);
        assertTrue(req.request() && req.ackReq());
    }

    /** {@code direction} 0: a B-to-A answer to QP 0x11; 1: an A-to-B request to QP 0xd2. */
    private static Reply decode(String name, int direction) throws Exception {
        Map<String, Object> v = vector(name);
        InetSocketAddress[] e = ends(v);
        Reply r = Reply.decode(Hex.decode((String) v.get("udp_payload_hex")), e[0], e[1], direction == 0 ? 0x11 : 0xd2);
        assertNotNull(r, name);
        return r;
    }
}
