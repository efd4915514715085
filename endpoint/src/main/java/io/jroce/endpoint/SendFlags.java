package io.jroce.endpoint;

/** Send work request flags; values are libibverbs' {@code IBV_SEND_*} bits. */
public final class SendFlags {
    /** Hold this WR until every earlier READ and atomic on the send queue has completed. */
    public static final int FENCE = 1;
    /** Generate a completion when this WR completes successfully (failures always complete). */
    public static final int SIGNALED = 1 << 1;
    /** Set the BTH SE bit on the message's last packet so the responder raises a solicited event. */
    public static final int SOLICITED = 1 << 2;
    /** Copy the payload at post time; the source buffer may be reused as soon as the post returns. */
    public static final int INLINE = 1 << 3;

    private SendFlags() {
    }
}
