#!/usr/bin/env bash
# Loopback UDP yardstick: what this machine can do with RoCE-sized datagrams,
# measured with plain C (../shared/tools/udp-limit), so that `jroce perf` /
# `jroce demo` figures from the same session can be read against it.
#
#   scripts/yardstick.sh            # from anywhere; about 15 s
#
# Measures, on loopback only (127.0.0.0/8):
#   1. throughput, 4124-byte datagrams (one 4096-byte-payload RoCE packet),
#      blaster -> sink on $ADDR, sendmmsg (batch 64), $SECS s
#   2. the same with UDP GSO (UDP_SEGMENT super-buffers, plain recvmmsg sink)
#   3. round trip of one 80-byte datagram (pingpong/echo, blocking), $RTT_COUNT samples
# and prints one "yardstick ..." summary line per measurement.
#
# Knobs: ADDR (127.0.0.2:4791), SECS (5), SIZE (4124), RTT_SIZE (80),
#        RTT_COUNT (20000), UDP_LIMIT_SRC (<repo>/../shared/tools/udp-limit).
# The tool is built into a temporary directory (removed on exit); nothing in
# the repo or in ../shared is written.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=${UDP_LIMIT_SRC:-$REPO/../shared/tools/udp-limit}
ADDR=${ADDR:-127.0.0.2:4791}
SECS=${SECS:-5}
SIZE=${SIZE:-4124}
RTT_SIZE=${RTT_SIZE:-80}
RTT_COUNT=${RTT_COUNT:-20000}

case ${ADDR%%:*} in
    127.*) ;;
    *) echo "yardstick: ADDR must be a loopback address (127.0.0.0/8), got $ADDR" >&2; exit 2 ;;
esac
if [[ ! -f $SRC/udp-limit.c ]]; then
    echo "yardstick: $SRC/udp-limit.c not found (expected ../shared beside the checkout)" >&2
    exit 2
fi
command -v gcc >/dev/null || { echo "yardstick: gcc is required" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/jroce-yardstick.XXXXXX")
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# Build only the C tool (the Makefile's flags), not CrcBench.
gcc -O2 -g -Wall -Wextra -o "$WORK/udp-limit" "$SRC/udp-limit.c"
BIN=$WORK/udp-limit

# value of key $2 in the key=value line in file $1
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | head -n 1; }

echo "yardstick: $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(uname -n) kernel=$(uname -r) cpus=$(nproc) load1=$(cut -d' ' -f1 /proc/loadavg) addr=$ADDR"

# tput MODE: blaster and sink as two processes; summary from both sides
tput() {
    local mode=$1
    "$BIN" sink --bind "$ADDR" --seconds $((SECS + 15)) --idle 500 >"$WORK/sink.out" 2>"$WORK/sink.err" &
    local sp=$!
    PIDS+=("$sp")
    sleep 0.3
    if ! kill -0 "$sp" 2>/dev/null; then
        echo "yardstick: sink failed to start on $ADDR:" >&2
        cat "$WORK/sink.err" >&2
        exit 1
    fi
    "$BIN" blast --to "$ADDR" --size "$SIZE" --seconds "$SECS" --mode "$mode" >"$WORK/blast.out"
    wait "$sp"
    awk -v mode="$mode" -v size="$SIZE" -v secs="$SECS" \
        -v txpps="$(kv "$WORK/blast.out" pps)" -v txg="$(kv "$WORK/blast.out" gbps)" \
        -v rxpps="$(kv "$WORK/sink.out" pps)" -v rxg="$(kv "$WORK/sink.out" gbps)" \
        -v loss="$(kv "$WORK/sink.out" loss_pct)" \
        -v txns="$(kv "$WORK/blast.out" cpu_ns_per_pkt)" -v rxns="$(kv "$WORK/sink.out" cpu_ns_per_pkt)" \
        'BEGIN { printf "yardstick tput mode=%s size=%d secs=%d rx_mpps=%.3f rx_gbps=%.2f tx_mpps=%.3f tx_gbps=%.2f loss_pct=%.2f tx_cpu_ns_per_pkt=%d rx_cpu_ns_per_pkt=%d\n",
                 mode, size, secs, rxpps / 1e6, rxg, txpps / 1e6, txg, loss, txns, rxns }'
}

tput sendmmsg
tput gso

"$BIN" echo --bind "$ADDR" --seconds 120 --idle 1000 >"$WORK/echo.out" 2>"$WORK/echo.err" &
ep=$!
PIDS+=("$ep")
sleep 0.3
"$BIN" pingpong --to "$ADDR" --size "$RTT_SIZE" --count "$RTT_COUNT" --seconds 100 >"$WORK/pp.out"
wait "$ep"
echo "yardstick rtt size=$RTT_SIZE count=$RTT_COUNT median_us=$(kv "$WORK/pp.out" median_us) p99_us=$(kv "$WORK/pp.out" p99_us) min_us=$(kv "$WORK/pp.out" min_us) p999_us=$(kv "$WORK/pp.out" p999_us) lost=$(kv "$WORK/pp.out" lost)"
