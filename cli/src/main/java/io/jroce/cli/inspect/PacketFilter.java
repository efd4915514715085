package io.jroce.cli.inspect;

import io.jroce.cli.Converters;
import io.jroce.wire.BthView;
import io.jroce.wire.Opcode;
import io.jroce.wire.pcap.PcapFrame;
import io.netty.buffer.ByteBuf;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.net.InetAddress;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Locale;

/**
 * Which packets the {@code inspect} listing shows: {@code --qpn}, {@code --host} and {@code --opcode}, all
 * of them when several are given. A filter reads the raw headers, so malformed packets are selected by what
 * their bytes say, as they are listed.
 */
final class PacketFilter {
    /** DETH: Q_Key (4 bytes), reserved (1), source QP (3), after the 12-byte BTH (IBA 9.5, Table 45). */
    private static final int DETH_SRC_QP = BthView.LENGTH + 5;

    private final Integer qpn;
    private final InetAddress host;
    private final BitSet opcodes;

    /** {@code qpn}, {@code host}, {@code opcodes}: null for no condition on that field. */
    PacketFilter(Integer qpn, InetAddress host, BitSet opcodes) {
        this.qpn = qpn;
        this.host = host;
        this.opcodes = opcodes;
    }

    boolean isEmpty() {
        return qpn == null && host == null && opcodes == null;
    }

    /** The RoCE packet at {@code [off, off+len)} of frame {@code f}'s buffer {@code buf} passes every condition. */
    boolean matches(PcapFrame f, ByteBuf buf, int off, int len) {
        if (host != null && !host.equals(f.srcAddress()) && !host.equals(f.dstAddress())) {
            return false;
        }
        if (opcodes != null && (len < 1 || !opcodes.get(buf.getUnsignedByte(off)))) {
            return false;
        }
        if (qpn != null) {
            if (len < BthView.LENGTH) {
                return false;
            }
            int opcode = buf.getUnsignedByte(off);
            boolean ud = opcode == Opcode.UD_SEND_ONLY.code() || opcode == Opcode.UD_SEND_ONLY_WITH_IMMEDIATE.code();
            boolean toQp = buf.getUnsignedMedium(off + 5) == qpn;
            boolean fromQp = ud && len >= DETH_SRC_QP + 3 && buf.getUnsignedMedium(off + DETH_SRC_QP) == qpn;
            return toQp || fromQp;
        }
        return true;
    }

    // ------------------------------------------------------------------------------------------ option values

    /** {@code --qpn}: a 24-bit QP number, decimal or 0x hex. */
    static final class Qpn implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String s) {
            String t = s.strip();
            try {
                int v = t.startsWith("0x") || t.startsWith("0X") ? Integer.parseInt(t.substring(2), 16) : Integer.parseInt(t);
                if (v >= 0 && v <= 0xFFFFFF) {
                    return v;
                }
            } catch (NumberFormatException e) {
                // the message below
            }
            throw new TypeConversionException("'" + s + "' is not a QP number (0 to 0xffffff, such as 17 or 0x11)");
        }
    }

    /** {@code --host}: a literal IPv4 or IPv6 address, never a name. */
    static final class Host implements ITypeConverter<InetAddress> {
        @Override
        public InetAddress convert(String s) {
            try {
                return Converters.ip(s);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /**
     * {@code --opcode}: opcode names as inspect prints them ({@code RC_SEND_ONLY}, {@code CNP}, {@code
     * UNKNOWN_0x15}), in any case, or codes ({@code 0x64}), separated by commas.
     */
    static final class Opcodes implements ITypeConverter<BitSet> {
        @Override
        public BitSet convert(String list) {
            BitSet set = new BitSet(256);
            for (String item : list.split(",", -1)) {
                set.set(code(item.strip()));
            }
            return set;
        }

        private static int code(String name) {
            String upper = name.toUpperCase(Locale.ROOT);
            for (Opcode op : Opcode.values()) {
                if (op.name().equals(upper)) {
                    return op.code();
                }
            }
            String hex = upper.startsWith("UNKNOWN_0X") ? upper.substring(10) : upper.startsWith("0X") ? upper.substring(2) : null;
            if (hex != null && !hex.isEmpty() && hex.length() <= 2) {
                try {
                    return Integer.parseInt(hex, 16);
                } catch (NumberFormatException e) {
                    // the message below
                }
            }
            throw new TypeConversionException("'" + name + "' is not an opcode: give names as inspect prints them ("
                    + String.join(", ", Arrays.stream(new Opcode[] {Opcode.RC_SEND_ONLY, Opcode.RC_ACKNOWLEDGE,
                            Opcode.UD_SEND_ONLY, Opcode.CNP}).map(Opcode::name).toList())
                    + ", ...) or codes such as 0x64, separated by commas");
        }
    }
}
