package io.jroce.endpoint;

/** Work completion status, named as libibverbs' {@code IBV_WC_*} codes without the prefix. */
public enum WcStatus {
    SUCCESS,
    LOC_LEN_ERR,
    LOC_QP_OP_ERR,
    LOC_EEC_OP_ERR,
    LOC_PROT_ERR,
    WR_FLUSH_ERR,
    MW_BIND_ERR,
    BAD_RESP_ERR,
    LOC_ACCESS_ERR,
    REM_INV_REQ_ERR,
    REM_ACCESS_ERR,
    REM_OP_ERR,
    RETRY_EXC_ERR,
    RNR_RETRY_EXC_ERR,
    LOC_RDD_VIOL_ERR,
    REM_INV_RD_REQ_ERR,
    REM_ABORT_ERR,
    INV_EECN_ERR,
    INV_EEC_STATE_ERR,
    FATAL_ERR,
    RESP_TIMEOUT_ERR,
    GENERAL_ERR;

    /** The libibverbs numeric value ({@code enum ibv_wc_status}), in declaration order. */
    public int ibvValue() {
        return ordinal();
    }
}
