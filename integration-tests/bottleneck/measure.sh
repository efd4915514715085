#!/usr/bin/env bash
# The lossy-Ethernet report's baseline measurements of jroce (Go-Back-N, no congestion control), two parts:
#
#  1. goodput vs random loss: one QP, RDMA WRITE of 1 MiB messages, path MTU 4096, over the loopback of the bed's
#     receiver namespace (no bottleneck; a private loopback, so nothing else on the machine can hold UDP 4791 or
#     TCP 18515 there). The loss (LOSS_BY): `nft` (the default) drops P of the UDP/4791 packets at the
#     namespace's output hook and P at its input hook, so each packet, as with `--chaos drop=P` on both processes,
#     meets two chances of P, and both processes run exactly as in the lossless run; `chaos` gives both processes
#     `--chaos drop=P` (server seed 7, client seed 8), which also moves their reads onto Netty's datagram path
#     (an object per datagram) while the lossless run reads without one: on the host's loopback `--chaos drop=0`
#     alone cost 12-19 % of a lossless run's goodput;
#  2. N flows through the bed's 1 Gbit/s tbf bottleneck (bed.sh): N `perf write` pairs, flow i between
#     10.198.0.i and 10.198.0.(100+i), plus a 64-byte `perf send --lat` probe (10.198.0.50 -> .150) through
#     the same queue; N = 0 is the probe alone. Aggregate goodput, per-flow goodput, Jain's fairness index,
#     the bottleneck's drops, the probe's p99 (half the round trip, perftest's convention).
#
# The loss sweep runs twice: with perf's default (no tail-loss probe: a lost last packet, ACK or NAK waits for
# the local ACK timeout, about 1 s) and with `--tail-probe 1000` on both sides. A run that has not ended
# CAP seconds after its duration (after -D, perf still completes the messages already posted) is stopped,
# and its goodput is the cumulative rate of its last progress line, marked "cut".
#
# Needs root, ip, tc and a built cli/target/jroce.jar. Knobs (environment; LOSSES= or FLOWS= empty skips a
# part): LOSSES, LOSS_SECS (10), LOSS_BY (nft or chaos),
# TAIL_PROBES ("0 1000"), CAP (45), FLOWS ("0 1 4 16"), SECS (20), PROBE_ITERS (3000), RATE (1gbit),
# LIMIT (256kb), EXT (perf --jroce-extensions on every process: none (default, Go-Back-N), sr, cc, all), OUT (a new /tmp directory: the raw JSON and stderr of every process),
# QPS (1: QPs per flow process, each QP a flow; perf's per-QP progress counts tell them apart), SIZE (1048576: message
# bytes), PROGRESS (200ms: the clients' progress interval, the time series' resolution),
# LATE (seconds, off by default: one more single-QP flow starts that long after the others; the table gives how long it
# takes, from its own start, to move 0.8 x the link's rate / flows over half a second),
# STEADY ("FROM:SECS", e.g. 25:30, off by default): also measure the flows in a window from FROM to FROM+SECS seconds
# after the clients start, once every JVM has compiled its hot code (on 2 cores, ten JVMs starting together spend about
# half the CPU in their JIT compilers for the first 20 s): the bottleneck's rate, drops and Jain's index over that window
# (per-flow rates from perf's progress lines). Prints markdown table rows, and writes each flow's rate over 1 s windows
# to OUT/flows-N-qQ-series.dat (one gnuplot block per flow, for chart.sh); leaves the bed down.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bed=$here/bed.sh
JAR=${JAR:-$root/cli/target/jroce.jar}
JAVA=${JAVA:-java}
LOSSES=${LOSSES-"0 0.001 0.01 0.02 0.05 0.1"}
LOSS_SECS=${LOSS_SECS:-10}
LOSS_BY=${LOSS_BY:-nft}
TAIL_PROBES=${TAIL_PROBES:-"0 1000"}
CAP=${CAP:-45}
FLOWS=${FLOWS-"0 1 4 16"}
SECS=${SECS:-20}
PROBE_ITERS=${PROBE_ITERS:-3000}
RATE=${RATE:-1gbit}
LIMIT=${LIMIT:-256kb}
EXT=${EXT:-none}
STEADY=${STEADY:-}
OUT=${OUT:-$(mktemp -d /tmp/jroce-bottleneck.XXXXXX)}
NS_S=jroce-tbf-snd
NS_R=jroce-tbf-rcv
SIZE=${SIZE:-1048576}
QPS=${QPS:-1}
LATE=${LATE:-}
PROGRESS=${PROGRESS:-200ms}

