#!/usr/bin/env bash
# UDP GSO on send, on against off: bench/run.sh --quick, alternately with -Djroce.gso=true and
# -Djroce.gso=false in both JVMs, REPS times each, so that the load of a shared machine falls on both alike;
# prints the median of each figure per mode, with the load averages and the yardstick of the same runs.
#
#   bench/gso-ab.sh [--out DIR]      # about 1 minute per run on a loaded 2-core machine, 2 x REPS runs
#
# Knobs (environment): REPS (3), SIZES ("65536 1048576"), TESTS ("write read"), SECS (2), LAT_ITERS (500),
# plus bench/run.sh's (ADDR_BASE, PORT_BASE...). The jar is used as built (cli/target/jroce.jar).
# Results: DIR/{on,off}-N/ (bench/run.sh's files) and DIR/summary.txt.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/ab-args.sh" gso-ab "$@"
REPS=${REPS:-3}
mkdir -p "$OUT"
export SIZES=${SIZES:-65536 1048576} TESTS=${TESTS:-write read} SECS=${SECS:-2} LAT_ITERS=${LAT_ITERS:-500}
export RUNS=${RUNS:-4124:sendmmsg 4124:gso}   # the yardstick: one RoCE MTU-4096 packet per datagram, both ways

for i in $(seq 1 "$REPS"); do
    for mode in on off; do
        flag=true
        [[ $mode == off ]] && flag=false
        echo "gso-ab: run $i, GSO $mode (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
        JAVA_OPTS="-Djroce.gso=$flag" "$REPO/bench/run.sh" --quick --no-build --no-report --out "$OUT/$mode-$i" 2>"$OUT/$mode-$i.log" \
            || echo "gso-ab: run $i ($mode) failed, see $OUT/$mode-$i.log" >&2
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
{
    echo "# bench/gso-ab.sh, $REPS runs per mode, alternating; medians"
    for mode in on off; do
        loads=$(cat "$OUT"/$mode-*/meta.txt 2>/dev/null | sed -n 's/^load_start=\([0-9.]*\).*/\1/p' | tr '\n' ' ')
        echo "GSO $mode: load average (1 min) at the start of each run: $loads"
        for test in $TESTS; do
            for size in $SIZES; do
                col() { awk -F, -v t="$test" -v s="$size" -v c="$1" '$1 == t && $4 == s && $6 == "ok" { print $c }' "$OUT"/$mode-*/bw.csv | median; }
                printf '  %-5s %8s B: %s Gbit/s (runs: %s), CPU s/GB sender %s receiver %s\n' "$test" "$size" "$(col 8)" \
                    "$(awk -F, -v t="$test" -v s="$size" '$1 == t && $4 == s { printf "%s ", $8 }' "$OUT"/$mode-*/bw.csv)" "$(col 14)" "$(col 15)"
            done
        done
        for ym in sendmmsg gso; do
            printf '  yardstick 4124 B %-8s rx %s Gbit/s\n' "$ym" "$(awk -F, -v m="$ym" '$1 == m { print $3 }' "$OUT"/$mode-*/yardstick.csv | median)"
        done
    done
} | tee "$OUT/summary.txt"
