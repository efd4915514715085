#!/usr/bin/env bash
# SEND and READ against WRITE at the same size (the target "READ and SEND >= 0.9 x WRITE"): alternating
# `jroce perf write|send|read` pairs (two JVMs on loopback), REPS rounds, the order of the three rotated each round
# so that the load of a shared machine falls on all alike. Prints one line per run, the median per operation and
# the medians' ratios to WRITE, and the ratios within each round (the three runs of a round are a minute apart).
#
#   bench/ops-ab.sh [--out DIR]
#
# Knobs (environment): REPS (4), SECS (10), SIZE (1048576), MTU (4096), ADDR_BASE (127.77.64), TCP_PORT (18564).
# The jar is used as built (cli/target/jroce.jar). Goodput is perf's own bw_avg_gbit_s over the whole run.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/ab-args.sh" ops-ab "$@"
REPS=${REPS:-4} SECS=${SECS:-10} SIZE=${SIZE:-1048576} MTU=${MTU:-4096}
ADDR_BASE=${ADDR_BASE:-127.77.64} TCP_PORT=${TCP_PORT:-18564}
JAR=$REPO/cli/target/jroce.jar
[[ -f $JAR ]] || { echo "bench/ops-ab.sh: build the jar first (mvn -pl cli -am package): $JAR" >&2; exit 2; }
mkdir -p "$OUT"
OPS=(write send read)
echo "rep,op,load1,gbit_s" > "$OUT/runs.csv"
for rep in $(seq 1 "$REPS"); do
    for k in 0 1 2; do
        op=${OPS[$(((k + rep) % 3))]}
        d=$OUT/$op-$rep
        load=$(cut -d' ' -f1 /proc/loadavg)
        java -jar "$JAR" perf "$op" --bind "$ADDR_BASE.1" -p "$TCP_PORT" --timeout 120 -m "$MTU" -s "$SIZE" -D "$SECS" --json >"$d.rx.out" 2>"$d.rx.err" &
        rxpid=$!
        sleep 1.5 # the server's warm-up and TCP listen
        java -jar "$JAR" perf "$op" "$ADDR_BASE.1" --bind "$ADDR_BASE.2" -p "$TCP_PORT" -m "$MTU" -s "$SIZE" -D "$SECS" --json \
            >"$d.tx.out" 2>"$d.tx.err" || echo "ops-ab: client $op $rep failed" >&2
        wait "$rxpid" || echo "ops-ab: server $op $rep failed" >&2
        g=$(sed -n 's/.*"bw_avg_gbit_s":\([0-9.]*\).*/\1/p' "$d.tx.out" | head -1)
        echo "$rep,$op,$load,${g:-0}" | tee -a "$OUT/runs.csv"
    done
done
awk -F, 'NR > 1 { v[$2] = v[$2] " " $4; r[$1, $2] = $4; reps[$1] = 1 }
    function median(s,   a, n, i, j, t) { n = split(s, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { w = median(v["write"])
        for (op in v) printf "%-5s median %.3f Gbit/s, %.2f x WRITE (runs:%s)\n", op, median(v[op]), median(v[op]) / w, v[op]
        for (op in v) if (op != "write") { s = ""; for (k in reps) if (r[k, "write"] > 0) s = s " " sprintf("%.2f", r[k, op] / r[k, "write"])
            printf "%s / WRITE within each round:%s (median %.2f)\n", op, s, median(s) } }' "$OUT/runs.csv" | tee "$OUT/summary.txt"
