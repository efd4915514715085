#!/usr/bin/env bash
# jroce's performance targets in one run: the loopback UDP yardstick and `jroce perf` between two processes,
# interleaved, REPS rounds (the order of the kinds rotated each round, so that the load of a shared machine falls on
# all alike), with the default options of `jroce perf` (and `--lat`). Prints one line per run, then a table of
# medians over the rounds, each as a ratio to the yardstick (or to WRITE, or to one QP) with the spread of the
# per-round ratios, and whether the target is met.
#
#   bench/targets.sh [--out DIR]
#
# Kinds (each a separate pair of processes):
#   yardstick        scripts/yardstick.sh: 4124-byte and 64-byte datagrams by sendmmsg, $SECS s each, and the
#                    80-byte round trip ($RTT_COUNT); its CPU ns per packet give its CPU seconds per GB
#   lat-invoked      perf send --lat -s 64 -n $ITERS (the device run by the polling thread: the default of --lat)
#   lat-dedicated    the same with --agent dedicated
#   write-1m, read-1m, send-1m, write-64k, read-64k, send-64k    perf TEST -s SIZE -D $SECS, one QP
#   send-64-q16      perf send -s 64 -q 16 -D $SECS (messages per second)
#   write-64k-q256   perf write -s 64k -q 256 -t 16 -D $SECS
#   write-64k-q4096  perf write -s 64k -q 4096 -t 2 -D $SECS
# Many QPs take a smaller -t (messages each QP keeps posted) than perftest's 128, so that what is still posted when
# -D ends (QPs x t messages: 256 and 512 MiB) drains in a few seconds; one QP keeps the default 128.
# CPU seconds per GB of payload are those of write-1m's sender (client) and receiver (server), sampled from
# /proc/PID/stat over the measurement window (bench/perf-lib.sh).
#
# Knobs (environment): REPS (3), SECS (5), ITERS (50000), RTT_COUNT (20000), KINDS (all of the above),
# ADDR_BASE (127.77.66), PORT_BASE (18600), JAVA_OPTS (given to both JVMs).
# The jar is used as built (cli/target/jroce.jar); the yardstick needs gcc.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/ab-args.sh" targets "$@"
REPS=${REPS:-3} SECS=${SECS:-5} ITERS=${ITERS:-50000} RTT_COUNT=${RTT_COUNT:-20000}
KINDS=${KINDS:-yardstick lat-invoked lat-dedicated write-1m read-1m send-1m write-64k read-64k send-64k send-64-q16 write-64k-q256 write-64k-q4096}
ADDR_BASE=${ADDR_BASE:-127.77.66} PORT_BASE=${PORT_BASE:-18600} JAVA_OPTS=${JAVA_OPTS:-}
SERVER_ADDR=$ADDR_BASE.1 CLIENT_ADDR=$ADDR_BASE.2
JAR=$REPO/cli/target/jroce.jar
[[ -f $JAR ]] || { echo "bench/targets.sh: build the jar first (mvn -pl cli -am package): $JAR" >&2; exit 2; }
mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
HZ=$(getconf CLK_TCK)
log() { echo "targets: $*" >&2; }
. "$REPO/bench/perf-lib.sh"

{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$REPO" diff --quiet HEAD 2>/dev/null || echo '+changes')"
    echo "nproc=$(nproc) kernel=$(uname -r)"
    echo "reps=$REPS secs=$SECS iters=$ITERS rtt_count=$RTT_COUNT"
    echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/meta.txt"

# kv FILE KEY: the value of KEY=... on the first line that has it
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | head -n 1; }
# runs.csv: one row per figure: round, kind, metric, value
row() { echo "$1,$2,$3,$4" | tee -a "$OUT/runs.csv"; }

