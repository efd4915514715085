package io.jroce.cli.inspect;

import io.jroce.cli.Json.Unsigned;
import io.jroce.endpoint.JroceExtensions;
import io.jroce.endpoint.cm.ExtensionTrailer;
import io.jroce.wire.Opcode;
import io.jroce.wire.RocePacket;
import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmDreq;
import io.jroce.wire.mad.CmMra;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.CmRep;
import io.jroce.wire.mad.CmReq;
import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.jroce.wire.mad.SidrRep;
import io.jroce.wire.mad.SidrReq;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code inspect} view of a MAD: for a UD SEND to QP 1 (the GSI), the MAD header, and for the connection
 * manager's messages the fields that identify a connection: comm IDs, QPN, starting PSN, service ID and the port
 * it encodes, the rdma_cm address header of a REQ, the reason of a REJ.
 *
 * <p>A field the specification enumerates is given twice: {@code K}, the value on the wire, and {@code K_name},
 * what it means ({@code mtu} 3 and {@code mtu_name} "1024"); the text form shows them as {@code mtu=1024 (3)}.
 *
 * <p>A MAD shorter than 256 bytes is read as if zero-padded, as the Linux MAD layer does (it always reads a full
 * MAD from its receive buffer); its length is then shown as {@code mad_len}.
 */
final class CmDecode {
    private final ByteBuf mad = Unpooled.buffer(MadHeader.MAD_SIZE, MadHeader.MAD_SIZE);
    private final MadHeader header = new MadHeader();
    private final CmReq req = new CmReq();
    private final CmRep rep = new CmRep();
    private final CmRej rej = new CmRej();
    private final CmMra mra = new CmMra();
    private final CmDreq dreq = new CmDreq();
    private final CmaHeader cma = new CmaHeader();
    private final SidrReq sidrReq = new SidrReq();
    private final SidrRep sidrRep = new SidrRep();

