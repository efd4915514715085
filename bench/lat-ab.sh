#!/usr/bin/env bash
# 64-byte SEND round trip of `jroce perf send --lat` with the device run by the polling thread (--agent invoked)
# and by a thread of its own (--agent dedicated), beside the loopback UDP round trip of the C yardstick
# (udp-limit pingpong, 80-byte datagrams: a 64-byte SEND's RoCE packet), in one run: REPS rounds, the order of
# the three rotated each round so that the load of a shared machine falls on all alike. Prints one line per run,
# then the medians over the rounds and their ratios to the yardstick's median (typical and p99 separately).
#
# jroce's figures are perftest's: t_typical and t_99 are half round trips, so the script doubles them.
#
#   bench/lat-ab.sh [--out DIR]
#
# Knobs (environment): REPS (3), ITERS (20000), SIZE (64), ADDR_BASE (127.77.65), TCP_PORT (18565), UDP_COUNT (20000).
# The jar is used as built (cli/target/jroce.jar); the yardstick is built into a temporary directory (needs gcc).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/ab-args.sh" lat-ab "$@"
REPS=${REPS:-3} ITERS=${ITERS:-20000} SIZE=${SIZE:-64} UDP_COUNT=${UDP_COUNT:-20000}
ADDR_BASE=${ADDR_BASE:-127.77.65} TCP_PORT=${TCP_PORT:-18565}
JAR=$REPO/cli/target/jroce.jar
[[ -f $JAR ]] || { echo "bench/lat-ab.sh: build the jar first (mvn -pl cli -am package): $JAR" >&2; exit 2; }
mkdir -p "$OUT"
YARD=$(mktemp -d)
trap 'rm -rf "$YARD"' EXIT
UDPL=$YARD/udp-limit
gcc -O2 -Wall -Wextra -o "$UDPL" "$REPO/bench/udp-limit/udp-limit.c" || { echo "bench/lat-ab.sh: could not build bench/udp-limit" >&2; exit 2; }

field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" "$1" | head -1; }
kv() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | head -1; }

run_udp() {
    local d=$1
    "$UDPL" echo --bind "$ADDR_BASE.3:4791" --seconds 120 --idle 3000 >"$d.echo.out" 2>&1 &
    local epid=$!
    sleep 0.3
    "$UDPL" pingpong --to "$ADDR_BASE.3:4791" --size 80 --count "$UDP_COUNT" --warmup 1000 >"$d.out" 2>"$d.err" || true
    kill "$epid" 2>/dev/null || true
    wait "$epid" 2>/dev/null || true
}

run_jroce() {
    local d=$1 agent=$2
    java -jar "$JAR" perf send --lat --agent "$agent" --bind "$ADDR_BASE.1" -p "$TCP_PORT" --timeout 120 -m 4096 -s "$SIZE" -n "$ITERS" --json \
        >"$d.rx.out" 2>"$d.rx.err" &
    local rxpid=$!
    sleep 1.5 # the server's warm-up and TCP listen
    java -jar "$JAR" perf send --lat --agent "$agent" "$ADDR_BASE.1" --bind "$ADDR_BASE.2" -p "$TCP_PORT" -m 4096 -s "$SIZE" \
        -n "$ITERS" --json >"$d.tx.out" 2>"$d.tx.err" || echo "lat-ab: client $agent failed" >&2
    wait "$rxpid" || echo "lat-ab: server $agent failed" >&2
}

KINDS=(udp invoked dedicated)
echo "rep,kind,load1,rtt_typical_us,rtt_p99_us" >"$OUT/runs.csv"
for rep in $(seq 1 "$REPS"); do
    for k in 0 1 2; do
        kind=${KINDS[$(((k + rep) % 3))]}
        d=$OUT/$kind-$rep
        load=$(cut -d' ' -f1 /proc/loadavg)
        if [[ $kind == udp ]]; then
            run_udp "$d"
            typ=$(kv "$d.out" median_us); p99=$(kv "$d.out" p99_us)
        else
            run_jroce "$d" "$kind"
            t=$(field "$d.tx.out" t_typical_us); q=$(field "$d.tx.out" t_99_us)
            typ=$(awk -v t="${t:-0}" 'BEGIN { printf "%.2f", 2 * t }'); p99=$(awk -v t="${q:-0}" 'BEGIN { printf "%.2f", 2 * t }')
        fi
        echo "$rep,$kind,$load,${typ:-0},${p99:-0}" | tee -a "$OUT/runs.csv"
    done
done
awk -F, "$AB_STATS"'NR > 1 { t[$2] = t[$2] " " $4; p[$2] = p[$2] " " $5 }
    END { ut = median(t["udp"]); up = median(p["udp"])
        printf "kind,rtt_typical_median_us,spread,ratio_to_udp,rtt_p99_median_us,spread,ratio_to_udp\n"
        n = split("udp invoked dedicated", k, " ")
        for (i = 1; i <= n; i++) {
            mt = median(t[k[i]]); mp = median(p[k[i]])
            printf "%s,%.1f,%s,%.2f,%.1f,%s,%.2f\n", k[i], mt, spread(t[k[i]]), (ut > 0 ? mt / ut : 0), mp, spread(p[k[i]]), (up > 0 ? mp / up : 0)
        } }' "$OUT/runs.csv" | tee "$OUT/summary.csv"
echo "results in $OUT"
