package io.jroce.cli.soak;

/**
 * The memory region of one QP, the same on both sides: {@code depth} slots in each area, one per round in flight
 * (round r uses slot r mod depth). The client sends SENDs from the send area and WRITEs from the write area,
 * READs into the read area, receives replies into the reply area and gets its FETCH_AND_ADD results in the
 * atomic area; the server receives SENDs into the send area, is written in the write area, is read from the
 * read area, replies from the reply area and keeps the QP's counter in the first word of the atomic area.
 *
 * @param depth    rounds in flight per QP
 * @param maxLen   largest SEND, WRITE or READ, a multiple of 8
 * @param maxReply largest reply, a multiple of 8
 */
record SoakLayout(int depth, int maxLen, int maxReply) {
    /** Largest region: three areas of depth x maxLen must fit an int. */
    static final long MAX_REGION = 1L << 30;

    SoakLayout {
        if (depth < 1 || maxLen < 8 || maxReply < 8 || maxLen % 8 != 0 || maxReply % 8 != 0) {
            throw new IllegalArgumentException("bad layout " + depth + "/" + maxLen + "/" + maxReply);
        }
        if (bytes(depth, maxLen, maxReply) > MAX_REGION) throw new IllegalArgumentException("region over 1 GiB");
    }

    static long bytes(int depth, long maxLen, long maxReply) {
        return depth * (3 * maxLen + maxReply + 8);
    }

    int regionBytes() {
        return (int) bytes(depth, maxLen, maxReply);
    }

    int slot(long round) {
        return (int) (round % depth);
    }

    int sendAt(int slot) {
        return slot * maxLen;
    }

    int writeAt(int slot) {
        return (depth + slot) * maxLen;
    }

    int readAt(int slot) {
        return (2 * depth + slot) * maxLen;
    }

    int replyAt(int slot) {
        return 3 * depth * maxLen + slot * maxReply;
    }

    int atomicAt(int slot) {
        return 3 * depth * maxLen + depth * maxReply + 8 * slot;
    }

    /** The server's counter, the target of every FETCH_AND_ADD of the QP. */
    int counterAt() {
        return atomicAt(0);
    }

    /** The largest message of {@code op}. */
    int max(SoakOp op) {
        return switch (op) {
            case SEND, WRITE, READ -> maxLen;
            case REPLY -> maxReply;
            case ATOMIC -> 8;
        };
    }
}