    /**
     * Adds {@code cm} (a CM message) or {@code mad} (another management class) to the record for a UD SEND to QP 1
     * carrying at least a MAD header; does nothing for any other packet.
     */
    void put(Map<String, Object> r, RocePacket p) {
        Opcode op = p.opcode();
        if ((op != Opcode.UD_SEND_ONLY && op != Opcode.UD_SEND_ONLY_WITH_IMMEDIATE) || p.destQp() != MadHeader.GSI_QPN
                || p.payloadLength() < MadHeader.LENGTH) {
            return;
        }
        int len = Math.min(p.payloadLength(), MadHeader.MAD_SIZE);
        mad.setZero(0, MadHeader.MAD_SIZE);
        mad.setBytes(0, p.buffer(), p.payloadOffset(), len);
        mad.writerIndex(MadHeader.MAD_SIZE);
        header.wrap(mad, 0);
        if (header.mgmtClass() == MadHeader.MGMT_CLASS_CM
                && (header.attributeId() == SidrReq.ATTRIBUTE_ID || header.attributeId() == SidrRep.ATTRIBUTE_ID)) {
            r.put("cm", sidr(p));
            return;
        }
        CmAttribute attribute = CmAttribute.of(header.attributeId());
        if (header.mgmtClass() != MadHeader.MGMT_CLASS_CM || attribute == null) {
            Map<String, Object> m = new LinkedHashMap<>();
            named(m, "mgmt_class", new Unsigned(header.mgmtClass(), 2), mgmtClassName(header.mgmtClass()));
            m.put("class_version", header.classVersion());
            named(m, "method", new Unsigned(header.method(), 2), methodName(header.method()));
            m.put("attr", Unsigned.u16(header.attributeId()));
            m.put("tid", Unsigned.u64(header.transactionId()));
            putLength(m, p);
            r.put("mad", m);
            return;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("msg", attribute.name());
        if (header.baseVersion() != MadHeader.BASE_VERSION || header.classVersion() != MadHeader.CM_CLASS_VERSION
                || header.method() != MadHeader.METHOD_SEND) {
            // Linux drops these (mad.c validate_mad, find_mad_agent): show why a peer would ignore the message
            m.put("base_version", header.baseVersion());
            m.put("class_version", header.classVersion());
            named(m, "method", new Unsigned(header.method(), 2), methodName(header.method()));
        }
        m.put("tid", Unsigned.u64(header.transactionId()));
        m.put("local_comm_id", Unsigned.u32(mad.getInt(24)));
        if (attribute != CmAttribute.REQ) {
            m.put("remote_comm_id", Unsigned.u32(mad.getInt(28))); // byte 28 in every message but REQ
        }
        switch (attribute) {
            case REQ -> putReq(m);
            case REP -> {
                rep.wrap(mad, 0);
                m.put("qpn", Unsigned.u24(rep.localQpn()));
                m.put("starting_psn", Unsigned.u24(rep.startingPsn()));
                m.put("resp_res", rep.responderResources());
                m.put("init_depth", rep.initiatorDepth());
                putJroceExtensions(m, rep.privateDataIndex(), CmAttribute.REP.privateDataLength());
            }
            case REJ -> {
                rej.wrap(mad, 0);
                named(m, "rejected", rej.messageRejected(), rejectedName(rej.messageRejected()));
                named(m, "reason", rej.reason(), CmRej.reasonName(rej.reason()));
                m.put("ari_len", rej.rejectInfoLength());
            }
            case MRA -> {
                mra.wrap(mad, 0);
                named(m, "mraed", mra.messageMraed(), rejectedName(mra.messageMraed()));
                named(m, "service_timeout", mra.serviceTimeout(), timeoutName(mra.serviceTimeout()));
            }
            case DREQ -> m.put("remote_qpn", Unsigned.u24(dreq.wrap(mad, 0).remoteQpn()));
            default -> {
                // RTU, DREP: the comm IDs are all
            }
        }
        putLength(m, p);
        r.put("cm", m);
    }

    /**
     * A service ID resolution request or reply (IBA 12.11, rdma_cm's UDP port space): the request ID that pairs
     * them, and the service ID (with the port it encodes) or the answer: status, QPN and Q_Key.
     */
    private Map<String, Object> sidr(RocePacket p) {
        Map<String, Object> m = new LinkedHashMap<>();
        boolean request = header.attributeId() == SidrReq.ATTRIBUTE_ID;
        m.put("msg", request ? "SIDR_REQ" : "SIDR_REP");
        m.put("tid", Unsigned.u64(header.transactionId()));
        long sid;
        if (request) {
            sidrReq.wrap(mad, 0);
            m.put("request_id", Unsigned.u32(sidrReq.requestId()));
            m.put("pkey", Unsigned.u16(sidrReq.pkey()));
            sid = sidrReq.serviceId();
        } else {
            sidrRep.wrap(mad, 0);
            m.put("request_id", Unsigned.u32(sidrRep.requestId()));
            named(m, "status", sidrRep.status(), sidrStatusName(sidrRep.status()));
            m.put("qpn", Unsigned.u24(sidrRep.qpn()));
            m.put("qkey", Unsigned.u32(sidrRep.qkey()));
            sid = sidrRep.serviceId();
        }
        m.put("service_id", Unsigned.u64(sid));
        int ps = CmaHeader.portSpace(sid);
        if (ps >= 0) {
            m.put("ps", psName(ps));
            m.put("port", CmaHeader.port(sid));
        }
        putLength(m, p);
        return m;
    }

    /** SIDR_REP status names (IBA 12.11.2 Table 121). */
    static String sidrStatusName(int status) {
        return switch (status) {
            case SidrRep.SUCCESS -> "VALID";
            case SidrRep.UNSUPPORTED -> "SERVICE_ID_NOT_SUPPORTED";
            case SidrRep.REJECT -> "REJECTED";
            case SidrRep.NO_QP -> "NO_QP";
            case SidrRep.REDIRECT -> "REDIRECT";
            case SidrRep.UNSUPPORTED_VERSION -> "VERSION_NOT_SUPPORTED";
            default -> "RESERVED_" + status;
        };
    }

    private void putReq(Map<String, Object> m) {
        req.wrap(mad, 0);
        long sid = req.serviceId();
        m.put("service_id", Unsigned.u64(sid));
        int ps = CmaHeader.portSpace(sid);
        if (ps >= 0) {
            m.put("ps", psName(ps));
            m.put("port", CmaHeader.port(sid));
        }
        m.put("qpn", Unsigned.u24(req.localQpn()));
        m.put("starting_psn", Unsigned.u24(req.startingPsn()));
        named(m, "transport", req.transportServiceType(), switch (req.transportServiceType()) {
            case CmReq.TRANSPORT_RC -> "RC";
            case CmReq.TRANSPORT_UC -> "UC";
            case CmReq.TRANSPORT_XRC -> "XRC";
            default -> "RESERVED_2";
        });
        named(m, "mtu", req.pathMtu(), mtuName(req.pathMtu()));
        m.put("resp_res", req.responderResources());
        m.put("init_depth", req.initiatorDepth());
        // rdma_cm puts its header in the REQ private data unless the ids are AF_IB (cma.c cma_user_data_offset);
        // an AF_IB id uses RDMA_PS_IB, so under PS_IB show the header only when it names an IP version
        cma.wrap(mad, req.privateDataIndex());
        if (ps == CmaHeader.PS_TCP || ps == CmaHeader.PS_UDP
                || (ps == CmaHeader.PS_IB && (cma.ipVersion() == 4 || cma.ipVersion() == 6))) {
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("ip_version", cma.ipVersion());
            InetAddress src = cma.sourceAddress();
            InetAddress dst = cma.destinationAddress();
            c.put("src", src != null ? src.getHostAddress() : null);
            c.put("dst", dst != null ? dst.getHostAddress() : null);
            c.put("src_port", cma.port());
            if (cma.cmaVersion() != CmaHeader.CMA_VERSION) {
                c.put("cma_version", cma.cmaVersion()); // rdma_cm refuses any but 0 (cma_save_ip_info)
            }
            m.put("cma", c);
        }
        putJroceExtensions(m, req.privateDataIndex(), CmAttribute.REQ.privateDataLength());
    }

    /**
     * A jroce peer's extensions offer (REQ) or answer (REP): the trailer in the last 8 bytes of the private data
     * ({@link ExtensionTrailer}); nothing when there is none.
     */
    private void putJroceExtensions(Map<String, Object> m, int index, int length) {
        byte[] area = new byte[length];
        mad.getBytes(index, area);
        int flags = ExtensionTrailer.decode(area);
        if (flags >= 0) m.put("jroce_ext", JroceExtensions.toString(flags));
    }

    private static void putLength(Map<String, Object> m, RocePacket p) {
        if (p.payloadLength() != MadHeader.MAD_SIZE) {
            m.put("mad_len", p.payloadLength());
        }
    }

    /** An enumerated field: its value as {@code key} and its meaning as {@code key_name}. */
    private static void named(Map<String, Object> m, String key, Object value, String name) {
        m.put(key, value);
        m.put(key + "_name", name);
    }

    /** The REQ's Path Packet Payload MTU (byte 74, bits 7-4; ib_verbs.h enum ib_mtu): 1 = 256 .. 5 = 4096 bytes. */
    static String mtuName(int code) {
        return code >= 1 && code <= 5 ? Integer.toString(128 << code) : "RESERVED_" + code;
    }

    /**
     * A CM timeout field (the MRA's service timeout, the REQ's CM response timeouts): 4.096 us x 2^value,
     * as a duration.
     */
    static String timeoutName(int exponent) {
        double micros = 4.096 * Math.pow(2, exponent);
        if (micros < 1000) return String.format(java.util.Locale.ROOT, "%.3f us", micros);
        if (micros < 1_000_000) return String.format(java.util.Locale.ROOT, "%.3f ms", micros / 1000);
        return String.format(java.util.Locale.ROOT, "%.3f s", micros / 1_000_000);
    }

    /** Management classes (ib_mad.h IB_MGMT_CLASS_*; vendor ranges 0x09-0x0F and 0x30-0x4F). */
    static String mgmtClassName(int c) {
        return switch (c) {
            case 0x01 -> "SUBN_LID_ROUTED";
            case 0x81 -> "SUBN_DIRECTED_ROUTE";
            case 0x03 -> "SUBN_ADM";
            case 0x04 -> "PERF_MGMT";
            case 0x05 -> "BM";
            case 0x06 -> "DEVICE_MGMT";
            case MadHeader.MGMT_CLASS_CM -> "CM";
            case 0x08 -> "SNMP";
            case 0x10 -> "DEVICE_ADM";
            case 0x11 -> "BOOT_MGMT";
            case 0x12 -> "BIS";
            case 0x21 -> "CONG_MGMT";
            default -> (c >= 0x09 && c <= 0x0F) || (c >= 0x30 && c <= 0x4F) ? "VENDOR" : "RESERVED";
        };
    }

    /** MAD methods (ib_mad.h IB_MGMT_METHOD_*). */
    static String methodName(int m) {
        return switch (m) {
            case 0x01 -> "GET";
            case 0x02 -> "SET";
            case MadHeader.METHOD_SEND -> "SEND";
            case 0x05 -> "TRAP";
            case 0x06 -> "REPORT";
            case 0x07 -> "TRAP_REPRESS";
            case 0x81 -> "GET_RESP";
            case 0x86 -> "REPORT_RESP";
            default -> "RESERVED";
        };
    }

    private static String psName(int ps) {
        return switch (ps) {
            case CmaHeader.PS_TCP -> "TCP";
            case CmaHeader.PS_UDP -> "UDP";
            default -> "IB";
        };
    }

    /** Message Rejected / Message MRAed (IBTA Tables 107, 108): 0 REQ, 1 REP, 2 other (LAP for an MRA). */
    private static String rejectedName(int v) {
        return switch (v) {
            case 0 -> "REQ";
            case 1 -> "REP";
            case 2 -> "OTHER";
            default -> "RESERVED_3";
        };
    }
}
