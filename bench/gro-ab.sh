#!/usr/bin/env bash
# UDP GRO against recvmmsg on receive: alternating `jroce perf write` pairs (two JVMs on loopback)
# for receiver {recvmmsg, gro} x sender {plain, gso}, REPS rounds, the order of the four rotated each round so
# that the load of a shared machine falls on all alike; prints one line per run and the medians per mode.
#
#   bench/gro-ab.sh [--out DIR]
#
# Knobs (environment): REPS (5), SECS (5), SIZE (1048576), MTU (4096), ADDR_BASE (127.77.63), TCP_PORT (18563).
# The jar is used as built (cli/target/jroce.jar). Steady-state figures: over the window from the client's first
# to its last progress line (startup, warm-up and connection excluded), Gbit/s from the message counts in those
# lines and CPU (utime+stime from /proc/PID/stat, in cores: CPU seconds per second) of each JVM in that window;
# rx CPU s/GB = receiver CPU seconds per GB received. gbit_s_perf is perf's own average over the whole run. Results: DIR/runs.csv, DIR/summary.txt and each run's output.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/ab-args.sh" gro-ab "$@"
REPS=${REPS:-5} SECS=${SECS:-5} SIZE=${SIZE:-1048576} MTU=${MTU:-4096}
ADDR_BASE=${ADDR_BASE:-127.77.63} TCP_PORT=${TCP_PORT:-18563}
JAR=$REPO/cli/target/jroce.jar
mkdir -p "$OUT"
MODES=(recvmmsg:plain gro:plain recvmmsg:gso gro:gso)
echo "mode,rep,load1,gbit_s_steady,gbit_s_perf,rx_cpu,tx_cpu,rx_cpu_s_per_gb,gro_datagrams,gro_segments,packets_in,retransmits" > "$OUT/runs.csv"

num() { sed -n "s/.*[ \"]$1[\":=]*\([0-9.]*\).*/\1/p" "$2" | head -1; }
# CPU ticks (utime+stime, /proc/PID/stat fields 14 and 15) of a process, with the time, every 0.2 s while it lives
poll() { while [[ -r /proc/$1/stat ]]; do echo "$(date +%s.%N) $(awk '{ print $14 + $15 }' /proc/$1/stat 2>/dev/null)"; sleep 0.2; done > "$2"; }
# ticks at time $2 in poll file $1: the last sample at or before it
ticks_at() { awk -v t="$2" 'NF == 2 && $1 <= t { v = $2 } END { print v + 0 }' "$1"; }
for rep in $(seq 1 "$REPS"); do
    for k in 0 1 2 3; do
        mode=${MODES[$(((k + rep) % 4))]}
        rx=${mode%%:*} tx=${mode##*:}
        rxflag=--no-gro txflag=--no-gso
        [[ $rx == gro ]] && rxflag=--gro
        [[ $tx == gso ]] && txflag=--gso
        d=$OUT/$rx-$tx-$rep
        load=$(cut -d' ' -f1 /proc/loadavg)
        java -jar "$JAR" perf write --bind "$ADDR_BASE.1" -p "$TCP_PORT" --timeout 120 -m "$MTU" -s "$SIZE" -D "$SECS" "$rxflag" --counters --json \
            >"$d.rx.out" 2>"$d.rx.err" &
        rxpid=$!
        poll "$rxpid" "$d.rx.cpu" &
        sleep 1.5 # the server's warm-up and TCP listen
        java -jar "$JAR" perf write "$ADDR_BASE.1" --bind "$ADDR_BASE.2" -p "$TCP_PORT" -m "$MTU" -s "$SIZE" -D "$SECS" "$txflag" \
            --counters --json >"$d.tx.out" 2> >(while IFS= read -r l; do echo "$(date +%s.%N) $l"; done >"$d.tx.err") &
        txpid=$!
        poll "$txpid" "$d.tx.cpu" &
        wait "$txpid" || echo "gro-ab: client $mode $rep failed" >&2
        wait "$rxpid" || echo "gro-ab: server $mode $rep failed" >&2
        wait
        # the steady window: from the client's first progress line (about 1 s into the transfer) to its last
        read -r t0 m0 t1 m1 < <(awk '$3 == "perf:" && $7 == "iterations," { if (!n++) { a = $1; b = $6 } c = $1; e = $6 } END { print a, b, c, e }' "$d.tx.err")
        gbit=$(awk -v t0="$t0" -v t1="$t1" -v m0="$m0" -v m1="$m1" -v s="$SIZE" 'BEGIN { if (t1 > t0) printf "%.3f", (m1 - m0) * s * 8 / (t1 - t0) / 1e9; else print "-" }')
        rxcpu=$(awk -v a="$(ticks_at "$d.rx.cpu" "$t0")" -v b="$(ticks_at "$d.rx.cpu" "$t1")" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", (b - a) / 100 / (t1 - t0) }')
        txcpu=$(awk -v a="$(ticks_at "$d.tx.cpu" "$t0")" -v b="$(ticks_at "$d.tx.cpu" "$t1")" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", (b - a) / 100 / (t1 - t0) }')
        pergb=$(awk -v c="$rxcpu" -v g="$gbit" 'BEGIN { if (g > 0) printf "%.3f", c / (g / 8); else print "-" }')
        line="$rx+$tx,$rep,$load,$gbit,$(num bw_avg_gbit_s "$d.rx.out"),$rxcpu,$txcpu,$pergb,$(num gro_datagrams "$d.rx.err"),$(num gro_segments "$d.rx.err"),$(num packets_in "$d.rx.err"),$(num retransmits "$d.tx.err")"
        echo "$line" | tee -a "$OUT/runs.csv" >&2
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
{
    echo "# bench/gro-ab.sh: $REPS rounds, perf write -s $SIZE -m $MTU -D $SECS; medians (all runs in runs.csv)"
    echo "# receiver+sender: steady Gbit/s | perf's Gbit/s | receiver CPU (cores) | receiver CPU s/GB | sender CPU (cores) | gro_segments/gro_datagrams | load (1 min) range"
    for mode in "${MODES[@]}"; do
        m=${mode/:/+}
        col() { awk -F, -v m="$m" -v c="$1" '$1 == m && $c != "-" && $c != "" { print $c }' "$OUT/runs.csv" | median; }
        seg=$(awk -F, -v m="$m" '$1 == m && $9 > 0 { printf "%.1f\n", $10 / $9 }' "$OUT/runs.csv" | median)
        loads=$(awk -F, -v m="$m" '$1 == m { print $3 }' "$OUT/runs.csv" | sort -g | sed -n '1p;$p' | paste -sd- -)
        printf '%-14s %6s Gbit/s | perf %6s | rx %5s | rx %6s s/GB | tx %5s | %5s seg/read | load %s\n' "$m" "$(col 4)" "$(col 5)" "$(col 6)" "$(col 8)" "$(col 7)" "$seg" "$loads"
    done
} | tee "$OUT/summary.txt"
