#!/usr/bin/env bash
# Benchmark harness: the loopback UDP yardstick and `jroce perf` between two processes, in one go,
# then the report section and charts (bench/report.sh).
#
#   bench/run.sh --quick     # a few sizes, 1 QP, MTU 4096, 2 s each: about 2-3 minutes
#   bench/run.sh             # the full matrix: about 35 minutes on a (loaded) 2-core machine
#
# Options:
#   --quick        the small subset: SIZES="64 4096 65536 1048576" MTUS=4096 QPS=1 SECS=2 LAT_ITERS=2000,
#                  the yardstick at 1 s per measurement and 2000 round trips
#                  (without it: SIZES 64 B .. 4 MiB in powers of 4, MTUS="1024 4096", QPS="1 16 256", SECS=3,
#                  LAT_ITERS=10000, the yardstick's own defaults: 5 s, 20000 round trips)
#   --out DIR      results directory (default: bench/results/<UTC timestamp>, not tracked by git)
#   --no-build     use cli/target/jroce.jar as it is (default: build it first with Maven)
#   --no-report    write results only; leave docs/reports/performance.md and docs/images/ alone
#
# What it runs, each as separate processes, one after the other:
#   1. scripts/yardstick.sh (bench/udp-limit: 4124/1068-byte datagrams with sendmmsg and GSO,
#      64-byte sendmmsg, the 80-byte round trip) on $ADDR_BASE.3:4791;
#   2. for every TEST x MTU x QPS x SIZE: `jroce perf TEST --bind $ADDR_BASE.1` (server) and
#      `jroce perf TEST $ADDR_BASE.1 --bind $ADDR_BASE.2` (client), -D $SECS, --json; while the client
#      runs, the utime+stime of both JVMs is sampled from /proc/PID/stat every 100 ms, and the CPU
#      seconds of each side over the measurement window (the last $SECS seconds before the client printed
#      its result, or longer when draining the messages in flight took longer: iterations x size / bw_avg)
#      are divided by the payload bytes it moved (iterations x size);
#   3. 64-byte latency for send, write and read (--lat, -n $LAT_ITERS, 1 QP, MTU 4096): perftest's own
#      statistics (t_typical is the median; send/write report half the round trip, read the whole), once
#      for each busy-poll time in $LAT_BUSY (--busy-poll MICROS on both sides; 0 = off, the default).
#
# Knobs (environment): SIZES, MTUS, QPS, TESTS, SECS, LAT_ITERS, LAT_SIZE (64), LAT_BUSY ("0 1000"), MAX_QP_BYTES (points with
# size x QPs above it are skipped, default 16 MiB: perftest keeps 128 messages in flight per QP, so when -D
# ends up to 128 x size x QPs bytes are still to drain, 2 GiB at this limit, seconds at a few Gbit/s),
# ADDR_BASE (127.0.88), PORT_BASE (18800), JAVA_OPTS (given to both JVMs), YARD_SECS, YARD_RTT_COUNT.
# Results: meta.txt, yardstick.txt/.csv, bw.csv, lat.csv and every run's JSON and stderr in runs/.
# Needs: bash, awk, gcc (yardstick), JDK 17 and Maven (build), gnuplot (charts, bench/report.sh).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=0 BUILD=1 REPORT=1 OUT=
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --no-build) BUILD=0 ;;
        --no-report) REPORT=0 ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/run.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

if ((QUICK)); then
    SIZES=${SIZES:-64 4096 65536 1048576} MTUS=${MTUS:-4096} QPS=${QPS:-1} SECS=${SECS:-2}
    LAT_ITERS=${LAT_ITERS:-2000} YARD_SECS=${YARD_SECS:-1} YARD_RTT_COUNT=${YARD_RTT_COUNT:-2000}
else
    SIZES=${SIZES:-64 256 1024 4096 16384 65536 262144 1048576 4194304} MTUS=${MTUS:-1024 4096}
    QPS=${QPS:-1 16 256} SECS=${SECS:-3} LAT_ITERS=${LAT_ITERS:-10000}
    YARD_SECS=${YARD_SECS:-5} YARD_RTT_COUNT=${YARD_RTT_COUNT:-20000}
