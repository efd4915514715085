#!/usr/bin/env bash
# Interop check: jroce (host side, inside netns rxelab on 10.77.0.1) against Linux Soft-RoCE (rdma_rxe)
# running the real ibv_rc_pingpong, ibv_ud_pingpong and perftest tools in QEMU guests: the project's lab, integration-tests/rxe/lab.
#
#   integration-tests/rxe/interop.sh           smoke subset (pingpong, write/read bw, atomic, rping, write_bw -R; both roles)
#   integration-tests/rxe/interop.sh --full    the whole matrix at RoCE MTU 1024 and 4096, UD pingpong, rping and
#                                              perftest -R (rdma_cm) with the CM's failure paths, then the loss cases
#   integration-tests/rxe/interop.sh --loss    only the loss cases (nft drops LOSS% of UDP/4791 each way)
#   options: --only REGEX (cases whose name matches), --loss-percent N (default 3),
#            --out DIR (logs + pcaps; default a new /tmp/jroce-rxe-interop.XXXX)
#
# Needs root, qemu-system-x86 debootstrap iproute2 nftables (and tshark, optional), and the jar
# cli/target/jroce.jar (built here when missing). The lab's guest image lives in $JROCE_LAB_CACHE (default
# /var/tmp/jroce-rxe-lab) and is built here when missing (lab/build.sh, a few minutes: it downloads Debian
# packages). Traffic stays in the network namespace rxelab (see lab/README.md).
#
# Output: one line per case, "PASS: name (secs)" or "FAIL: name: why", and "LAB: ..." for failures of the
# emulated lab itself (guest did not boot, guest stopped answering); a boot is retried once. Exit status:
# 0 all passed, 1 some case failed, 3 the lab failed. Guests and namespace are always torn down.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
LAB=$HERE/lab
LAB_CACHE=${JROCE_LAB_CACHE:-/var/tmp/jroce-rxe-lab}
NS=rxelab
JAR=$REPO/cli/target/jroce.jar
HOST_IP=10.77.0.1
declare -A GIP=([A]=10.77.0.11 [B]=10.77.0.12)
FULL=0 ONLY= OUT= LOSS_ONLY=0 LOSS=3
while [ $# -gt 0 ]; do
  case $1 in
    --full) FULL=1 ;;
    --loss) LOSS_ONLY=1 ;;
    --loss-percent) LOSS=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "interop.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "interop.sh: must run as root (network namespace, qemu taps)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/jroce-rxe-interop.XXXX)}
mkdir -p "$OUT"
T0=$SECONDS
PASSED=0 FAILED=0 LABFAIL=0
JPID=

log() { printf '%s\n' "$*"; }
elapsed() { echo $((SECONDS - $1)); }

