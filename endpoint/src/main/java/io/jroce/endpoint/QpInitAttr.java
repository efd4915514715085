package io.jroce.endpoint;

/** What a queue pair is created with ({@code struct ibv_qp_init_attr}): its type, CQs and capabilities. */
public final class QpInitAttr {
    CompletionQueue sendCq;
    CompletionQueue recvCq;
    int maxSendWr = 128;
    int maxRecvWr = 128;
    int maxSendSge = 4;
    int maxRecvSge = 4;
    int maxInlineData = 64;
    boolean sqSigAll;
    QpType qpType = QpType.RC;

    public QpInitAttr(CompletionQueue sendCq, CompletionQueue recvCq) {
        this.sendCq = sendCq;
        this.recvCq = recvCq;
    }

    public QpInitAttr(CompletionQueue cq) {
        this(cq, cq);
    }

    public QpInitAttr maxSendWr(int v) { maxSendWr = v; return this; }
    public QpInitAttr maxRecvWr(int v) { maxRecvWr = v; return this; }
    public QpInitAttr maxSendSge(int v) { maxSendSge = v; return this; }
    public QpInitAttr maxRecvSge(int v) { maxRecvSge = v; return this; }
    public QpInitAttr maxInlineData(int v) { maxInlineData = v; return this; }
    /** Every send WR completes with a CQE, whatever its SIGNALED flag says. */
    public QpInitAttr sqSigAll(boolean v) { sqSigAll = v; return this; }

    /** The transport service ({@code ibv_qp_init_attr.qp_type}); RC unless set. */
    public QpInitAttr qpType(QpType v) {
        if (v == null) throw new IllegalArgumentException("qp_type must be RC or UD");
        qpType = v;
        return this;
    }

    public QpType qpType() { return qpType; }
    public int maxSendWr() { return maxSendWr; }
    public int maxRecvWr() { return maxRecvWr; }
    public int maxSendSge() { return maxSendSge; }
    public int maxRecvSge() { return maxRecvSge; }
    public int maxInlineData() { return maxInlineData; }
    public boolean sqSigAll() { return sqSigAll; }
    public CompletionQueue sendCq() { return sendCq; }
    public CompletionQueue recvCq() { return recvCq; }
}