one() { # ROUND KIND
    local rep=$1 kind=$2 name=$2-$1 f t q
    case $kind in
        yardstick)
            f=$OUT/runs/$name.txt
            ADDR=$ADDR_BASE.3:4791 SECS=$SECS RTT_COUNT=$RTT_COUNT RUNS="4124:sendmmsg 64:sendmmsg" "$REPO/scripts/yardstick.sh" >"$f"
            row "$rep" yard rtt_us "$(kv "$f" median_us)"
            row "$rep" yard rtt_p99_us "$(kv "$f" p99_us)"
            row "$rep" yard gbit_4124 "$(grep 'size=4124' "$f" | sed -n 's/.* rx_gbps=\([^ ]*\).*/\1/p')"
            row "$rep" yard mpps_64 "$(grep 'size=64 ' "$f" | sed -n 's/.* rx_mpps=\([^ ]*\).*/\1/p')"
            # CPU ns per packet of a 4124-byte datagram: ns per byte are s per GB
            row "$rep" yard snd_s_per_gb "$(grep 'size=4124' "$f" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^tx_cpu_ns_per_pkt=/) { split($i, a, "="); printf "%.3f", a[2] / 4124 } }')"
            row "$rep" yard rcv_s_per_gb "$(grep 'size=4124' "$f" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^rx_cpu_ns_per_pkt=/) { split($i, a, "="); printf "%.3f", a[2] / 4124 } }')"
            ;;
        lat-invoked|lat-dedicated)
            perf_run "$name" 1 send --lat --agent "${kind#lat-}" -m 4096 -s 64 -n "$ITERS" --timeout 120
            t=$(jnum "$OUT/runs/$name.client.json" t_typical_us) q=$(jnum "$OUT/runs/$name.client.json" t_99_us)
            # perftest's t_typical and t_99 are half round trips
            row "$rep" "$kind" rtt_us "$(awk -v t="${t:-0}" 'BEGIN { printf "%.2f", 2 * t }')"
            row "$rep" "$kind" rtt_p99_us "$(awk -v t="${q:-0}" 'BEGIN { printf "%.2f", 2 * t }')"
            ;;
        *)
            local test=${kind%%-*} rest=${kind#*-} size qargs=()
            case ${rest%%-*} in 1m) size=1048576 ;; 64k) size=65536 ;; 64) size=64 ;; esac
            case $rest in
                *-q16) qargs=(-q 16) ;;
                *-q256) qargs=(-q 256 -t 16) ;;
                *-q4096) qargs=(-q 4096 -t 2) ;;
            esac
            bw_point "$name" "$test" "$size" "$SECS" -m 4096 --timeout 120 "${qargs[@]}"
            [[ $STATUS == ok ]] || log "$name: $STATUS"
            row "$rep" "$kind" gbit "${GBIT:-0}"
            row "$rep" "$kind" mpps "${RATE:-0}"
            if [[ $kind == write-1m ]]; then
                row "$rep" "$kind" snd_s_per_gb "$SND_PER_GB"
                row "$rep" "$kind" rcv_s_per_gb "$RCV_PER_GB"
            fi
            ;;
    esac
}

read -r -a K <<<"$KINDS"
echo "round,kind,metric,value" >"$OUT/runs.csv"
for rep in $(seq 1 "$REPS"); do
    for ((k = 0; k < ${#K[@]}; k++)); do
        one "$rep" "${K[$(((k + rep - 1) % ${#K[@]}))]}"
    done
done
echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"

# target rows: label, kind and metric of the figure, kind and metric of what it is read against, the comparison
# (le: the ratio at most LIMIT; ge: at least), LIMIT
awk -F, "$AB_STATS"'
    NR == FNR { if (FNR > 1 && $4 != "") { v[$2, $3] = v[$2, $3] " " $4; r[$1, $2, $3] = $4; reps[$1] = 1 } next }
    { label = $1; k = $2; m = $3; bk = $4; bm = $5; cmp = $6; lim = $7
      if (v[k, m] == "" || v[bk, bm] == "") next
      a = median(v[k, m]); b = median(v[bk, bm]); ratio = b > 0 ? a / b : 0
      s = ""; for (i in reps) if (r[i, bk, bm] > 0 && r[i, k, m] != "") s = s " " sprintf("%.2f", r[i, k, m] / r[i, bk, bm])
      met = (cmp == "le" ? ratio <= lim : ratio >= lim) ? "yes" : "no"
      printf "| %s | %s (%s) | %s (%s) | **%.2f** (%s) | %s %s | %s |\n", label, a, spread(v[k, m]), b, spread(v[bk, bm]), ratio, spread(s), (cmp == "le" ? "<=" : ">="), lim, met }
    BEGIN { print "| target | figure, median (spread) | read against, median (spread) | ratio of medians (per-round ratios) | target | met |"
            print "|---|---|---|---|---|---|" }' "$OUT/runs.csv" - <<'EOF' | tee "$OUT/summary.md"
64 B SEND round trip invoked (µs),lat-invoked,rtt_us,yard,rtt_us,le,1.3
64 B SEND round trip p99 invoked (µs),lat-invoked,rtt_p99_us,yard,rtt_p99_us,le,3
64 B SEND round trip dedicated (µs),lat-dedicated,rtt_us,yard,rtt_us,le,2
WRITE 1 MiB vs sendmmsg 4124 B (Gbit/s),write-1m,gbit,yard,gbit_4124,ge,0.8
READ 1 MiB vs WRITE 1 MiB (Gbit/s),read-1m,gbit,write-1m,gbit,ge,0.9
SEND 1 MiB vs WRITE 1 MiB (Gbit/s),send-1m,gbit,write-1m,gbit,ge,0.9
READ 64 KiB vs WRITE 64 KiB (Gbit/s),read-64k,gbit,write-64k,gbit,ge,0.9
SEND 64 KiB vs WRITE 64 KiB (Gbit/s),send-64k,gbit,write-64k,gbit,ge,0.9
SEND 64 B 16 QPs vs sendmmsg 64 B (M msg/s vs Mpps),send-64-q16,mpps,yard,mpps_64,ge,0.6
WRITE 64 KiB 256 QPs vs 1 QP (Gbit/s),write-64k-q256,gbit,write-64k,gbit,ge,0.9
WRITE 64 KiB 4096 QPs vs 1 QP (Gbit/s),write-64k-q4096,gbit,write-64k,gbit,ge,0.8
CPU s/GB sender (WRITE 1 MiB client),write-1m,snd_s_per_gb,yard,snd_s_per_gb,le,1.5
CPU s/GB receiver (WRITE 1 MiB server),write-1m,rcv_s_per_gb,yard,rcv_s_per_gb,le,1.5
EOF
echo "results in $OUT"