fi
TESTS=${TESTS:-write read send}
LAT_SIZE=${LAT_SIZE:-64}
LAT_BUSY=${LAT_BUSY:-0 1000}
MAX_QP_BYTES=${MAX_QP_BYTES:-16777216}
ADDR_BASE=${ADDR_BASE:-127.0.88}
PORT_BASE=${PORT_BASE:-18800}
JAVA_OPTS=${JAVA_OPTS:-}
SERVER_ADDR=$ADDR_BASE.1 CLIENT_ADDR=$ADDR_BASE.2
JAR=$REPO/cli/target/jroce.jar
OUT=${OUT:-$REPO/bench/results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
HZ=$(getconf CLK_TCK)

log() { echo "bench: $*" >&2; }

if ((BUILD)); then
    log "building cli/target/jroce.jar"
    (cd "$REPO" && mvn -B -ntp -q -pl cli -am package -DskipTests)
fi
[[ -f $JAR ]] || { log "no $JAR (build it, or drop --no-build)"; exit 2; }

COMMAND=bench/run.sh
if ((QUICK)); then COMMAND+=" --quick"; fi
{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "command=$COMMAND"
    echo "host=$(uname -n)"
    echo "nproc=$(nproc)"
    echo "kernel=$(uname -r)"
    echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "java=$(java -version 2>&1 | head -n 1)"
    echo "commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$REPO" diff --quiet HEAD 2>/dev/null || echo '+changes')"
    echo "java_opts=$JAVA_OPTS"
    echo "sizes=$SIZES"; echo "mtus=$MTUS"; echo "qps=$QPS"; echo "tests=$TESTS"; echo "secs=$SECS"
    echo "max_qp_bytes=$MAX_QP_BYTES"
    echo "lat_size=$LAT_SIZE"; echo "lat_iters=$LAT_ITERS"; echo "yard_secs=$YARD_SECS"; echo "yard_rtt_count=$YARD_RTT_COUNT"
} >"$OUT/meta.txt"
START_S=$SECONDS

# ---------------------------------------------------------------------------------------------
# 1. the yardstick

log "yardstick (SECS=$YARD_SECS RTT_COUNT=$YARD_RTT_COUNT)"
ADDR=$ADDR_BASE.3:4791 SECS=$YARD_SECS RTT_COUNT=$YARD_RTT_COUNT "$REPO/scripts/yardstick.sh" >"$OUT/yardstick.txt"
awk 'BEGIN { print "mode,size,rx_gbps,tx_gbps,rx_mpps,loss_pct,tx_cpu_ns_per_pkt,rx_cpu_ns_per_pkt" }
     $2 == "tput" { delete f; for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
                    print f["mode"] "," f["size"] "," f["rx_gbps"] "," f["tx_gbps"] "," f["rx_mpps"] "," f["loss_pct"] "," f["tx_cpu_ns_per_pkt"] "," f["rx_cpu_ns_per_pkt"] }' \
    "$OUT/yardstick.txt" >"$OUT/yardstick.csv"
awk 'BEGIN { print "size,count,median_us,p99_us,p999_us,min_us,max_us" }
     $2 == "rtt" { delete f; for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
                   print f["size"] "," f["count"] "," f["median_us"] "," f["p99_us"] "," f["p999_us"] "," f["min_us"] "," f["max_us"] }' \
    "$OUT/yardstick.txt" >"$OUT/yardstick-rtt.csv"
grep '^yardstick' "$OUT/yardstick.txt" | sed 's/^/  /' >&2

# ---------------------------------------------------------------------------------------------
# 2./3. jroce perf, two processes

# numeric value of "key" in the one-line JSON object in file $1 (empty when absent)
jnum() { sed -n "s/.*\"$2\":\(-\{0,1\}[0-9.]*\).*/\1/p" "$1" | head -n 1; }

# true once a TCP socket listens on port $1 (from /proc, so no iproute2 is needed)
listening() {
    local hex
    printf -v hex '%04X' "$1"
    awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' /proc/net/tcp /proc/net/tcp6
}

