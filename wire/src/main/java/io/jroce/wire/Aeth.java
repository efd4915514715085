package io.jroce.wire;

/**
 * AETH syndrome helpers (IBA 9.7.5.1; rxe_hdr.h {@code enum aeth_syndrome}).
 *
 * <pre>
 * syndrome bit 7     reserved (0)
 * bits 6..5          00 ACK, 01 RNR NAK, 10 reserved, 11 NAK
 * bits 4..0          ACK: credit count code; RNR NAK: timer code; NAK: NAK code
 * </pre>
 */
public final class Aeth {
    /** ACK syndrome with credit code 31, "no credit information": what rxe always sends (AETH_ACK_UNLIMITED). */
    public static final int ACK_UNLIMITED = 0x1F;
    /** The MSN is a 24-bit counter. */
    public static final int MSN_MASK = 0xFFFFFF;

    private static final int TYPE_ACK = 0x00;
    private static final int TYPE_RNR_NAK = 0x20;
    private static final int TYPE_NAK = 0x60;

    /** Syndrome type, from bits 6..5. */
    public enum Kind { ACK, RNR_NAK, RESERVED, NAK }

    /** NAK codes (syndrome 0x60 | code). */
    public enum NakCode {
        PSN_SEQUENCE_ERROR(0),
        INVALID_REQUEST(1),
        REMOTE_ACCESS_ERROR(2),
        REMOTE_OPERATIONAL_ERROR(3),
        INVALID_RD_REQUEST(4);

        private static final NakCode[] BY_CODE = values();

        private final int code;

        NakCode(int code) {
            this.code = code;
        }

        public int code() {
            return code;
        }

        /** Null for the reserved codes 5..31. */
        public static NakCode of(int code) {
            return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
        }
    }

    private static final Kind[] KINDS = Kind.values();

    /**
     * End-to-end credit counts by code (IBTA credit table, as in rdmavt rc.c {@code credit_table}). Code 31 means "invalid", which an
     * ACK uses to say it carries no credit information, so it maps to -1 (treat as unlimited).
     */
    private static final int[] CREDITS = {
        0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
        256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, -1,
    };

    /**
     * Minimum RNR NAK delays in microseconds by timer code (IBTA RNR timer table, as in ib_verbs.h {@code enum ib_rnr_timeout} and rxe_comp.c {@code rnrnak_usec}).
     * Code 0 is the longest, 655.36 ms. Code 25 is 61.44 ms; rxe_comp.c's table has the typo 61410 us.
     */
    private static final int[] RNR_MICROS = {
        655_360, 10, 20, 30, 40, 60, 80, 120,
        160, 240, 320, 480, 640, 960, 1_280, 1_920,
        2_560, 3_840, 5_120, 7_680, 10_240, 15_360, 20_480, 30_720,
        40_960, 61_440, 81_920, 122_880, 163_840, 245_760, 327_680, 491_520,
    };

    private Aeth() {
    }

    public static Kind kind(int syndrome) {
        return KINDS[(syndrome >>> 5) & 3];
    }

    /** The low 5 bits: credit code, RNR timer code or NAK code, depending on {@link #kind}. */
    public static int value(int syndrome) {
        return syndrome & 0x1F;
    }

    public static int ack(int creditCode) {
        return TYPE_ACK | (creditCode & 0x1F);
    }

    public static int rnrNak(int timerCode) {
        return TYPE_RNR_NAK | (timerCode & 0x1F);
    }

    public static int nak(NakCode code) {
        return TYPE_NAK | code.code();
    }

    /** Credits granted by an ACK's credit code; -1 for code 31 (no credit information / unlimited). */
    public static int creditCount(int creditCode) {
        return CREDITS[creditCode & 0x1F];
    }

    /** The minimum delay an RNR NAK with this timer code asks the requester to wait. */
    public static long rnrTimerNanos(int timerCode) {
        return RNR_MICROS[timerCode & 0x1F] * 1_000L;
    }
}
