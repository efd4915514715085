#!/usr/bin/env bash
# Soak: two `jroce soak` processes on loopback, each its own JVM with one device (server SERVER, client CLIENT),
# for MINUTES minutes: QPS RC QPs carrying rounds of RDMA WRITE, SEND and FETCH_AND_ADD from the client, a SEND
# back from the server and an RDMA READ, with 1 % loss and 1 % reordering of every datagram each device sends
# (--chaos out.drop=0.01,out.reorder=0.01 on both, so every datagram meets exactly one injector, whichever way it
# goes). Every byte of every message is checked where it lands, against a pattern of the seed, the QP, the
# operation and the round; every FETCH_AND_ADD must return its round's number. The client prints a row per minute
# (messages and MiB verified per operation, retransmissions of each device, RSS and heap after a full GC of each
# process, verification failures, QPs in error) and a verdict. Exit status 0 only if nothing was lost, duplicated
# or corrupted, no QP went to error, and each process's RSS and heap after GC grew at most MAX_GROWTH % from
# minute 2 to the last minute (the heap may always grow 4 MiB); 1 otherwise; 2 on bad usage.
#
# Two processes rather than one JVM with two devices: each process's RSS and heap are then its own device's, and
# one side's GC pauses or leaks cannot hide in, or be blamed on, the other's. Both JVMs run with a fixed heap that
# is touched at start (-Xms = -Xmx = HEAP, -XX:+AlwaysPreTouch), so RSS does not grow while a JVM sizes its heap:
# growth of RSS is then memory outside the heap (direct buffers, threads, code), and the heap after GC is the
# live set of the heap itself.
#
#   bench/soak.sh MINUTES [--out DIR]
#
# Knobs (environment): QPS (64), SIZE (64k), DEPTH (2), CHAOS (out.drop=0.01,out.reorder=0.01), EXTENSIONS (none),
# INTERVAL (60s), MAX_GROWTH (10), SERVER (127.0.64.1), CLIENT (127.0.64.2), TCP_PORT (46400), HEAP (256m),
# JAVA_OPTS (more JVM options). Both processes' output goes to DIR (default bench/results/soak-<UTC time>):
# client.out holds the table, server.out and *.err the rest. The jar is used as built (cli/target/jroce.jar).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { echo "bench/soak.sh: $1 (usage: bench/soak.sh MINUTES [--out DIR]; --help for more)" >&2; exit 2; }
MINUTES= OUT=
while (($#)); do
    case $1 in
        --out) [[ $# -ge 2 ]] || usage "--out needs a directory"; OUT=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) usage "unknown option $1" ;;
        *) [[ -z $MINUTES ]] || usage "one MINUTES only"; MINUTES=$1 ;;
    esac
    shift
done
[[ -n $MINUTES ]] || usage "missing MINUTES"
[[ $MINUTES =~ ^[1-9][0-9]*$ ]] || usage "MINUTES must be a whole number of minutes, not '$MINUTES'"
QPS=${QPS:-64} SIZE=${SIZE:-64k} DEPTH=${DEPTH:-2} CHAOS=${CHAOS:-out.drop=0.01,out.reorder=0.01} EXTENSIONS=${EXTENSIONS:-none}
INTERVAL=${INTERVAL:-60s} MAX_GROWTH=${MAX_GROWTH:-10} SERVER=${SERVER:-127.0.64.1} CLIENT=${CLIENT:-127.0.64.2}
TCP_PORT=${TCP_PORT:-46400} HEAP=${HEAP:-256m}
JAR=$REPO/cli/target/jroce.jar
[[ -f $JAR ]] || { echo "bench/soak.sh: build the jar first (mvn -pl cli -am package -DskipTests): $JAR" >&2; exit 2; }
OUT=${OUT:-$REPO/bench/results/soak-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
# shellcheck disable=SC2206
JVM=(-Xms"$HEAP" -Xmx"$HEAP" -XX:+AlwaysPreTouch ${JAVA_OPTS:-})

echo "bench/soak.sh: $MINUTES min, $QPS QPs, chaos $CHAOS on both devices, heap $HEAP per JVM; output in $OUT"
java "${JVM[@]}" -jar "$JAR" soak --bind "$SERVER" -p "$TCP_PORT" --timeout 120 --chaos "$CHAOS" --counters \
    >"$OUT/server.out" 2>"$OUT/server.err" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
# the client retries its TCP connect until the server listens (--timeout)
set +e
java "${JVM[@]}" -jar "$JAR" soak "$SERVER" --bind "$CLIENT" -p "$TCP_PORT" --timeout 120 -D "${MINUTES}m" --interval "$INTERVAL" \
    -q "$QPS" -s "$SIZE" --depth "$DEPTH" --jroce-extensions "$EXTENSIONS" --max-growth "$MAX_GROWTH" --chaos "$CHAOS" --counters \
    2>"$OUT/client.err" | tee "$OUT/client.out"
client_rc=${PIPESTATUS[0]}
wait "$server"
server_rc=$?
set -e
trap - EXIT
echo "bench/soak.sh: client exit $client_rc, server exit $server_rc (server: $(grep -m1 'server PASS\|server FAIL' "$OUT/server.out" || echo 'no verdict'))"
if ((client_rc == 2 || server_rc == 2)); then exit 2; fi
((client_rc == 0 && server_rc == 0)) || exit 1
