package io.jroce.endpoint;

/**
 * What a post checks and copies (rdma_rxe rxe_verbs.c validate_send_wr, init_send_wqe; rxe_post_recv): every
 * check that can refuse a work request is made before its queue slot is claimed ({@code check*}, which throw
 * {@link VerbsException}), so the copy into the claimed slot ({@code fill*}) cannot fail half-way and the slot is
 * always published ({@link WorkQueue}). Called on the posting thread; reads the QP's state and its init
 * attributes, which do not change while it is posted to.
 */
final class PostCheck {
    private final QueuePair qp;
    private final Device device;
    private final ProtectionDomain pd;
    private final QpInitAttr init;
    private final QpType type;
    private final int qpn;

    /** For {@code qp}, whose device, PD, type, number and init attributes are set already. */
    PostCheck(QueuePair qp) {
        this.qp = qp;
        this.device = qp.device();
        this.pd = qp.pd();
        this.init = qp.initAttr();
        this.type = qp.type();
        this.qpn = qp.qpNum();
    }

    /** Everything about a send work request that can be refused at post time; throws {@link VerbsException}. */
    void checkSend(SendWorkRequest wr, boolean faultsInCompletion) {
        QpState st = qp.state;
        if (!st.acceptsSends() && st != QpState.ERR) {
            throw new VerbsException("QP 0x" + Integer.toHexString(qpn) + " is in " + st
                    + ": send work requests may be posted in RTS (move it to RTS first)", wr);
        }
        WrOpcode op = wr.opcode();
        if (op == null) throw new VerbsException("work request has no opcode", wr);
        Sge[] sgl = wr.sgl();
        if (sgl.length > init.maxSendSge) {
            throw new VerbsException(sgl.length + " SGEs exceed max_send_sge " + init.maxSendSge, wr);
        }
        boolean inline = (wr.flags() & SendFlags.INLINE) != 0;
        long total = wr.totalLength();
        if (inline) {
            if (op.isReadOrAtomic()) throw new VerbsException("INLINE is only for SEND and RDMA WRITE, not " + op, wr);
            if (total > init.maxInlineData) {
                throw new VerbsException("inline data of " + total + " bytes exceeds max_inline_data " + init.maxInlineData, wr);
            }
        }
        if (total > Integer.MAX_VALUE) throw new VerbsException("message of " + total + " bytes exceeds 2^31-1", wr);
        if (type == QpType.UD) checkUd(wr, op, total);
        if (op.isAtomic() && (sgl.length != 1 || sgl[0].length() != 8)) {
            throw new VerbsException(op + " needs exactly one SGE of 8 bytes for the original value", wr);
        }
        if (!faultsInCompletion) {
            int needLocal = op.writesLocalMemory() ? Access.LOCAL_WRITE : 0;
            for (int i = 0; i < sgl.length; i++) resolveSge(sgl[i], i, needLocal, op, wr);
        }
    }

    /**
     * Copies a checked send work request into its slot. Each SGE is looked up again: one whose region was
     * deregistered since the check fails in the completion, as with faults in the completion (see
     * {@link QueuePair#postSend(SendWorkRequest, boolean)}), instead of refusing a request already counted as posted.
     */
    void fillSend(SendWqe w, SendWorkRequest wr) {
        WrOpcode op = wr.opcode();
        Sge[] sgl = wr.sgl();
        boolean inline = (wr.flags() & SendFlags.INLINE) != 0;
        int total = (int) wr.totalLength();
        int needLocal = op.writesLocalMemory() ? Access.LOCAL_WRITE : 0;
        w.fault = null;
        for (int i = 0; i < sgl.length; i++) {
            Sge s = sgl[i];
            MemoryRegion mr = device.keys().byLkey(s.lkey());
            WcStatus fault = sgeFault(mr, s, needLocal);
            if (fault != null) {
                mr = MemoryRegion.NONE;
                // a READ or atomic fails on its response (the scatter meets NONE); the first bad SGE names the status
                if (!op.isReadOrAtomic() && w.fault == null) w.fault = fault;
            }
            w.sgeMr[i] = mr;
            w.sgeAddr[i] = s.addr();
            w.sgeLen[i] = s.length();
        }
        w.numSge = sgl.length;
        w.wrId = wr.wrId();
        w.opcode = op;
        w.flags = wr.flags();
        w.signaled = init.sqSigAll || (wr.flags() & SendFlags.SIGNALED) != 0;
        w.length = total;
        w.remoteAddr = wr.remoteAddr();
        w.rkey = wr.rkey();
        w.immData = wr.immData();
        w.invalidateRkey = wr.invalidateRkey();
        w.compareAdd = wr.compareAdd();
        w.swap = wr.swap();
        w.ah = type == QpType.UD ? wr.ah() : null;
        w.remoteQpn = wr.remoteQpn();
        w.remoteQkey = wr.remoteQkey();
        w.inline = null;
        if (inline && w.fault == null) {
            byte[] copy = w.inlineBuffer(init.maxInlineData);
            int at = 0;
            for (int i = 0; i < w.numSge; i++) {
                w.sgeMr[i].mem().getBytes(w.sgeMr[i].offsetOf(w.sgeAddr[i]), copy, at, w.sgeLen[i]);
                at += w.sgeLen[i];
            }
            w.inline = copy;
        }
        w.resetProgress();
    }

