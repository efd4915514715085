package io.jroce.endpoint;

/**
 * A verbs call that failed synchronously: a post the endpoint refused, an illegal QP transition, a missing
 * attribute. Nothing went on the wire. {@link #badRequest()} names the work request that was refused in a
 * chained post; the requests before it were posted.
 */
public class VerbsException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient Object badRequest;
    private final boolean queueFull;

    public VerbsException(String message) {
        this(message, null);
    }

    public VerbsException(String message, Object badRequest) {
        this(message, badRequest, false);
    }

    private VerbsException(String message, Object badRequest, boolean queueFull) {
        super(message);
        this.badRequest = badRequest;
        this.queueFull = queueFull;
    }

    /** A post refused because the work queue had no free slot ({@code ENOMEM} from libibverbs' post calls). */
    static VerbsException queueFull(String message, Object badRequest) {
        return new VerbsException(message, badRequest, true);
    }

    /**
     * Whether the post was refused only because the work queue was full: polling completions (freeing slots) and
     * posting again succeeds. Every other refusal is an invalid request ({@code EINVAL}).
     */
    public boolean isQueueFull() {
        return queueFull;
    }

    /** The refused {@link SendWorkRequest} or {@link ReceiveWorkRequest}, or null. */
    public Object badRequest() {
        return badRequest;
    }
}