cleanup() {
  local rc=$?
  if [ -n "$JPID" ] && kill -0 "$JPID" 2>/dev/null; then kill "$JPID" 2>/dev/null || true; fi
  "$LAB/lab.sh" stop > "$OUT/lab-stop.log" 2>&1 || true
  log "interop: $PASSED passed, $FAILED failed, $LABFAIL lab failures in $((SECONDS - T0)) s; logs in $OUT"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gx() { "$LAB/lab.sh" exec "$@"; }     # gx [-t SECS] [-b] GUEST CMD
gwait() { "$LAB/lab.sh" wait "$@"; }  # gwait [-t SECS] GUEST JOB
nsx() { ip netns exec "$NS" "$@"; }

# ---------------------------------------------------------------------------------------------- lab
command -v qemu-system-x86_64 >/dev/null || { log "LAB: qemu-system-x86_64 missing (apt-get install qemu-system-x86 debootstrap)"; exit 3; }
if [ ! -f "$JAR" ]; then
  log "interop: building $JAR"
  (cd "$REPO" && mvn -B -ntp -q -pl cli -am package -DskipTests) > "$OUT/mvn.log" 2>&1 || { log "FAIL: build: see $OUT/mvn.log"; exit 1; }
fi
if [ ! -e "$LAB_CACHE/disk.img" ]; then
  log "interop: building the rxe lab in $LAB_CACHE (first time: several minutes)"
  t=$SECONDS
  "$LAB/build.sh" > "$OUT/lab-build.log" 2>&1 || { log "LAB: build.sh failed: $(tail -1 "$OUT/lab-build.log")"; exit 3; }
  log "interop: lab built in $(elapsed $t) s"
fi
boot() {
  local t=$SECONDS try
  for try in 1 2; do
    if "$LAB/lab.sh" start 2 > "$OUT/lab-start.$try.log" 2>&1 \
        && gx -t 60 A 'rdma link show rxe0/1 | grep -q ACTIVE' && gx -t 60 B 'rdma link show rxe0/1 | grep -q ACTIVE'; then
      log "interop: guests up in $(elapsed $t) s ($(grep -c ' up after ' "$OUT/lab-start.$try.log") up, try $try)"
      return 0
    fi
    log "interop: boot try $try failed: $(grep -v '^$' "$OUT/lab-start.$try.log" | tail -1)"
    "$LAB/lab.sh" stop >> "$OUT/lab-start.$try.log" 2>&1 || true
  done
  return 1
}
boot || { LABFAIL=$((LABFAIL + 1)); log "LAB: guests did not boot twice (logs: $OUT/lab-start.*.log)"; exit 3; }

# The rxe counters that must not move during a case (rxe has no ICRC counter: a bad ICRC is a dropped packet,
# logged as "bad ICRC" in dmesg, and shows up as a sequence error or retry on one side or the other).
# Hard errors fail a case; completer_retry_err/duplicate_request (one rxe retransmission after its 67 ms timer) are
# only noted: they also happen rxe<->rxe under QEMU TCG (measured: ibv_rc_pingpong -s 4096 -n 20 between the two
# guests gave completer_retry_err +1 on one side and duplicate_request +4 on the other).
RXE_BAD='out_of_seq_request|rcvd_seq_err|retry_exceeded_err|retry_rnr_exceeded_err|send_err|bad_icrc_log'
RXE_NOTE='completer_retry_err|duplicate_request'
rxe_counters() { # guest -> "name value" lines
  gx -t 60 "$1" 'cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo "$f $(cat $f)"; done; echo "bad_icrc_log $(dmesg | grep -c "bad ICRC" || true)"'
}
guest_alive() { gx -t 60 "$1" true >/dev/null 2>&1; }

# ---------------------------------------------------------------------------------------------- cases
# case NAME ROLE GUEST_CMD JROCE_ARGS
#   ROLE guest-server: the guest tool listens (on A), jroce connects to it;
#   ROLE jroce-server: jroce listens on 10.77.0.1, the guest tool (on B) connects.
# GUEST_CMD is the tool's command line without the server address; JROCE_ARGS jroce's arguments after the
# jar, without HOST/--bind/--pcap.
run_case() {
  local name=$PREFIX$1 role=$2 gcmd=$3 jargs=$4 g t=$SECONDS why= jid jrc grc dir=$OUT/$PREFIX$1
  if [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; then return 0; fi
  mkdir -p "$dir"
  if [ "$role" = guest-server ]; then g=A; else g=B; fi
  if ! guest_alive "$g"; then
    LABFAIL=$((LABFAIL + 1)); log "LAB: $name: guest $g does not answer"; return 0
  fi
  rxe_counters "$g" > "$dir/rxe-before.txt" 2>&1 || true
  local lb=
  [ -z "$LOSSY" ] || lb=$(loss_counts)
  # shellcheck disable=SC2086
  # JROCE_ARGS with @HOST@ (rping -a @HOST@) name the server there instead of as a last argument
  local jhost=${GIP[A]}
  if [[ $jargs == *@HOST@* ]]; then jargs=${jargs//@HOST@/${GIP[A]}}; jhost=; fi
  if [ "$role" = guest-server ]; then
    jid=$(gx -b A "$gcmd")
    set +e
    # the connection manager cases: the guest's rdma_cm listener must be up before jroce's REQ (else REJ 8)
    [[ $gcmd == rping* || $gcmd == *" -R"* ]] && sleep 2
    timeout 300 ip netns exec "$NS" java -jar "$JAR" $jargs $jhost --bind "$HOST_IP" --pcap "$dir/jroce.pcap" \
      --counters --timeout 60 > "$dir/jroce.out" 2> "$dir/jroce.err"
    jrc=$?
    gwait -t 120 A "$jid" > "$dir/guest.out" 2>&1
    grc=$?
    set -e
  else
    nsx java -jar "$JAR" $jargs --bind "$HOST_IP" --pcap "$dir/jroce.pcap" --counters --timeout 60 \
      > "$dir/jroce.out" 2> "$dir/jroce.err" &
    JPID=$!
    local i
    for i in $(seq 1 150); do
      if [[ $jargs == rping* ]]; then # no TCP listener: rping -d prints rdma_listen once it listens
        grep -q '^rdma_listen' "$dir/jroce.out" 2>/dev/null && break
      elif [[ $jargs == *" -R"* ]]; then # perf -R listens right after its banner
        grep -q 'Waiting for client' "$dir/jroce.out" 2>/dev/null && { sleep 1; break; }
      else
        nsx ss -ltnH "sport = :18515" | grep -q . && break
      fi
      kill -0 "$JPID" 2>/dev/null || break
      sleep 0.2
    done
    set +e
    gx -t 240 B "$gcmd $HOST_IP" > "$dir/guest.out" 2>&1
    grc=$?
    local w=0
    while kill -0 "$JPID" 2>/dev/null && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
    kill "$JPID" 2>/dev/null
    wait "$JPID"
    jrc=$?
    JPID=
    set -e
  fi
  rxe_counters "$g" > "$dir/rxe-after.txt" 2>&1 || true
  local counters icrc
  counters=$(grep '^counters device' "$dir/jroce.err" || true)
  icrc=$(sed -n 's/.*drop_icrc=\([0-9]*\).*/\1/p' <<< "$counters")
  [ "$jrc" = 0 ] || why+="jroce exit $jrc ($(grep -v '^counters device' "$dir/jroce.err" | grep . | tail -1 | cut -c1-300)); "
  [ "$grc" = 0 ] || why+="guest tool exit $grc ($(grep . "$dir/guest.out" | tail -1 | cut -c1-200)); "
  [ -n "$counters" ] || why+="no jroce counters; "
  [ -z "$icrc" ] || [ "$icrc" = 0 ] || why+="jroce drop_icrc=$icrc; "
  # every other drop reason must stay 0 too: rxe's packets must all be accepted (on a lossy run as well: loss
  # happens in nft, not in jroce)
  local drops
  drops=$(grep -o 'drop_[a-z_]*=[1-9][0-9]*' <<< "$counters" | grep -v '^drop_icrc=' | tr '\n' ' ' || true)
  [ -z "$drops" ] || why+="jroce dropped packets: ${drops% }; "
  local delta note
  delta=$(join <(sort "$dir/rxe-before.txt") <(sort "$dir/rxe-after.txt") 2>/dev/null \
    | awk -v re="^($RXE_BAD)\$" '$1 ~ re && $3 != $2 {printf "%s+%d ", $1, $3 - $2}')
  note=$(join <(sort "$dir/rxe-before.txt") <(sort "$dir/rxe-after.txt") 2>/dev/null \
    | awk -v re="^($RXE_NOTE)\$" '$1 ~ re && $3 != $2 {printf " %s+%d", $1, $3 - $2}')
  if [ -n "$LOSSY" ]; then # sequence errors and retries are the point of a lossy run: report them
    local la; la=$(loss_counts)
    note="nft dropped $(( ${la% *} - ${lb% *} )) in, $(( ${la#* } - ${lb#* } )) out; rxe:${delta:+ ${delta% }}$note"; delta=
  else
    note=${note:+rxe:$note}
  fi
  [ -z "$delta" ] || why+="rxe counters: ${delta% }; "
  if [ ! -s "$dir/jroce.pcap" ]; then
    why+="no jroce --pcap capture; "
  else
    java -jar "$JAR" inspect "$dir/jroce.pcap" > "$dir/inspect.txt" 2>&1 || why+="jroce inspect failed on the capture; "
    # inspect's summary line: "N RoCEv2 packets ... M malformed, K bad ICRC"; per packet "icrc=ok"
    if grep -qE 'icrc=(bad|BAD|mismatch)' "$dir/inspect.txt" || grep -E 'bad ICRC' "$dir/inspect.txt" | grep -qvE '(^|[^0-9])0 bad ICRC'; then
      why+="jroce inspect finds bad ICRCs in the capture; "
    fi
    # Wireshark's own decoding: every frame RRoCE, nothing malformed. Two of its guesses about the *payload* are
    # switched off: rpcordma (any SEND may be RPC-over-RDMA) and identify_payload (a payload whose 3rd-4th bytes
    # are zero is taken for an Ethernet frame: ib_write_lat -s 2 writes "00 61" + pad 00 00, from rxe as from us,
    # and its "ethertype 0x0061" then decodes as malformed CRTP).
    if command -v tshark >/dev/null; then
      local bad
      bad=$(tshark -r "$dir/jroce.pcap" --disable-protocol rpcordma -o infiniband.identify_payload:FALSE \
        -Y '_ws.malformed || !infiniband' 2>/dev/null | wc -l)
      [ "$bad" = 0 ] || why+="tshark: $bad frames malformed or not decoded as InfiniBand; "
    fi
  fi
  if [ -z "$why" ]; then
    PASSED=$((PASSED + 1)); log "PASS: $name ($(elapsed $t) s)$(summary "$dir")${note:+ [$note]}$(jroce_recovery "$dir")"
  elif ! guest_alive "$g"; then
    LABFAIL=$((LABFAIL + 1)); log "LAB: $name: guest $g stopped answering (emulation); ${why%; }"
  else
    FAILED=$((FAILED + 1)); log "FAIL: $name: ${why%; } (logs: $dir)"
  fi
}

# jroce's own recovery work during the case (retransmits, timeouts), when there was any.
jroce_recovery() {
  local c
  c=$(grep '^counters device' "$1/jroce.err" | grep -oE '(retransmits|timeouts)=[1-9][0-9]*' | tr '\n' ' ' || true)
  [ -z "$c" ] || echo " [jroce: ${c% }]"
}

# Loss: an nft table in the namespace's bridge family drops a random share of UDP/4791 frames both ways,
# silently (the sender's send() succeeds): input = guest -> jroce, output = jroce -> guest.
LOSSY= PREFIX=
loss_on() {
  nsx nft add table bridge jroce_loss
  local hook
  for hook in input output; do
    nsx nft add chain bridge jroce_loss "$hook" "{ type filter hook $hook priority 0; }"
    nsx nft add rule bridge jroce_loss "$hook" ether type ip udp dport 4791 numgen random mod 100 '<' "$1" counter drop
  done
  LOSSY=$1 PREFIX=loss$1-
}
loss_off() { nsx nft delete table bridge jroce_loss 2>/dev/null || true; LOSSY= PREFIX=; }
loss_counts() { # "N M": packets dropped so far by the input and the output rule
  local hook n out=
  for hook in input output; do
    n=$(nsx nft list chain bridge jroce_loss "$hook" | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
    out+="${n:-0} "
  done
  echo "${out% }"
}

# A short figure from the tools' output: ibv_rc_pingpong's usec/iter, or perftest's result row of each side
# (for send_bw the server's own row times only its receive completions, as perftest does).
summary() {
  local d=$1 l f out=
  l=$(grep -hE 'usec/iter' "$d/guest.out" | tail -1 || true)
  [ -n "$l" ] && { echo " guest: $l"; return; }
  for f in jroce guest; do
    l=$(grep -hE '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$d/$f.out" | tail -1 | tr -s ' \t' ' ' || true)
    [ -z "$l" ] || out+=" $f:$l;"
  done
  echo "${out%;}"
}

PP="ibv_rc_pingpong -d rxe0 -g 1"
PT="-d rxe0 -x 1 -F"
pingpong() { # mtu size iters
  run_case "pingpong-m$1-s$2-guest-server" guest-server "$PP -m $1 -s $2 -n $3" "pingpong -m $1 -s $2 -n $3"
  run_case "pingpong-m$1-s$2-jroce-server" jroce-server "$PP -m $1 -s $2 -n $3" "pingpong -m $1 -s $2 -n $3"
}
# ibv_ud_pingpong: UD SEND ping-pong, Q_Key 0x11111111, receive buffers of size + 40 (GRH). jroce's -m is its port
# MTU, which bounds a UD message (rxe's is 4096 on the lab's 9000-byte links; ud_pingpong has no -m).
UDPP="ibv_ud_pingpong -d rxe0 -g 1"
udpingpong() { # jroce-port-mtu size iters
  run_case "ud_pingpong-s$2-guest-server" guest-server "$UDPP -s $2 -n $3" "pingpong --ud -m $1 -s $2 -n $3 --chk"
  run_case "ud_pingpong-s$2-jroce-server" jroce-server "$UDPP -s $2 -n $3" "pingpong --ud -m $1 -s $2 -n $3"
}
perf() { # tool jroce-test mtu size iters [extra: options both sides take, "-A TYPE" or "-q N"]
  local tool=$1 jt=$2 m=$3 s=$4 n=$5 extra=${6:-} lat= sz="-s $4" jsz="-s $4"
  [[ $tool == *_lat ]] && lat=--lat
  if [[ $tool == ib_atomic* ]]; then sz=; jsz=; fi
  local t=${extra#-A }; t=${t#-}; local tag=${tool#ib_}${extra:+-${t// /}}
  run_case "$tag-m$m-s$s-guest-server" guest-server "$tool $PT -m $m $sz -n $n $extra" "perf $jt $lat -m $m $jsz -n $n $extra"
  run_case "$tag-m$m-s$s-jroce-server" jroce-server "$tool $PT -m $m $sz -n $n $extra" "perf $jt $lat -m $m $jsz -n $n $extra"
}

log "interop: jroce $(basename "$JAR") vs rdma_rxe ($(gx -t 60 A 'uname -r' 2>/dev/null | tr -d '\r')), $([ $LOSS_ONLY = 1 ] && echo loss || { [ $FULL = 1 ] && echo full || echo smoke; }) matrix, logs in $OUT"
rping_case() { # size: rdma-core's rping with -V -C 10, both roles
  run_case "rping-S$1-guest-server" guest-server "rping -s -a ${GIP[A]} -V -C 10 -S $1" "rping -c -a @HOST@ -V -C 10 -S $1"
  run_case "rping-S$1-jroce-server" jroce-server "rping -c -V -C 10 -S $1 -a" "rping -s -d -V -S $1"
}
perf_cm() { # tool jroce-test size iters: perftest -R (rdma_cm), both roles
  local lat=; [[ $1 == *_lat ]] && lat=--lat
  run_case "${1#ib_}-R-s$3-guest-server" guest-server "$1 $PT -R -s $3 -n $4" "perf $2 $lat -R -s $3 -n $4"
  run_case "${1#ib_}-R-s$3-jroce-server" jroce-server "$1 $PT -R -s $3 -n $4" "perf $2 $lat -R -s $3 -n $4"
}
# The connection manager's failure paths, jroce as the client of rxe's rping:
#  - the first REQ is dropped by nft (a bridge-family rule matching MAD attribute 0x0010 at UDP payload byte 36,
#    with a byte quota that only the first REQ fits in): jroce's CM resends it and the pings complete;
#  - a port nobody listens on: rxe answers REJ 8, jroce reports it and exits 1 without hanging.
cm_faults() {
  local name dir t jrc
  name=rping-req-dropped-once; dir=$OUT/$name; mkdir -p "$dir"; t=$SECONDS
  if [ -z "$ONLY" ] || [[ $name =~ $ONLY ]]; then
    nsx nft add table bridge jroce_req
    nsx nft add chain bridge jroce_req output '{ type filter hook output priority 0; }'
    nsx nft add rule bridge jroce_req output ether type ip udp dport 4791 '@th,352,16' 0x0010 quota until 400 bytes counter drop
    local jid; jid=$(gx -b A "rping -s -a ${GIP[A]} -V -C 3")
    sleep 2
    set +e
    timeout 120 ip netns exec "$NS" java -jar "$JAR" rping -c -a "${GIP[A]}" -V -C 3 --bind "$HOST_IP" --pcap "$dir/jroce.pcap" \
      > "$dir/jroce.out" 2> "$dir/jroce.err"
    jrc=$?
    gwait -t 120 A "$jid" > "$dir/guest.out" 2>&1
    set -e
    local dropped; dropped=$(nsx nft list table bridge jroce_req | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
    nsx nft delete table bridge jroce_req 2>/dev/null || true
    local reqs; reqs=$(java -jar "$JAR" inspect "$dir/jroce.pcap" 2>/dev/null | grep -c 'cm\[REQ' || true)
    if [ "$jrc" = 0 ] && [ "$dropped" = 1 ] && [ "$reqs" -ge 2 ]; then
      PASSED=$((PASSED + 1)); log "PASS: $name ($(elapsed $t) s) [nft dropped $dropped REQ, jroce sent $reqs]"
    else
      FAILED=$((FAILED + 1)); log "FAIL: $name: jroce exit $jrc, nft dropped ${dropped:-?}, REQs sent $reqs (logs: $dir)"
    fi
  fi
  name=rping-no-listener-rej; dir=$OUT/$name; mkdir -p "$dir"; t=$SECONDS
  if [ -z "$ONLY" ] || [[ $name =~ $ONLY ]]; then
    set +e
    timeout 60 ip netns exec "$NS" java -jar "$JAR" rping -c -a "${GIP[A]}" -p 7999 -C 1 --bind "$HOST_IP" \
      > "$dir/jroce.out" 2> "$dir/jroce.err"
    jrc=$?
    set -e
    if [ "$jrc" = 1 ] && grep -q 'RDMA_CM_EVENT_REJECTED, error 8' "$dir/jroce.err"; then
      PASSED=$((PASSED + 1)); log "PASS: $name ($(elapsed $t) s) [$(grep -m1 REJECTED "$dir/jroce.err")]"
    else
      FAILED=$((FAILED + 1)); log "FAIL: $name: jroce exit $jrc: $(tail -1 "$dir/jroce.err") (logs: $dir)"
    fi
  fi
}
lossy() { # the loss cases: data-checked pingpong and write/read bandwidth, both roles, MTU 4096 and 1024
  loss_on "$LOSS"
  log "interop: loss cases, nft dropping $LOSS% of UDP/4791 frames in each direction"
  run_case "pingpong-m1024-s9000-guest-server" guest-server "$PP -m 1024 -s 9000 -n 50 -c" "pingpong -m 1024 -s 9000 -n 50 -c"
  run_case "pingpong-m1024-s9000-jroce-server" jroce-server "$PP -m 1024 -s 9000 -n 50 -c" "pingpong -m 1024 -s 9000 -n 50 -c"
  perf ib_write_bw write 4096 65536 50
  perf ib_read_bw read 4096 65536 50
  perf ib_write_bw write 1024 65536 50
  loss_off
}
if [ $LOSS_ONLY = 1 ]; then
  lossy
elif [ $FULL = 0 ]; then
  pingpong 1024 4096 20
  perf ib_write_bw write 4096 65536 20
  perf ib_read_bw read 4096 65536 20
  run_case "atomic_bw-FETCH_AND_ADD-m4096-guest-server" guest-server "ib_atomic_bw $PT -m 4096 -n 20 -A FETCH_AND_ADD" "perf atomic -m 4096 -n 20"
  run_case "rping-S64-guest-server" guest-server "rping -s -a ${GIP[A]} -V -C 10 -S 64" "rping -c -a @HOST@ -V -C 10 -S 64"
  run_case "write_bw-R-s65536-jroce-server" jroce-server "ib_write_bw $PT -R -s 65536 -n 20" "perf write -R -s 65536 -n 20"
else
  rping_case 64
  rping_case 4096
  perf_cm ib_write_bw write 65536 20
  perf_cm ib_read_bw read 65536 20
  perf_cm ib_send_bw send 65536 20
  perf_cm ib_write_lat write 2 100
  cm_faults
  for m in 1024 4096; do
    for s in 64 4096 9000; do pingpong $m $s 20; done
    for s in 8 4096 65536; do
      perf ib_write_bw write $m $s 20
      perf ib_read_bw read $m $s 20
      perf ib_send_bw send $m $s 20
    done
    perf ib_write_lat write $m 9000 50
    perf ib_send_lat send $m 9000 50
    perf ib_read_lat read $m 9000 50
    for s in 2; do
      perf ib_write_lat write $m $s 100
      perf ib_send_lat send $m $s 100
      perf ib_read_lat read $m $s 100
    done
    perf ib_atomic_bw atomic $m 8 20 "-A FETCH_AND_ADD"
    perf ib_atomic_bw atomic $m 8 20 "-A CMP_AND_SWAP"
    perf ib_atomic_lat atomic $m 8 100 "-A FETCH_AND_ADD"
    perf ib_atomic_lat atomic $m 8 100 "-A CMP_AND_SWAP"
    perf ib_write_bw write $m 65536 20 "-q 2"
    perf ib_read_bw read $m 65536 20 "-q 2"
    perf ib_send_bw send $m 65536 20 "-q 2"
  done
  for s in 64 2048 4096; do udpingpong 4096 $s 20; done
  lossy
fi
[ $LABFAIL = 0 ] || exit 3
[ $FAILED = 0 ] || exit 1
exit 0
