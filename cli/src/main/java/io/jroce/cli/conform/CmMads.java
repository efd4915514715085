package io.jroce.cli.conform;

import io.jroce.endpoint.Gid;
import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmDreq;
import io.jroce.wire.mad.CmMra;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.CmReq;
import io.jroce.wire.mad.CmRtu;
import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.jroce.wire.mad.SidrRep;
import io.jroce.wire.mad.SidrReq;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.net.InetAddress;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The CM MADs the tester sends, built with the wire module's flyweights, and what it makes of the MADs that come
 * back: one word per MAD ("REP", "REJ-12; ari=16", "GETRESP-0x000c; echo=ok", "SIDR_REP-2; qpn=0"), the
 * notation the cm cases' expected answers use.
 */
final class CmMads {
    /**
     * The REQ's Local CM Response Timeout: 4.096 us * 2^15, which Linux rounds to 128 ms (cm.c cm_convert_to_ms); the
     * passive side resends its REP this often until our RTU comes, so a lost RTU is seen quickly.
     */
    static final int LOCAL_CM_RESPONSE_TIMEOUT = 15;
    /** rdma_cm's CMA_CM_RESPONSE_TIMEOUT (cma.c): how long the peer may take to answer us. */
    static final int REMOTE_CM_RESPONSE_TIMEOUT = 20;
    /** cma.c CMA_MAX_CM_RETRIES. */
    static final int MAX_CM_RETRIES = 15;
    /** The ACK timeout the REQ's path names (4.096 us * 2^19, about 2 s: rdma_cm's value on rxe). */
    static final int ACK_TIMEOUT = 19;

    private CmMads() {
    }

    /** What a REQ says about our side. */
    record Req(long tid, int commId, long caGuid, long serviceId, int qpn, int psn, int mtuEnum, int responderResources,
               int initiatorDepth, Gid ourGid, Gid peerGid, int sourcePort, InetAddress src, InetAddress dst) {
    }

    /** A REQ as rdma_cm writes it for the TCP port space (cma.c cma_connect_ib, cm.c cm_format_req). */
    static byte[] req(Req r) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        ByteBuf b = Unpooled.wrappedBuffer(mad);
        CmReq req = new CmReq().wrap(b, 0).init(r.tid());
        req.localCommId(r.commId()).serviceId(r.serviceId()).localCaGuid(r.caGuid()).localQkey(0).localQpn(r.qpn())
                .responderResources(r.responderResources()).initiatorDepth(r.initiatorDepth())
                .remoteCmResponseTimeout(REMOTE_CM_RESPONSE_TIMEOUT).transportServiceType(CmReq.TRANSPORT_RC).endToEndFlowControl(true)
                .startingPsn(r.psn()).localCmResponseTimeout(LOCAL_CM_RESPONSE_TIMEOUT).retryCount(7).pkey(0xFFFF)
                .pathMtu(r.mtuEnum()).rnrRetryCount(7).maxCmRetries(MAX_CM_RETRIES);
        // RoCE paths: permissive LIDs, the GIDs, hop limit 64 for a routed (RoCEv2) path
        req.primaryPath().localLid(0xFFFF).remoteLid(0xFFFF).localGid(r.ourGid().raw()).remoteGid(r.peerGid().raw()).hopLimit(64)
                .localAckTimeout(ACK_TIMEOUT);
        new CmaHeader().wrap(b, req.privateDataIndex()).write(r.sourcePort(), r.src(), r.dst());
        return mad;
    }

    static byte[] rtu(long tid, int commId, int remoteCommId) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        new CmRtu().wrap(Unpooled.wrappedBuffer(mad), 0).init(tid).localCommId(commId).remoteCommId(remoteCommId);
        return mad;
    }

    static byte[] dreq(long tid, int commId, int remoteCommId, int remoteQpn) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        new CmDreq().wrap(Unpooled.wrappedBuffer(mad), 0).init(tid).localCommId(commId).remoteCommId(remoteCommId).remoteQpn(remoteQpn);
        return mad;
    }

    static byte[] sidrReq(long tid, int requestId, long serviceId, int sourcePort, InetAddress src, InetAddress dst) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        ByteBuf b = Unpooled.wrappedBuffer(mad);
        SidrReq req = new SidrReq().wrap(b, 0).init(tid).requestId(requestId).pkey(0xFFFF).serviceId(serviceId);
        new CmaHeader().wrap(b, req.privateDataIndex()).write(sourcePort, src, dst);
        return mad;
    }

    /** A MAD of any class: the 24-byte header, then {@code 0x5A} at byte 100, which a MAD layer's answer echoes. */
    static byte[] get(long tid, int mgmtClass, int classVersion, int method, int attribute) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        new MadHeader().wrap(Unpooled.wrappedBuffer(mad), 0).baseVersion(MadHeader.BASE_VERSION).mgmtClass(mgmtClass).classVersion(classVersion)
                .method(method).transactionId(tid).attributeId(attribute).attributeModifier(0);
        mad[100] = 0x5A;
        return mad;
    }

    /** One MAD as a word; {@code sent} is the request it answers (for the echo check of a GetResp), or null. */
    static String word(byte[] m, byte[] sent) {
        ByteBuf b = Unpooled.wrappedBuffer(m);
        MadHeader h = new MadHeader().wrap(b, 0);
        if (h.method() == MadHeader.METHOD_GET_RESP) {
            boolean echo = sent != null && h.mgmtClass() == (sent[1] & 0xFF) && h.classVersion() == (sent[2] & 0xFF)
                    && h.attributeId() == ((sent[16] & 0xFF) << 8 | (sent[17] & 0xFF));
            return String.format("GETRESP-0x%04x; echo=%s", h.status(), echo ? "ok" : "differs");
        }
        if (h.mgmtClass() != MadHeader.MGMT_CLASS_CM || h.method() != MadHeader.METHOD_SEND) {
            return String.format("MAD-0x%02x/0x%02x/0x%04x", h.mgmtClass(), h.method(), h.attributeId());
        }
        if (h.attributeId() == SidrRep.ATTRIBUTE_ID) {
            SidrRep r = new SidrRep().wrap(b, 0);
            return "SIDR_REP-" + r.status() + "; qpn=" + (r.qpn() == 0 ? "0" : "set");
        }
        CmAttribute a = CmAttribute.of(h.attributeId());
        if (a == null) return String.format("CM-0x%04x", h.attributeId());
        return switch (a) {
            case REJ -> {
                CmRej r = new CmRej().wrap(b, 0);
                yield "REJ-" + r.reason() + (r.rejectInfoLength() > 0 ? "; ari=" + r.rejectInfoLength() : "");
            }
            case MRA -> "MRA-" + switch (new CmMra().wrap(b, 0).messageMraed()) {
                case CmMra.MRAED_REQ -> "req";
                case CmMra.MRAED_REP -> "rep";
                default -> "other";
            };
            default -> a.name();
        };
    }

    /** The MADs as words, "none" for silence. */
    static String words(List<byte[]> ms, byte[] sent) {
        if (ms.isEmpty()) return "none";
        return ms.stream().map(m -> word(m, sent)).collect(Collectors.joining(" "));
    }

    static int attribute(byte[] m) {
        return (m[16] & 0xFF) << 8 | (m[17] & 0xFF);
    }
}
