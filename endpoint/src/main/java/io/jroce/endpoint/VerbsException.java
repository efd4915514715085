package io.jroce.endpoint;

/**
 * A verbs call that failed synchronously: a post the endpoint refused, an illegal QP transition, a missing
 * attribute. Nothing went on the wire. {@link #badRequest()} names the work request that was refused in a
 * chained post; the requests before it were posted.
 */
public class VerbsException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient Object badRequest;

    public VerbsException(String message) {
        this(message, null);
    }

    public VerbsException(String message, Object badRequest) {
        super(message);
        this.badRequest = badRequest;
    }

    /** The refused {@link SendWorkRequest} or {@link ReceiveWorkRequest}, or null. */
    public Object badRequest() {
        return badRequest;
    }
}