# utime+stime of process $1 in clock ticks into CPU, or $2 when it has just exited (no fork: this
# runs every 100 ms)
CPU=0
cpu_of() {
    local -a f
    CPU=$2
    if { read -r -a f <"/proc/$1/stat"; } 2>/dev/null; then CPU=$((f[13] + f[14])); fi
}

SRV= CLI=
cleanup() {
    [[ -n $CLI ]] && kill "$CLI" 2>/dev/null || true
    [[ -n $SRV ]] && kill "$SRV" 2>/dev/null || true
}
trap cleanup EXIT

RUN=0
# perf_run NAME LIMIT_SECS ARGS...: server then client; sets STATUS and the samples TS, SS, CS (time in
# µs, server and client CPU ticks; also written to runs/NAME.cpu) and END, the index of the sample that
# first saw the client's JSON (it prints it as soon as the run is over), else the last one
perf_run() {
    local name=$1 window=$2
    shift 2
    local port=$((PORT_BASE + RUN % 100)) i
    RUN=$((RUN + 1))
    local base=$OUT/runs/$name
    # shellcheck disable=SC2086 # JAVA_OPTS is a list of JVM options
    java $JAVA_OPTS -jar "$JAR" perf "$@" --bind "$SERVER_ADDR" -p "$port" --json >"$base.server.json" 2>"$base.server.err" &
    SRV=$!
    for ((i = 0; i < 400; i++)); do
        listening "$port" && break
        kill -0 "$SRV" 2>/dev/null || break
        sleep 0.05
    done
    # shellcheck disable=SC2086
    java $JAVA_OPTS -jar "$JAR" perf "$@" "$SERVER_ADDR" --bind "$CLIENT_ADDR" -p "$port" --json >"$base.client.json" 2>"$base.client.err" &
    CLI=$!
    TS=() SS=() CS=() END=-1
    local psrv=0 pcli=0
    local t0=${EPOCHREALTIME/./} limit=$(((window + 90) * 1000000))
    while kill -0 "$CLI" 2>/dev/null; do
        cpu_of "$SRV" "$psrv"; psrv=$CPU; SS+=("$CPU")
        cpu_of "$CLI" "$pcli"; pcli=$CPU; CS+=("$CPU")
        TS+=("${EPOCHREALTIME/./}")
        if ((END < 0)) && [[ -s $base.client.json ]]; then END=$((${#TS[@]} - 1)); fi
        if ((${TS[-1]} - t0 > limit)); then log "$name: client still running after $((limit / 1000000)) s, killed"; kill "$CLI" 2>/dev/null || true; fi
        sleep 0.1
    done
    local crc=0 src=0
    wait "$CLI" || crc=$?
    CLI=
    for ((i = 0; i < 200; i++)); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.05; done
    kill "$SRV" 2>/dev/null || true
    wait "$SRV" || src=$?
    SRV=
    STATUS=ok
    ((crc == 0 && src == 0)) || STATUS="fail(client=$crc,server=$src)"
    ((END >= 0)) || END=$((${#TS[@]} - 1))
    for ((i = 0; i < ${#TS[@]}; i++)); do echo "${TS[i]} ${SS[i]} ${CS[i]}"; done >"$base.cpu"
}

# cpu_window SECS: the CPU seconds of server and client (CPU_SRV_S, CPU_CLI_S) over the SECS before END,
# and the window's actual length WIN_S (samples are 100 ms apart)
cpu_window() {
    CPU_SRV_S= CPU_CLI_S= WIN_S=
    ((END >= 0)) || return 0
    local i start=0 from
    from=$((TS[END] - $(awk -v w="$1" 'BEGIN { printf "%d", w * 1e6 }'))) # bash: µs since 1970 exceed awk's %d
    for ((i = END; i >= 0; i--)); do
        if ((TS[i] <= from)); then start=$i; break; fi
    done
    CPU_SRV_S=$(awk -v a="${SS[start]}" -v b="${SS[END]}" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')
    CPU_CLI_S=$(awk -v a="${CS[start]}" -v b="${CS[END]}" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')
    WIN_S=$(awk -v a="${TS[start]}" -v b="${TS[END]}" 'BEGIN { printf "%.2f", (b - a) / 1e6 }')
}

echo "test,mtu,qps,size,secs,status,iterations,gbit_s,mb_s,msg_rate_mpps,window_s,server_cpu_s,client_cpu_s,sender_cpu_s_per_gb,receiver_cpu_s_per_gb" >"$OUT/bw.csv"
for mtu in $MTUS; do
    for qps in $QPS; do
        for test in $TESTS; do
            for size in $SIZES; do
                name=bw-$test-m$mtu-q$qps-s$size
                if ((size * qps > MAX_QP_BYTES)); then
                    log "$name: skipped ($size B x $qps QPs > MAX_QP_BYTES=$MAX_QP_BYTES)"
                    echo "$test,$mtu,$qps,$size,$SECS,skipped,,,,,,,,," >>"$OUT/bw.csv"
                    continue
                fi
                perf_run "$name" "$SECS" "$test" -m "$mtu" -q "$qps" -s "$size" -D "$SECS"
                j=$OUT/runs/$name.client.json
                iters=$(jnum "$j" iterations) gbit=$(jnum "$j" bw_avg_gbit_s) mbs=$(jnum "$j" bw_avg_mb_s) rate=$(jnum "$j" msg_rate_mpps)
                [[ -n $iters ]] || STATUS=${STATUS/ok/fail(no result)}
                # the window: -D, or longer when the messages in flight took longer to drain; perftest's
                # bw_avg (MB = 2^20 bytes) is over the first post to the last completion
                cpu_window "$(awk -v it="${iters:-0}" -v size="$size" -v mbs="${mbs:-0}" -v secs="$SECS" 'BEGIN {
                    t = mbs > 0 ? it * size / (mbs * 1048576) : 0; printf "%.2f", (t > secs ? t : secs) }')"
                # the side that sends the payload: the client for WRITE and SEND, the server for READ
                if [[ $test == read ]]; then snd=$CPU_SRV_S rcv=$CPU_CLI_S; else snd=$CPU_CLI_S rcv=$CPU_SRV_S; fi
                per_gb=$(awk -v it="${iters:-0}" -v size="$size" -v win="${WIN_S:-0}" -v secs="$SECS" -v s="$snd" -v r="$rcv" 'BEGIN {
                    gb = it * size / 1e9; if (gb <= 0 || s == "" || win < 0.8 * secs) { print ","; exit }
                    printf "%.3f,%.3f", s / gb, r / gb }')
                echo "$test,$mtu,$qps,$size,$SECS,$STATUS,$iters,$gbit,$mbs,$rate,$WIN_S,$CPU_SRV_S,$CPU_CLI_S,$per_gb" >>"$OUT/bw.csv"
                log "$name: $STATUS ${gbit:-?} Gbit/s, CPU s/GB sender ${per_gb%,*} receiver ${per_gb#*,}"
            done
        done
    done
done

echo "test,size,iters,status,t_min_us,t_typical_us,t_avg_us,t_99_us,t_99_9_us,t_max_us,half_round_trip,busy_poll_us" >"$OUT/lat.csv"
for busy in $LAT_BUSY; do
for test in $TESTS; do
    name=lat-$test-s$LAT_SIZE-busy$busy
    perf_run "$name" 1 "$test" --lat -m 4096 -s "$LAT_SIZE" -n "$LAT_ITERS" --busy-poll "$busy"
    j=$OUT/runs/$name.client.json
    typ=$(jnum "$j" t_typical_us)
    [[ -n $typ ]] || STATUS=${STATUS/ok/fail(no result)}
    half=yes
    [[ $test == read ]] && half=no # perftest halves the time of the ping-pong tests (send, write), not of read
    echo "$test,$LAT_SIZE,$LAT_ITERS,$STATUS,$(jnum "$j" t_min_us),$typ,$(jnum "$j" t_avg_us),$(jnum "$j" t_99_us),$(jnum "$j" t_99_9_us),$(jnum "$j" t_max_us),$half,$busy" >>"$OUT/lat.csv"
    log "$name: $STATUS t_typical ${typ:-?} us"
done
done

{
    echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "elapsed_s=$((SECONDS - START_S))"
} >>"$OUT/meta.txt"
log "results in $OUT ($((SECONDS - START_S)) s)"

if ((REPORT)); then
    "$REPO/bench/report.sh" "$OUT"
fi