[ -f "$JAR" ] || { echo "measure.sh: build the jar first (mvn -pl cli -am package): $JAR" >&2; exit 1; }
case $LOSS_BY in
    nft) [ -z "$LOSSES" ] || command -v nft >/dev/null || { echo "measure.sh: LOSS_BY=nft needs nft (or LOSS_BY=chaos)" >&2; exit 1; } ;;
    chaos) ;;
    *) echo "measure.sh: LOSS_BY must be nft or chaos, not $LOSS_BY" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
trap '"$bed" down' EXIT

jroce() { local ns=$1; shift; ip netns exec "$ns" "$JAVA" -jar "$JAR" "$@" --jroce-extensions "$EXT"; }
# nft_loss P: in the receiver namespace, drop P (0..1, to 1/10000) of the UDP/4791 packets at output and at input
nft_loss() {
    local n hook
    n=$(awk -v p="$1" 'BEGIN { printf "%d", p * 10000 + 0.5 }')
    ip netns exec "$NS_R" nft add table inet jroce_measure_loss
    for hook in output input; do
        ip netns exec "$NS_R" nft add chain inet jroce_measure_loss "$hook" "{ type filter hook $hook priority 0; }"
        ip netns exec "$NS_R" nft add rule inet jroce_measure_loss "$hook" udp dport 4791 numgen random mod 10000 '<' "$n" counter drop
    done
}
# field NAME FILE: a number from perf's --json object
field() { grep -o "\"$1\":[0-9.]*" "$2" 2>/dev/null | head -1 | cut -d: -f2; }
# counter NAME FILE: a value from the 'counters device' line of --counters
counter() { grep -o "[ ]$1=[0-9]*" "$2" 2>/dev/null | head -1 | cut -d= -f2; }
now() { date +%s.%N; }
# goodput FILE.json FILE.err: perf's bw_avg_gbit_s, or for a run stopped at the cap its last progress line
# ("jroce perf: T s: M iterations, BW average X MB/sec, MsgRate R Mpps", MB = 2^20 bytes)
goodput() {
    local g
    g=$(field bw_avg_gbit_s "$1")
    if [ -n "$g" ]; then echo "$g"; return; fi
    grep '^jroce perf: .* MB/sec' "$2" | tail -1 |
        awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^MB\/sec/) bw = $(i - 1)
               printf "%.3f (cut at %s s, %s messages)", bw * 1048576 * 8 / 1e9, $3, $5 }'
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); --jroce-extensions $EXT; raw output in $OUT"

if [ -n "$LOSSES" ]; then
    echo
    echo "## goodput vs random loss (WRITE 1 MiB, 1 QP, MTU 4096, ${LOSS_SECS} s, loopback, loss by $LOSS_BY)"
    echo "| drop=P per process (nft: per hook) | tail probe us | exit (client/server) | goodput Gbit/s | client packets out | client retransmits | client timeouts |"
    echo "|---|---|---|---|---|---|---|"
    "$bed" up --pairs 1 >/dev/null || exit 1
    for tp in $TAIL_PROBES; do
        for p in $LOSSES; do
            tag=$OUT/loss-$p-tp$tp
            chaos_s=() chaos_c=()
            if [ "$p" != 0 ] && [ "$LOSS_BY" = chaos ]; then chaos_s=(--chaos "drop=$p,seed=7"); chaos_c=(--chaos "drop=$p,seed=8"); fi
            if [ "$p" != 0 ] && [ "$LOSS_BY" = nft ]; then nft_loss "$p"; fi
            cap=$((LOSS_SECS + CAP))
            timeout "$cap" ip netns exec "$NS_R" "$JAVA" -jar "$JAR" perf write --bind 127.0.0.1 -m 4096 -s $SIZE -D "$LOSS_SECS" \
                --timeout 60 --tail-probe "$tp" --json --counters --jroce-extensions "$EXT" "${chaos_s[@]}" >"$tag-server.json" 2>"$tag-server.err" &
            spid=$!
            timeout "$cap" ip netns exec "$NS_R" "$JAVA" -jar "$JAR" perf write 127.0.0.1 --bind 127.0.0.2 -m 4096 -s $SIZE -D "$LOSS_SECS" \
                --timeout 60 --tail-probe "$tp" --json --counters --jroce-extensions "$EXT" "${chaos_c[@]}" >"$tag-client.json" 2>"$tag-client.err"
            crc=$?
            wait $spid
            src=$?
            ip netns exec "$NS_R" nft delete table inet jroce_measure_loss 2>/dev/null
            echo "| $p | $tp | $crc/$src | $(goodput "$tag-client.json" "$tag-client.err") | $(counter packets_out "$tag-client.err") | $(counter retransmits "$tag-client.err") | $(counter timeouts "$tag-client.err") |"
        done
    done
