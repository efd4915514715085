#!/usr/bin/env bash
# Unmodified perftest through jroce's verbs libraries (`jroce exec`) beside `jroce perf`, in one run: RDMA WRITE
# bandwidth (ib_write_bw against jroce perf write) and 64-byte SEND latency (ib_send_lat against jroce perf send
# --lat), both sides of each pair the same kind, REPS rounds, the order within each round rotated so that the load
# of a shared machine falls on all alike. Prints one line per run, then the medians, their spread, and the ratio
# of the libraries' median to jroce perf's (bandwidth: higher is better; latency: lower is better).
#
# Both kinds use the same parameters: WRITE of SIZE bytes for SECS seconds (-D), path MTU 4096, one QP, perftest's
# default TX depth; latency 64-byte SENDs, ITERS iterations, t_typical (half the round trip, perftest's figure).
#
#   bench/verbs-ab.sh [--out DIR]
#
# Knobs (environment): REPS (3), SIZE (65536), SECS (5), ITERS (20000), ADDR_BASE (127.77.66), TCP_PORT (18566).
# Needs perftest (Debian: apt-get install perftest), the jar (cli/target/jroce.jar) and the verbs libraries
# (verbs/target/native), as `mvn -B -ntp -q package -DskipTests` builds them.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/ab-args.sh" verbs-ab "$@"
REPS=${REPS:-3} SIZE=${SIZE:-65536} SECS=${SECS:-5} ITERS=${ITERS:-20000}
ADDR_BASE=${ADDR_BASE:-127.77.66} TCP_PORT=${TCP_PORT:-18566}
JAR=$REPO/cli/target/jroce.jar
[[ -f $JAR ]] || { echo "bench/verbs-ab.sh: build first (mvn -B -ntp -q package -DskipTests): $JAR" >&2; exit 2; }
command -v ib_write_bw >/dev/null || { echo "bench/verbs-ab.sh: perftest is not installed (apt-get install perftest)" >&2; exit 2; }
mkdir -p "$OUT"

# bw_avg FILE: the BW average column (Gb/sec, --report_gbits) of the perftest table in FILE
bw_avg() { awk 'f && NF >= 5 && $1 ~ /^[0-9]+$/ { print $4; exit } /BW average/ { f = 1 }' "$1"; }
# t_typical FILE: the t_typical column (usec) of the perftest latency table in FILE
t_typical() { awk 'f && NF >= 5 && $1 ~ /^[0-9]+$/ { print $5; exit } /t_typical/ { f = 1 }' "$1"; }

# pair D SERVER... -- CLIENT...: the server in the background, the client after it listens, both waited for
pair() {
    local d=$1; shift
    local server=() client=()
    while [[ $1 != -- ]]; do server+=("$1"); shift; done
    shift
    client=("$@")
    "${server[@]}" >"$d.rx.out" 2>"$d.rx.err" &
    local rxpid=$!
    # the server listens on TCP_PORT once it is ready: wait for that, not a fixed time
    for _ in $(seq 1 600); do
        ss -ltn "sport = :$TCP_PORT" 2>/dev/null | grep -q LISTEN && break
        kill -0 "$rxpid" 2>/dev/null || break
        sleep 0.05
    done
    "${client[@]}" >"$d.tx.out" 2>"$d.tx.err" || echo "verbs-ab: client of $d failed" >&2
    wait "$rxpid" || echo "verbs-ab: server of $d failed" >&2
}

exec_on() { local a=$1; shift; java -jar "$JAR" exec --bind "$a" -- "$@"; }

run() {
    local kind=$1 d=$2 s=$ADDR_BASE.1 c=$ADDR_BASE.2
    case $kind in
        perf-write)
            pair "$d" java -jar "$JAR" perf write --bind "$s" -p "$TCP_PORT" --timeout 120 -m 4096 -s "$SIZE" -D "$SECS" --report_gbits \
                -- java -jar "$JAR" perf write "$s" --bind "$c" -p "$TCP_PORT" -m 4096 -s "$SIZE" -D "$SECS" --report_gbits ;;
        ib_write_bw)
            pair "$d" exec_on "$s" ib_write_bw -d jroce0 -x 1 -F -p "$TCP_PORT" -m 4096 -s "$SIZE" -D "$SECS" --report_gbits \
                -- exec_on "$c" ib_write_bw -d jroce0 -x 1 -F -p "$TCP_PORT" -m 4096 -s "$SIZE" -D "$SECS" --report_gbits "$s" ;;
        perf-send-lat)
            pair "$d" java -jar "$JAR" perf send --lat --bind "$s" -p "$TCP_PORT" --timeout 120 -m 4096 -s 64 -n "$ITERS" \
                -- java -jar "$JAR" perf send --lat "$s" --bind "$c" -p "$TCP_PORT" -m 4096 -s 64 -n "$ITERS" ;;
        ib_send_lat)
            pair "$d" exec_on "$s" ib_send_lat -d jroce0 -x 1 -F -p "$TCP_PORT" -m 4096 -s 64 -n "$ITERS" \
                -- exec_on "$c" ib_send_lat -d jroce0 -x 1 -F -p "$TCP_PORT" -m 4096 -s 64 -n "$ITERS" "$s" ;;
    esac
}

KINDS=(perf-write ib_write_bw perf-send-lat ib_send_lat)
echo "rep,kind,load1,value" >"$OUT/runs.csv"
for rep in $(seq 1 "$REPS"); do
    for k in 0 1 2 3; do
        kind=${KINDS[$(((k + rep) % 4))]}
        d=$OUT/$kind-$rep
        load=$(cut -d' ' -f1 /proc/loadavg)
        run "$kind" "$d"
        case $kind in
            *write*) v=$(bw_avg "$d.tx.out") ;;
            *) v=$(t_typical "$d.tx.out") ;;
        esac
        echo "$rep,$kind,$load,${v:-0}" | tee -a "$OUT/runs.csv"
    done
done
awk -F, "$AB_STATS"'NR > 1 { v[$2] = v[$2] " " $4 }
    END {
        printf "kind,median,spread,ratio\n"
        w = median(v["perf-write"]); l = median(v["perf-send-lat"])
        printf "perf-write (Gbit/s),%s,%s,1.00\n", w, spread(v["perf-write"])
        printf "ib_write_bw (Gbit/s),%s,%s,%.2f\n", median(v["ib_write_bw"]), spread(v["ib_write_bw"]), (w > 0 ? median(v["ib_write_bw"]) / w : 0)
        printf "perf-send-lat (t_typical us),%s,%s,1.00\n", l, spread(v["perf-send-lat"])
        printf "ib_send_lat (t_typical us),%s,%s,%.2f\n", median(v["ib_send_lat"]), spread(v["ib_send_lat"]), (l > 0 ? median(v["ib_send_lat"]) / l : 0)
    }' "$OUT/runs.csv" | tee "$OUT/summary.csv"
