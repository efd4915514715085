# Sourced by bench/run.sh and bench/targets.sh: one `jroce perf` run between two processes with the CPU time of
# both sampled, and the bandwidth point it gives.
#
#   . "$REPO/bench/perf-lib.sh"
#
# The caller sets OUT (results; runs/ under it), JAR, JAVA_OPTS, SERVER_ADDR, CLIENT_ADDR, PORT_BASE, HZ
# (getconf CLK_TCK) and defines log().

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

# bw_point NAME TEST SIZE SECS ARGS...: a bandwidth run (`perf TEST -s SIZE -D SECS ARGS...`) and what it gives:
# ITERS, GBIT, MBS, RATE (perf's JSON), STATUS, and the CPU seconds per GB of payload of the side that sends it
# (SND_PER_GB: the client for WRITE and SEND, the server for READ) and of the side that receives it (RCV_PER_GB):
# the CPU seconds per second over the last SECS of the run (its drain included) divided by the GB per second perf
# reports over its sample window (empty when the CPU could not be sampled over most of SECS). Dividing the CPU
# time by the bytes counted in perf's window instead would charge the CPU of the margins, which perf does not
# count, to the window's bytes.
bw_point() {
    local name=$1 test=$2 size=$3 secs=$4
    shift 4
    perf_run "$name" "$secs" "$test" -s "$size" -D "$secs" "$@"
    local j=$OUT/runs/$name.client.json snd rcv per_gb
    ITERS=$(jnum "$j" iterations) GBIT=$(jnum "$j" bw_avg_gbit_s) MBS=$(jnum "$j" bw_avg_mb_s) RATE=$(jnum "$j" msg_rate_mpps)
    [[ -n $ITERS ]] || STATUS=${STATUS/ok/fail(no result)}
    # the window: -D, or longer when the messages in flight took longer to drain; perftest's
    # bw_avg (MB = 2^20 bytes) is over the first post to the last completion
    cpu_window "$(awk -v it="${ITERS:-0}" -v size="$size" -v mbs="${MBS:-0}" -v secs="$secs" 'BEGIN {
        t = mbs > 0 ? it * size / (mbs * 1048576) : 0; printf "%.2f", (t > secs ? t : secs) }')"
    if [[ $test == read ]]; then snd=$CPU_SRV_S rcv=$CPU_CLI_S; else snd=$CPU_CLI_S rcv=$CPU_SRV_S; fi
    per_gb=$(awk -v mbs="${MBS:-0}" -v win="${WIN_S:-0}" -v secs="$secs" -v s="$snd" -v r="$rcv" 'BEGIN {
        gbps = mbs * 1048576 / 1e9; if (gbps <= 0 || s == "" || win < 0.8 * secs) { print ","; exit }
        printf "%.3f,%.3f", s / win / gbps, r / win / gbps }')
    SND_PER_GB=${per_gb%,*} RCV_PER_GB=${per_gb#*,}
}