fi

echo
echo "## N flows through the bottleneck (tbf rate $RATE limit $LIMIT; WRITE $SIZE B, MTU 4096, ${SECS} s each, $QPS QP(s) per process; 64-byte SEND probe, $PROBE_ITERS iterations)"
echo "| flows (processes x QPs) | exits ok | aggregate Gbit/s (first start..last exit) | sum of per-flow Gbit/s | per-flow Gbit/s | Jain | bottleneck drops % (dropped/sent pkts) | tbf Gbit/s over the window | probe t_typical / p99 / p99.9 us | probe timeouts | client retransmits / timeouts | steady window (STEADY): link, drops, Jain, per-flow | late joiner (LATE): s to 0.8 of link/flows |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
# series TAG CLIENTS: one row "flow t count" per flow and progress line ("jroce perf: T s: N iterations, ...[; per QP:
# N1 N2 ...]"), t the line's wall-clock stamp (added by stamp) less t0; flows numbered from 1 across the clients in order
# (a client with one QP is one flow). Also writes each client's run start (the stamp of its first line less its T, in
# s after t0) to $TAG-client$i.start.
series() {
    local tag=$1 k=$2 i base=0
    for i in $(seq 1 "$k"); do
        awk -v t0="$t0" -v base="$base" -v startf="$tag-client$i.start" '$2 == "jroce" && $3 == "perf:" && $5 == "s:" && $7 == "iterations," {
                t = $1 - t0; if (!started) { printf "%.3f\n", t - $4 >startf; started = 1 }
                q = index($0, "; per QP:")
                if (q == 0) { print base + 1, t, $6; next }
                n = split(substr($0, q + 9), c, " "); for (j = 1; j <= n; j++) print base + j, t, c[j] }' "$tag-client$i.err"
        base=$((base + $(cat "$tag-client$i.qps")))
    done
}
# stamp: copies stdin to stdout, each line prefixed with the wall clock (seconds, 3 decimals) when it was read
stamp() { perl -MTime::HiRes=time -ne '$| = 1; printf "%.3f %s", time, $_'; }
# window_rates ROWS FROM TO NFLOWS: each flow's Gbit/s between the progress lines nearest FROM and TO (a flow that
# started inside the window: from its first line)
window_rates() {
    awk -v f="$2" -v t="$3" -v n="$4" -v size="$SIZE" '{
            if ($2 <= f + 0.0001 || !seen[$1] && $2 <= t + 0.0001) { mf[$1] = $3; tf[$1] = $2; seen[$1] = 1 }
            if ($2 <= t + 0.0001) { mt[$1] = $3; tt[$1] = $2 } }
        END { for (i = 1; i <= n; i++) printf " %.3f", (seen[i] && tt[i] > tf[i] ? (mt[i] - mf[i]) * size * 8 / (tt[i] - tf[i]) / 1e9 : 0) }' "$1"
}
# steady_cols ROWS FROM SECS STATS_A STATS_B NFLOWS: "link Gbit/s, drops %, Jain, per-flow Gbit/s" over the steady window, or "-"
steady_cols() {
    local rows=$1 from=$2 secs=$3 a=$4 b=$5 n=$6 rates
    [ -n "$a" ] && [ -n "$b" ] || { echo "-"; return; }
    rates=$(window_rates "$rows" "$from" "$((from + secs))" "$n")
    awk -v a="$a" -v b="$b" -v secs="$secs" -v rates="$rates" 'function get(s, k,   m) {
            if (match(s, k "=[0-9]+")) { m = substr(s, RSTART, RLENGTH); sub(/.*=/, "", m); return m + 0 } return 0 }
        BEGIN { bytes = get(b, "sent_bytes") - get(a, "sent_bytes"); pk = get(b, "sent_packets") - get(a, "sent_packets")
            dr = get(b, "dropped") - get(a, "dropped"); k = split(rates, r, " "); s = 0; q = 0
            for (i = 1; i <= k; i++) { s += r[i]; q += r[i] * r[i] }
            printf "%.3f Gbit/s, drops %.3f %%, Jain %.3f, flows%s", bytes * 8 / secs / 1e9, (pk + dr ? 100 * dr / (pk + dr) : 0),
                (q > 0 ? s * s / (k * q) : 0), rates }'
}
# late_share ROWS FLOW NFLOWS START: seconds from the late flow's run start (START, s after t0) until its rate over the last half second first reaches 0.8 x the link's rate / NFLOWS, or "never"
late_share() {
    local link
    link=$(awk -v r="$RATE" 'BEGIN { v = r + 0; if (r ~ /gbit/) v *= 1e9; else if (r ~ /mbit/) v *= 1e6; print v / 1e9 }')
    awk -v fl="$2" -v n="$3" -v off="$4" -v link="$link" -v size="$SIZE" '$1 == fl { k++; t[k] = $2 - off; c[k] = $3 }
        END { want = 0.8 * link / n
            for (j = 2; j <= k; j++) for (i = j - 1; i >= 1; i--) if (t[j] - t[i] >= 0.5) {
                if ((c[j] - c[i]) * size * 8 / (t[j] - t[i]) / 1e9 >= want) { printf "%.1f s (want %.3f Gbit/s)", t[j], want; exit }
                break }
            printf "never (want %.3f Gbit/s)", want }' "$1"
}
for n in $FLOWS; do
    tag=$OUT/flows-$n-q$QPS
    late=0; [ -n "$LATE" ] && [ "$n" -gt 0 ] && late=1
    k=$((n + late)) # client processes: N, and the late joiner (one QP)
    "$bed" up --rate "$RATE" --limit "$LIMIT" --pairs $(( k > 0 ? k : 1 )) >/dev/null || exit 1
    servers=() clients=()
    for i in $(seq 1 "$k"); do
        q=$QPS; [ "$i" -gt "$n" ] && q=1
        echo "$q" >"$tag-client$i.qps"
        jroce "$NS_R" perf write --bind 10.198.0.$((100 + i)) -m 4096 -s $SIZE -q "$q" -D "$SECS" --timeout 60 --json \
            >"$tag-server$i.json" 2>"$tag-server$i.err" &
        servers+=($!)
    done
    jroce "$NS_R" perf send --lat --bind 10.198.0.150 -s 64 -n "$PROBE_ITERS" --timeout 60 --json \
        >"$tag-probe-server.json" 2>"$tag-probe-server.err" &
    probe_server=$!
    t0=$(now)
    # client CLIENT_INDEX QPS DURATION: a flow sender; its stderr lines stamped with the wall clock (stamp)
    client() {
        # a client retries its TCP connection until its server listens (--timeout)
        jroce "$NS_S" perf write 10.198.0.$((100 + $1)) --bind 10.198.0.$1 -m 4096 -s $SIZE -q "$2" -D "$3" --timeout 60 --json --counters \
            --progress "$PROGRESS" >"$tag-client$1.json" 2> >(stamp >"$tag-client$1.err")
    }
    for i in $(seq 1 "$n"); do
        client "$i" "$QPS" "$SECS" &
        clients+=($!)
    done
    jroce "$NS_S" perf send 10.198.0.150 --lat --bind 10.198.0.50 -s 64 -n "$PROBE_ITERS" --timeout 60 --json --counters \
        >"$tag-probe.json" 2>"$tag-probe.err" &
    probe=$!
    if [ "$late" = 1 ]; then
        # the late joiner ends with the others
        (sleep "$LATE"; client "$k" 1 "$(awk -v s="$SECS" -v l="$LATE" 'BEGIN { print (s - l > 5 ? s - l : 5) }')") &
        clients+=($!)
    fi
    steady_a="" steady_b="" s_from=0 s_secs=0
    if [ -n "$STEADY" ] && [ "$n" -gt 0 ]; then
        s_from=${STEADY%%:*} s_secs=${STEADY##*:}
        sleep "$s_from"; steady_a=$("$bed" stats)
        sleep "$s_secs"; steady_b=$("$bed" stats)
    fi
    ok=0
    for pid in "${clients[@]}"; do wait "$pid" && ok=$((ok + 1)); done
    t1=$(now)
    for pid in "${servers[@]}"; do wait "$pid" || ok=$((ok - 1000)); done
    wait $probe; wait $probe_server
    wait # the stamp processes, so every client's stderr is complete
    stats=$("$bed" stats)
    nf=$((n * QPS + late))
    rows=$tag-rows.txt
    series "$tag" "$k" >"$rows"
    # the chart's time series: each flow's Gbit/s over 1 s windows, one gnuplot block per flow
    awk -v size="$SIZE" '{ k[$1]++; t[$1, k[$1]] = $2; c[$1, k[$1]] = $3; if ($1 > nf) nf = $1 }
        END { for (f = 1; f <= nf; f++) { printf "# flow %d\n", f
                for (j = 2; j <= k[f]; j++) for (i = j - 1; i >= 1; i--) if (t[f, j] - t[f, i] >= 1 - 1e-6 || i == 1) {
                    printf "%.3f %.4f\n", t[f, j], (c[f, j] - c[f, i]) * size * 8 / (t[f, j] - t[f, i]) / 1e9; break }
                printf "\n\n" } }' "$rows" >"$tag-series.dat"
    rates="" bytes=0 retx=0 tmo=0
    for i in $(seq 1 "$k"); do
        bytes=$(( bytes + ${SIZE} * $(field iterations "$tag-client$i.json" || echo 0) ))
        retx=$(( retx + $(counter retransmits "$tag-client$i.err" || echo 0) ))
        tmo=$(( tmo + $(counter timeouts "$tag-client$i.err" || echo 0) ))
    done
    # each flow's whole-run rate from its own first to last progress line
    rates=$(awk -v size="$SIZE" '{ if (!($1 in t0)) { t0[$1] = $2; c0[$1] = $3 } t1[$1] = $2; c1[$1] = $3; if ($1 > nf) nf = $1 }
        END { for (f = 1; f <= nf; f++) printf " %.3f", (t1[f] > t0[f] ? (c1[f] - c0[f]) * size * 8 / (t1[f] - t0[f]) / 1e9 : 0) }' "$rows")
    late_col="-"
    [ "$late" = 1 ] && late_col=$(late_share "$rows" "$nf" "$nf" "$(cat "$tag-client$k.start")")
    echo "$stats t0=$t0 t1=$t1" >"$tag-bottleneck.txt"
    sent=$(echo "$stats" | grep -o 'sent_bytes=[0-9]*' | cut -d= -f2)
    pkts=$(echo "$stats" | grep -o 'sent_packets=[0-9]*' | cut -d= -f2)
    drops=$(echo "$stats" | grep -o 'dropped=[0-9]*' | cut -d= -f2)
    pct=$(echo "$stats" | grep -o 'drop_pct=[0-9.]*' | cut -d= -f2)
    awk -v n="$n" -v q="$QPS" -v late="$late" -v k="$k" -v ok="$ok" -v rates="$rates" -v bytes="$bytes" -v sent="$sent" -v t0="$t0" -v t1="$t1" \
        -v pct="$pct" -v drops="$drops" -v pkts="$pkts" -v retx="$retx" -v tmo="$tmo" -v ptmo="$(counter timeouts "$tag-probe.err")" \
        -v typ="$(field t_typical_us "$tag-probe.json")" -v p99="$(field t_99_us "$tag-probe.json")" -v latecol="$late_col" \
        -v p999="$(field t_99_9_us "$tag-probe.json")" -v steady="$(steady_cols "$rows" "$s_from" "$s_secs" "$steady_a" "$steady_b" "$((n * QPS + late))")" 'BEGIN {
        w = t1 - t0; m = split(rates, r, " "); s = 0; sq = 0
        for (i = 1; i <= m; i++) { s += r[i]; sq += r[i] * r[i] }
        jain = (sq > 0 ? s * s / (m * sq) : 0)
        # with no flow there is no window: the probe alone
        wire = (n > 0 ? sprintf("%.3f", sent * 8 / w / 1e9) : "-")
        printf "| %d (%d x %d%s) | %s | %.3f | %.3f | %s | %.3f | %s (%s/%s) | %s | %s / %s / %s | %s | %d / %d | %s | %s |\n",
            n * q + late, n, q, (late ? " + 1 late" : ""), (n > 0 ? ok "/" k : "-"), (n > 0 ? bytes * 8 / w / 1e9 : 0), s, (m ? rates : "-"), jain,
            pct, drops, pkts, wire, typ, p99, p999, ptmo, retx, tmo, steady, latecol }'
done