    /**
     * A UD work request: SEND or SEND_WITH_IMM only, a live address handle of this QP's protection domain, a
     * 24-bit remote QPN, and a message that fits one packet of the port MTU (what rxe_req.c get_mtu uses for
     * UD: the port's mtu_cap, not a path MTU, which a UD QP does not have). rdma_rxe (rxe_req.c, IBA
     * C10-93.1.1) completes an oversize UD send as if sent without emitting it; refusing it at post time tells
     * the caller instead of losing the message silently.
     */
    private void checkUd(SendWorkRequest wr, WrOpcode op, long total) {
        if (op != WrOpcode.SEND && op != WrOpcode.SEND_WITH_IMM) {
            throw new VerbsException("a UD QP posts SEND and SEND_WITH_IMM only, not " + op, wr);
        }
        AddressHandle ah = wr.ah();
        if (ah == null) throw new VerbsException("a UD send needs an address handle: SendWorkRequest.ud(ah, remoteQpn, remoteQkey)", wr);
        if (ah.isDestroyed()) throw new VerbsException(ah + " was destroyed", wr);
        if (ah.pd() != pd) throw new VerbsException("the address handle belongs to another protection domain", wr);
        if ((wr.remoteQpn() & ~0xFFFFFF) != 0) throw new VerbsException("remote QPN must be 24 bits: 0x" + Integer.toHexString(wr.remoteQpn()), wr);
        int mtu = device.portMtu().bytes();
        if (total > mtu) {
            throw new VerbsException("UD message of " + total + " bytes exceeds the port MTU " + mtu + " (one packet per UD message)", wr);
        }
    }

    /**
     * What rdma_rxe's copy_data (rxe_mr.c) would fail with on this SGE: null when it names a registered region of this
     * QP's protection domain with the access needed and lies inside it; {@link WcStatus#LOC_QP_OP_ERR} when the key
     * lookup fails (lookup_mr: no such key, another PD, access lacking: -EINVAL), {@link WcStatus#LOC_PROT_ERR} when
     * it lies outside the region (mr_check_range: -EFAULT, kernel 6.1).
     */
    private WcStatus sgeFault(Sge s, int needAccess) {
        return sgeFault(device.keys().byLkey(s.lkey()), s, needAccess);
    }

    /** {@link #sgeFault(Sge, int)} with the region the SGE's lkey named when it was looked up ({@code mr}, or null). */
    private WcStatus sgeFault(MemoryRegion mr, Sge s, int needAccess) {
        if (mr == null || !mr.isRegistered() || mr.pd() != pd || (mr.access() & needAccess) != needAccess) return WcStatus.LOC_QP_OP_ERR;
        return mr.contains(s.addr(), s.length()) ? null : WcStatus.LOC_PROT_ERR;
    }

    /** The region an SGE names, checked for key, protection domain, bounds and the local access needed. */
    /** {@code op}: the send work request's opcode, or null for a receive (the message is built only on failure). */
    private MemoryRegion resolveSge(Sge s, int i, int needAccess, WrOpcode op, Object wr) {
        MemoryRegion mr = device.keys().byLkey(s.lkey());
        if (mr == null || !mr.isRegistered()) {
            throw new VerbsException("SGE " + i + ": lkey 0x" + Integer.toHexString(s.lkey()) + " is not a registered region", wr);
        }
        if (mr.pd() != pd) throw new VerbsException("SGE " + i + ": region belongs to another protection domain", wr);
        if (!mr.contains(s.addr(), s.length())) {
            throw new VerbsException("SGE " + i + ": [0x" + Long.toHexString(s.addr()) + ", +" + s.length() + ") is outside " + mr, wr);
        }
        if ((mr.access() & needAccess) != needAccess) {
            throw new VerbsException("SGE " + i + ": " + (op == null ? "a receive buffer needs LOCAL_WRITE access"
                    : op + " writes the local buffer but the region lacks LOCAL_WRITE"), wr);
        }
        return mr;
    }

    void checkRecv(ReceiveWorkRequest wr, boolean faultsInCompletion) {
        if (!qp.state.acceptsReceives()) {
            throw new VerbsException("QP 0x" + Integer.toHexString(qpn) + " is in RESET: receives may be posted from INIT on", wr);
        }
        Sge[] sgl = wr.sgl();
        if (sgl.length > init.maxRecvSge) {
            throw new VerbsException(sgl.length + " SGEs exceed max_recv_sge " + init.maxRecvSge, wr);
        }
        if (!faultsInCompletion) {
            for (int i = 0; i < sgl.length; i++) resolveSge(sgl[i], i, Access.LOCAL_WRITE, null, wr);
        }
    }

    /** Copies a checked receive work request into its slot; an SGE whose region went away since fails in the completion. */
    void fillRecv(RecvWqe r, ReceiveWorkRequest wr) {
        Sge[] sgl = wr.sgl();
        long cap = 0;
        r.fault = null;
        for (int i = 0; i < sgl.length; i++) {
            Sge s = sgl[i];
            MemoryRegion mr = device.keys().byLkey(s.lkey());
            if (sgeFault(mr, s, Access.LOCAL_WRITE) != null) {
                mr = MemoryRegion.NONE;
                r.fault = WcStatus.LOC_QP_OP_ERR;
            }
            r.sgeMr[i] = mr;
            r.sgeAddr[i] = s.addr();
            r.sgeLen[i] = s.length();
            cap += s.length();
        }
        r.numSge = sgl.length;
        r.capacity = cap;
        r.wrId = wr.wrId();
    }
}
