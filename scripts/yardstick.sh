#!/usr/bin/env bash
# Loopback UDP yardstick: what this machine can do with RoCE-sized datagrams,
# measured with the project's plain C tool (bench/udp-limit), so that
# `jroce perf` / `jroce demo` figures from the same run can be read against it.
#
#   scripts/yardstick.sh                       # from anywhere; about 35 s
#   SECS=1 RTT_COUNT=2000 scripts/yardstick.sh # quick look, about 10 s on an idle machine
#
# Measures, on loopback only (127.0.0.0/8), blaster -> sink on $ADDR, $SECS s each:
#   1. 4124-byte datagrams (one RoCE packet with a 4096-byte payload), sendmmsg batches of 64
#   2. the same with UDP GSO (UDP_SEGMENT super-buffers into a plain recvmmsg sink)
#   3. 1068-byte datagrams (MTU 1024), sendmmsg;  4. 1068 bytes, GSO
#   5. 64-byte datagrams, sendmmsg
#   6. round trip of one 80-byte datagram (pingpong <-> echo, blocking), $RTT_COUNT samples
# and prints one "yardstick ..." summary line per measurement. Gbit/s count UDP
# payload bytes (the whole RoCE packet, BTH .. ICRC), not IP/UDP headers; rx_* is
# what the sink received, tx_* what the blaster sent; loss_pct is the share of sent
# datagrams the sink never got; rcvbuf_drops the machine's Udp RcvbufErrors meanwhile.
#
# Knobs: ADDR (127.0.0.2:4791), SECS (5), RTT_SIZE (80), RTT_COUNT (20000),
#        SIZE (unset: if set, throughput runs only this size, sendmmsg and gso),
#        RUNS ("4124:sendmmsg 4124:gso 1068:sendmmsg 1068:gso 64:sendmmsg"),
#        IDLE_MS (300: the sink ends once its queue stayed empty this long), CC (gcc).
# The tool is built into a temporary directory (removed on exit); nothing in
# the repository is written.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=$REPO/bench/udp-limit/udp-limit.c
ADDR=${ADDR:-127.0.0.2:4791}
SECS=${SECS:-5}
RTT_SIZE=${RTT_SIZE:-80}
RTT_COUNT=${RTT_COUNT:-20000}
IDLE_MS=${IDLE_MS:-300}
CC=${CC:-gcc}
if [[ -n ${SIZE:-} ]]; then
    RUNS=${RUNS:-$SIZE:sendmmsg $SIZE:gso}
fi
RUNS=${RUNS:-4124:sendmmsg 4124:gso 1068:sendmmsg 1068:gso 64:sendmmsg}

case ${ADDR%%:*} in
    127.*) ;;
    *) echo "yardstick: ADDR must be a loopback address (127.0.0.0/8), got $ADDR" >&2; exit 2 ;;
esac
command -v "$CC" >/dev/null || { echo "yardstick: $CC is required" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/jroce-yardstick.XXXXXX")
SERVER=   # pid of the running sink/echo, so that an early exit does not leave it behind
cleanup() {
    if [[ -n $SERVER ]]; then kill "$SERVER" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# Same flags as bench/udp-limit/Makefile; a warning is an error here.
"$CC" -O2 -Wall -Wextra -Werror -o "$WORK/udp-limit" "$SRC"
BIN=$WORK/udp-limit

# value of key $2 in the key=value line in file $1
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | head -n 1; }

# wait until server $1 (pid) has written "listening" to $2 (its stderr): it is bound
ready() {
    local i
    for ((i = 0; i < 200; i++)); do
        grep -q listening "$2" && return 0
        if ! kill -0 "$1" 2>/dev/null; then break; fi
        sleep 0.025
    done
    echo "yardstick: server on $ADDR did not start:" >&2
    cat "$2" >&2
    exit 1
}

echo "yardstick: $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(uname -n) kernel=$(uname -r) cpus=$(nproc) load1=$(cut -d' ' -f1 /proc/loadavg) addr=$ADDR"

# tput SIZE MODE: blaster and sink as two processes; summary from both sides
tput() {
    local size=$1 mode=$2
    "$BIN" sink --bind "$ADDR" --seconds $((SECS + 15)) --idle "$IDLE_MS" >"$WORK/sink.out" 2>"$WORK/sink.err" &
    SERVER=$!
    ready "$SERVER" "$WORK/sink.err"
    "$BIN" blast --to "$ADDR" --size "$size" --seconds "$SECS" --mode "$mode" >"$WORK/blast.out"
    local rc=0
    wait "$SERVER" || rc=$?
    SERVER=
    if ((rc != 0)); then
        echo "yardstick: sink received nothing ($size B $mode):" >&2
        cat "$WORK/sink.err" "$WORK/sink.out" "$WORK/blast.out" >&2
        exit 1
    fi
    awk -v mode="$mode" -v size="$size" -v secs="$SECS" \
        -v txpps="$(kv "$WORK/blast.out" pps)" -v txg="$(kv "$WORK/blast.out" gbps)" \
        -v rxpps="$(kv "$WORK/sink.out" pps)" -v rxg="$(kv "$WORK/sink.out" gbps)" \
        -v txpkts="$(kv "$WORK/blast.out" pkts)" -v rxpkts="$(kv "$WORK/sink.out" pkts)" \
        -v txns="$(kv "$WORK/blast.out" cpu_ns_per_pkt)" -v rxns="$(kv "$WORK/sink.out" cpu_ns_per_pkt)" \
        -v batch="$(kv "$WORK/blast.out" batch)" -v segs="$(kv "$WORK/blast.out" segs_per_buf)" \
        -v drops="$(kv "$WORK/sink.out" udp_rcvbuf_errors)" \
        'BEGIN { printf "yardstick tput mode=%s size=%d secs=%d rx_mpps=%.3f rx_gbps=%.2f tx_mpps=%.3f tx_gbps=%.2f loss_pct=%.2f tx_cpu_ns_per_pkt=%d rx_cpu_ns_per_pkt=%d batch=%d segs_per_buf=%d rcvbuf_drops=%d\n",
                 mode, size, secs, rxpps / 1e6, rxg, txpps / 1e6, txg, 100 * (txpkts - rxpkts) / txpkts, txns, rxns, batch, segs, drops }'
}

for run in $RUNS; do
    tput "${run%%:*}" "${run#*:}"
done

# Round trip: echo runs until pingpong is done, then SIGTERM makes it print its count and exit.
"$BIN" echo --bind "$ADDR" --seconds 600 --idle 60000 >"$WORK/echo.out" 2>"$WORK/echo.err" &
SERVER=$!
ready "$SERVER" "$WORK/echo.err"
"$BIN" pingpong --to "$ADDR" --size "$RTT_SIZE" --count "$RTT_COUNT" --seconds 300 >"$WORK/pp.out"
kill -TERM "$SERVER"
wait "$SERVER"
SERVER=
echo "yardstick rtt size=$RTT_SIZE count=$RTT_COUNT median_us=$(kv "$WORK/pp.out" median_us) p99_us=$(kv "$WORK/pp.out" p99_us) min_us=$(kv "$WORK/pp.out" min_us) p999_us=$(kv "$WORK/pp.out" p999_us) lost=$(kv "$WORK/pp.out" lost) p90_us=$(kv "$WORK/pp.out" p90_us) max_us=$(kv "$WORK/pp.out" max_us)"
