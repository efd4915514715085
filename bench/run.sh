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

# one perf run with its CPU samples (perf_run, cpu_window, bw_point)
. "$REPO/bench/perf-lib.sh"

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
                bw_point "$name" "$test" "$size" "$SECS" -m "$mtu" -q "$qps"
                echo "$test,$mtu,$qps,$size,$SECS,$STATUS,$ITERS,$GBIT,$MBS,$RATE,$WIN_S,$CPU_SRV_S,$CPU_CLI_S,$SND_PER_GB,$RCV_PER_GB" >>"$OUT/bw.csv"
                log "$name: $STATUS ${GBIT:-?} Gbit/s, CPU s/GB sender $SND_PER_GB receiver $RCV_PER_GB"
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
