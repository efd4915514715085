package io.jroce.wire;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Minimal classic-pcap reader for tests (the real one lives in io.jroce.wire.pcap, owned elsewhere):
 * Ethernet link type only, optional 802.1Q tag, returns IPv4/IPv6 packets carrying UDP to port 4791.
 */
final class TestPcap {
    /** One RoCEv2 packet: the whole frame and where its IP header starts. */
    static final class Packet {
        final byte[] frame;
        final int ipOffset;
        final int number;

        Packet(byte[] frame, int ipOffset, int number) {
            this.frame = frame;
            this.ipOffset = ipOffset;
            this.number = number;
        }

        int ipVersion() {
            return (frame[ipOffset] & 0xFF) >>> 4;
        }

        int ipv4Id() {
            return u16(frame, ipOffset + 4);
        }

        int ipv4FlagsFragment() {
            return u16(frame, ipOffset + 6);
        }

        int srcAddr() {
            return ByteBuffer.wrap(frame, ipOffset + 12, 4).getInt();
        }

        int dstAddr() {
            return ByteBuffer.wrap(frame, ipOffset + 16, 4).getInt();
        }

        int udpOffset() {
            return ipOffset + 20;
        }

        int srcPort() {
            return u16(frame, udpOffset());
        }

        int dstPort() {
            return u16(frame, udpOffset() + 2);
        }

        int udpPayloadOffset() {
            return udpOffset() + 8;
        }

        int udpPayloadLength() {
            return u16(frame, udpOffset() + 4) - 8;
        }

        int ipLength() {
            return frame.length - ipOffset;
        }
    }

    private TestPcap() {
    }

    static List<Packet> rocePackets(Path file) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file));
        int magic = b.order(ByteOrder.LITTLE_ENDIAN).getInt(0);
        if (magic == 0xA1B2C3D4 || magic == 0xA1B23C4D) {
            b.order(ByteOrder.LITTLE_ENDIAN);
        } else if (Integer.reverseBytes(magic) == 0xA1B2C3D4 || Integer.reverseBytes(magic) == 0xA1B23C4D) {
            b.order(ByteOrder.BIG_ENDIAN);
        } else {
            throw new IOException(file + ": not a classic pcap file");
        }
        int linkType = b.getInt(20);
        if (linkType != 1) {
            throw new IOException(file + ": link type " + linkType + ", only Ethernet (1) supported");
        }
        List<Packet> out = new ArrayList<>();
        int pos = 24;
        int number = 0;
        while (pos + 16 <= b.limit()) {
            int incl = b.getInt(pos + 8);
            pos += 16;
            if (incl < 0 || pos + incl > b.limit()) {
                throw new IOException(file + ": truncated record " + (number + 1));
            }
            byte[] frame = new byte[incl];
            b.get(pos, frame);
            pos += incl;
            number++;
            int ip = ipOffset(frame);
            if (ip >= 0 && isRoce(frame, ip)) {
                out.add(new Packet(frame, ip, number));
            }
        }
        return out;
    }

    private static int ipOffset(byte[] f) {
        if (f.length < 14) {
            return -1;
        }
        int type = u16(f, 12);
        int ip = 14;
        if (type == 0x8100 && f.length >= 18) {
            type = u16(f, 16);
            ip = 18;
        }
        return type == 0x0800 || type == 0x86DD ? ip : -1;
    }

    private static boolean isRoce(byte[] f, int ip) {
        int version = (f[ip] & 0xFF) >>> 4;
        int udp;
        if (version == 4 && f.length >= ip + 28 && f[ip + 9] == 17) {
            udp = ip + (f[ip] & 0x0F) * 4;
        } else if (version == 6 && f.length >= ip + 48 && f[ip + 6] == 17) {
            udp = ip + 40;
        } else {
            return false;
        }
        return f.length >= udp + 8 && u16(f, udp + 2) == RoceV2.UDP_PORT;
    }

    static int u16(byte[] a, int i) {
        return (a[i] & 0xFF) << 8 | (a[i + 1] & 0xFF);
    }
}
