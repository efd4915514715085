#!/usr/bin/env bash
# Interop check: jroce (host side, inside netns rxelab on 10.77.0.1 / fd77::1) against Linux Soft-RoCE (rdma_rxe)
# running the real ibv_rc_pingpong, ibv_ud_pingpong, rping, ucmatose, udaddy and perftest tools in QEMU guests: the project's lab,
# integration-tests/rxe/lab.
#
#   integration-tests/rxe/interop.sh           smoke subset (pingpong, write/read bw, atomic, rping, write_bw -R,
#                                              ucmatose -c 4, udaddy, ib_write_bw and rping through jroce's verbs
#                                              libraries; both roles; one pingpong over IPv6)
#   integration-tests/rxe/interop.sh --full    the whole matrix at RoCE MTU 1024 and 4096, UD pingpong, rping,
#                                              ucmatose, udaddy and perftest -R (rdma_cm) with the CM's failure paths,
#                                              the loss cases, IPv6
#   integration-tests/rxe/interop.sh --loss    only the loss cases (nft drops LOSS% of UDP/4791 each way)
#   integration-tests/rxe/interop.sh --ipv6    only the IPv6 cases (RoCEv2 over IPv6, rxe's IPv6 GID index)
#   integration-tests/rxe/interop.sh --cm      only the connection manager cases (cm-cases.sh: rdma_server/client,
#                                              ucmatose, udaddy, rping with the RTU dropped and either side stopping)
#   integration-tests/rxe/interop.sh --verbs   rdma-core's and perftest's own programs on the host through jroce's
#                                              verbs libraries (jroce exec) against the same programs on rxe, both
#                                              roles, each case checked on a capture of the guest's tap
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
HOST_IP=10.77.0.1 HOST_IP6=fd77::1
declare -A GIP=([A]=10.77.0.11 [B]=10.77.0.12) GIP6=([A]=fd77::11 [B]=fd77::12)
FULL=0 ONLY= OUT= LOSS_ONLY=0 LOSS=3 IPV6_ONLY=0 CM_ONLY=0 VERBS_ONLY=0
while [ $# -gt 0 ]; do
  case $1 in
    --full) FULL=1 ;;
    --loss) LOSS_ONLY=1 ;;
    --ipv6) IPV6_ONLY=1 ;;
    --cm) CM_ONLY=1 ;;
    --verbs) VERBS_ONLY=1 ;;
    --loss-percent) LOSS=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "interop.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "interop.sh: must run as root (network namespace, qemu taps)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/jroce-rxe-interop.XXXX)}
mkdir -p "$OUT"
T0=$SECONDS
PASSED=0 FAILED=0 LABFAIL=0
JPID= WPID=

log() { printf '%s\n' "$*"; }
elapsed() { echo $((SECONDS - $1)); }

cleanup() {
  local rc=$?
  if [ -n "$JPID" ] && kill -0 "$JPID" 2>/dev/null; then kill "$JPID" 2>/dev/null || true; fi
  if [ -n "$WPID" ] && kill -0 "$WPID" 2>/dev/null; then kill "$WPID" 2>/dev/null || true; fi
  "$LAB/lab.sh" stop > "$OUT/lab-stop.log" 2>&1 || true
  log "interop: $PASSED passed, $FAILED failed, $LABFAIL lab failures in $((SECONDS - T0)) s; logs in $OUT"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gx() { "$LAB/lab.sh" exec "$@"; }     # gx [-t SECS] [-b] GUEST CMD
gwait() { "$LAB/lab.sh" wait "$@"; }  # gwait [-t SECS] GUEST JOB
nsx() { ip netns exec "$NS" "$@"; }
# reap GUEST: ends the tools a case left running in a guest (its wait gave up, exit 124), which would otherwise hold
# their ports (perftest's 18515, rdma_cm's) into the next case
reap() { gx -t 10 "$1" "pkill -9 -f '^(ib_|ibv_|rping|ucmatose|udaddy|rdma_server|rdma_client)' || true" > /dev/null 2>&1 || true; }

# free_port: after a case, nothing on the host may still hold RoCE's UDP port, or every later case fails to open its
# device; a process left there (a program that ignored its end) is waited for 10 s, then killed, and the log says so
free_port() {
  local i pids
  for i in $(seq 1 100); do
    pids=$(nsx ss -uanpH 'sport = :4791' 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u | tr '\n' ' ')
    [ -n "$pids" ] || return 0
    sleep 0.1
  done
  log "LAB: a process still held UDP 4791 10 s after its case ended (pid $pids); killed"
  kill -9 $pids 2>/dev/null || true
}

# ---------------------------------------------------------------------------------------------- lab
command -v qemu-system-x86_64 >/dev/null || { log "LAB: qemu-system-x86_64 missing (apt-get install qemu-system-x86 debootstrap)"; exit 3; }
if [ ! -f "$JAR" ]; then
  log "interop: building $JAR"
  (cd "$REPO" && mvn -B -ntp -q -pl cli -am package -DskipTests) > "$OUT/mvn.log" 2>&1 || { log "FAIL: build: see $OUT/mvn.log"; exit 1; }
fi
# build.sh is cheap when the image is up to date, and remakes it when this checkout's guest-init differs from
# the one in the image (the IPv6 cases need a guest-init that sets up IPv6 and reports rxe's GID indexes).
[ -e "$LAB_CACHE/disk.img" ] || log "interop: building the rxe lab in $LAB_CACHE (first time: several minutes)"
t=$SECONDS
"$LAB/build.sh" > "$OUT/lab-build.log" 2>&1 || { log "LAB: build.sh failed: $(tail -1 "$OUT/lab-build.log")"; exit 3; }
grep -q 'disk image up to date' "$OUT/lab-build.log" || log "interop: lab image made in $(elapsed $t) s"
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

# rxe0's GID index of each guest's IPv4 and IPv6 address, as guest-init found them (lab.sh gid; measured: 1 and 2,
# after the link-local GID at 0). The tools' -g/-x take it; jroce's own GID table has one entry, 0.
declare -A GID4 GID6
for g in A B; do
  GID4[$g]=$("$LAB/lab.sh" gid "$g" 4) || { LABFAIL=$((LABFAIL + 1)); log "LAB: guest $g: no IPv4 GID index"; exit 3; }
  GID6[$g]=$("$LAB/lab.sh" gid "$g" 6) || { LABFAIL=$((LABFAIL + 1)); log "LAB: guest $g: no IPv6 GID index"; exit 3; }
done
log "interop: rxe GID indexes: A IPv4 ${GID4[A]} IPv6 ${GID6[A]}, B IPv4 ${GID4[B]} IPv6 ${GID6[B]}"

# The rxe counters that must not move during a case (rxe has no ICRC counter: a bad ICRC is a dropped packet,
# logged as "bad ICRC" in dmesg, and shows up as a sequence error or retry on one side or the other).
# Hard errors fail a case; completer_retry_err/duplicate_request (one rxe retransmission after its 67 ms timer) are
# only noted: they also happen rxe<->rxe under QEMU TCG (measured: ibv_rc_pingpong -s 4096 -n 20 between the two
# guests gave completer_retry_err +1 on one side and duplicate_request +4 on the other).
# The guest's UDP checksum errors (Udp6InCsumErrors in /proc/net/snmp6, InCsumErrors of the Udp: lines in
# /proc/net/snmp) must not move either: the guest's UDP layer verifies jroce's checksums before rxe sees them.
RXE_BAD='out_of_seq_request|rcvd_seq_err|retry_exceeded_err|retry_rnr_exceeded_err|send_err|bad_icrc_log|udp_in_csum_errors|udp6_in_csum_errors'
RXE_NOTE='completer_retry_err|duplicate_request'
rxe_counters() { # guest -> "name value" lines
  gx -t 60 "$1" 'cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo "$f $(cat $f)"; done; echo "bad_icrc_log $(dmesg | grep -c "bad ICRC" || true)"
    awk '"'"'$1 == "Udp6InCsumErrors" {print "udp6_in_csum_errors", $2}'"'"' /proc/net/snmp6
    awk '"'"'$1 == "Udp:" {if (!n) {n = split($0, h)} else for (i = 2; i <= n; i++) if (h[i] == "InCsumErrors") print "udp_in_csum_errors", $i}'"'"' /proc/net/snmp'
}
guest_alive() { gx -t 60 "$1" true >/dev/null 2>&1; }

# ---------------------------------------------------------------------------------------------- cases
# case NAME ROLE GUEST_CMD JROCE_ARGS
#   ROLE guest-server: the guest tool listens (on A), jroce connects to it;
#   ROLE jroce-server: jroce listens on 10.77.0.1, the guest tool (on B) connects.
# GUEST_CMD is the tool's command line without the server address, "@GID@" standing for the guest's GID index
# of the IP version under test; JROCE_ARGS jroce's arguments after the jar, without HOST/--bind/--pcap, or
# "exec:PROGRAM ARGS": an rdma-core or perftest program run on the host through jroce's verbs libraries
# (jroce exec --bind ... -- PROGRAM ARGS [HOST]). Such a case has no jroce capture or counters of its own: it is
# checked on a capture of the guest's tap (wire_check), as the IPv6 cases are.
#
# IP version (set by ip_version): FAM=4, or FAM=6 for RoCEv2 over IPv6 (jroce binds fd77::1, the tools use rxe's
# IPv6 GID index). The TCP exchange that carries QPN, PSN and GID stays on IPv4 where the tool wants it:
# perftest 4.5 exchanges over AF_INET only and ibv_rc_pingpong's server listens on 0.0.0.0, so jroce connects to
# the guest's IPv4 address and a jroce server listens on --oob 10.77.0.1 for perftest. ibv_rc_pingpong's client
# connects to any address family, so with EXCH=6 (the pingpong cases with jroce as server) the exchange runs over
# IPv6 too, to fd77::1. Over IPv6 each case also captures the guest's tap (wire.pcap: what rxe really sent and
# received, UDP checksums included) and checks it as it checks jroce's own capture.
FAM=4 EXCH=4 WIRE=
ip_version() { # 4 | 6
  FAM=$1 EXCH=4 WIRE=
  if [ "$1" = 6 ]; then PREFIX=ipv6-; WIRE=1; else PREFIX=; fi
}
run_case() {
  local name=$PREFIX$1 role=$2 gcmd=$3 jargs=$4 g t=$SECONDS why= jid jrc grc dir=$OUT/$PREFIX$1 wnote=
  if [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; then return 0; fi
  local xtool= wire=$WIRE
  if [[ $jargs == exec:* ]]; then xtool=${jargs#exec:}; wire=1; fi
  mkdir -p "$dir"
  if [ "$role" = guest-server ]; then g=A; else g=B; fi
  local bind=$HOST_IP oob= to=$HOST_IP gid=${GID4[$g]}
  if [ "$FAM" = 6 ]; then
    bind=$HOST_IP6 gid=${GID6[$g]}
    if [ "$EXCH" = 6 ]; then to=$HOST_IP6; else oob="--oob $HOST_IP"; fi
  fi
  gcmd=${gcmd//@GID@/$gid}
  if [ "$role" = guest-server ]; then
    printf '%s\n' "guest A: $gcmd" "jroce: $jargs ${GIP[A]} --bind $bind" > "$dir/case.txt"
  else
    printf '%s\n' "jroce: $jargs --bind $bind $oob" "guest B: $gcmd $to" > "$dir/case.txt"
  fi
  if ! guest_alive "$g"; then
    LABFAIL=$((LABFAIL + 1)); log "LAB: $name: guest $g does not answer"; return 0
  fi
  rxe_counters "$g" > "$dir/rxe-before.txt" 2>&1 || true
  [ "$FAM" = 4 ] || neighbour6 "$g"
  if [ -n "$wire" ] && ! wire_start "$g" "$dir"; then
    FAILED=$((FAILED + 1)); log "FAIL: $name: tcpdump on rxetap$g did not start ($(tail -1 "$dir/tcpdump.err"))"; return 0
  fi
  local lb=
  [ -z "$LOSSY" ] || lb=$(loss_counts)
  # shellcheck disable=SC2086
  # JROCE_ARGS with @HOST@ (rping -a @HOST@) name the server there instead of as a last argument
  # (the guest's address of the IP version under test: rdma_cm has no TCP exchange, it resolves that address)
  local jhost=${GIP[A]} chost=${GIP[A]}
  [ "$FAM" = 4 ] || chost=${GIP6[A]}
  if [[ $jargs == *@HOST@* ]]; then jargs=${jargs//@HOST@/$chost}; xtool=${xtool//@HOST@/$chost}; jhost=; fi
  if [ "$role" = guest-server ]; then
    jid=$(gx -b A "$gcmd")
    set +e
    # the connection manager cases: the guest's rdma_cm listener must be up before jroce's REQ (else REJ 8)
    if [[ $gcmd == rping* || $gcmd == *" -R"* || $gcmd == ucmatose* || $gcmd == udaddy* || $gcmd == rdma_server* ]]; then
      # wait for the guest's rdma_cm listener (rdma resource show cm_id: state LISTEN), up to 30 s: a tool
      # through jroce's libraries (perftest -R) does not retry a REJ 8 from a listener not yet up under emulation
      local until=$((SECONDS + 30))
      while [ $SECONDS -lt $until ]; do
        gx -t 5 A "rdma resource show cm_id" 2>/dev/null | grep -q LISTEN && break
        sleep 0.5
      done
    fi
    if [ -n "$xtool" ]; then
      timeout 300 ip netns exec "$NS" java -jar "$JAR" exec --bind "$bind" -- stdbuf -oL $xtool $jhost > "$dir/jroce.out" 2> "$dir/jroce.err"
    else
      timeout 300 ip netns exec "$NS" java -jar "$JAR" $jargs $jhost --bind "$bind" --pcap "$dir/jroce.pcap" \
        --counters --timeout 60 > "$dir/jroce.out" 2> "$dir/jroce.err"
    fi
    jrc=$?
    gwait -t 120 A "$jid" > "$dir/guest.out" 2>&1
    grc=$?
    [ "$grc" != 124 ] || reap A
    set -e
  else
    if [ -n "$xtool" ]; then
      # stdbuf: the program's first lines (which the wait below looks for) reach the file when it prints them
      # not through nsx: a function run in the background is a subshell, and the kill below would end only that
      # subshell, leaving the program running with the device's port (ip netns exec execs its command)
      ip netns exec "$NS" timeout 300 java -jar "$JAR" exec --bind "$bind" -- stdbuf -oL $xtool > "$dir/jroce.out" 2> "$dir/jroce.err" &
    else
      ip netns exec "$NS" java -jar "$JAR" $jargs --bind "$bind" $oob --pcap "$dir/jroce.pcap" --counters --timeout 60 \
        > "$dir/jroce.out" 2> "$dir/jroce.err" &
    fi
    JPID=$!
    local i lj=${xtool:-$jargs}
    for i in $(seq 1 150); do
      if [[ $lj == rping* ]]; then # no TCP listener: rping -d prints rdma_listen once it listens
        grep -q '^rdma_listen' "$dir/jroce.out" 2>/dev/null && break
      elif [[ $lj == ucmatose* || $lj == udaddy* ]]; then # they listen right after their first line
        grep -q 'starting server' "$dir/jroce.out" 2>/dev/null && { sleep 1; break; }
      elif [[ $lj == rdma_server* ]]; then # rdma_server listens right after its first line
        grep -q 'rdma_server: start' "$dir/jroce.out" 2>/dev/null && { sleep 1; break; }
      elif [[ $lj == *" -R"* ]]; then # perf -R listens right after its banner
        grep -q 'Waiting for client' "$dir/jroce.out" 2>/dev/null && { sleep 1; break; }
      else
        nsx ss -ltnH "sport = :18515" | grep -q . && break
      fi
      kill -0 "$JPID" 2>/dev/null || break
      sleep 0.2
    done
    set +e
    gx -t 240 B "$gcmd $to" > "$dir/guest.out" 2>&1
    grc=$?
    [ "$grc" != 124 ] || reap B
    local w=0
    while kill -0 "$JPID" 2>/dev/null && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
    kill "$JPID" 2>/dev/null
    wait "$JPID"
    jrc=$?
    JPID=
    free_port
    set -e
  fi
  rxe_counters "$g" > "$dir/rxe-after.txt" 2>&1 || true
  [ -z "$wire" ] || wire_stop
  local counters icrc
  counters=$(grep '^counters device' "$dir/jroce.err" || true)
  icrc=$(sed -n 's/.*drop_icrc=\([0-9]*\).*/\1/p' <<< "$counters")
  local who=jroce
  [ -z "$xtool" ] || who="${xtool%% *} on the host (jroce exec)"
  [ "$jrc" = 0 ] || why+="$who exit $jrc ($(grep -v '^counters device' "$dir/jroce.err" | grep . | tail -1 | cut -c1-300 || true)); "
  [ "$grc" = 0 ] || why+="guest tool exit $grc ($(grep . "$dir/guest.out" | tail -1 | cut -c1-200 || true)); "
  [ -n "$counters" ] || [ -n "$xtool" ] || why+="no jroce counters; "
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
  if [ -n "$xtool" ]; then
    : # no capture of jroce's own: the tap's (wire_check)
  elif [ ! -s "$dir/jroce.pcap" ]; then
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
  [ -z "$wire" ] || wire_check "$dir" "$g"
  if [ -z "$why" ]; then
    PASSED=$((PASSED + 1)); log "PASS: $name ($(elapsed $t) s)$(summary "$dir")${note:+ [$note]}$(jroce_recovery "$dir")${wnote:+ [$wnote]}"
  elif ! guest_alive "$g"; then
    LABFAIL=$((LABFAIL + 1)); log "LAB: $name: guest $g stopped answering (emulation); ${why%; }"
  elif [[ $gcmd == ib_*" -R"* ]] && [ "${RETRYING:-0}" -lt 3 ] \
      && grep -q 'RDMA_CM_EVENT_REJECTED; error: 8' "$dir/jroce.err" "$dir/jroce.out" "$dir/guest.out" 2>/dev/null; then
    # perftest -R's own race: after the exchange on its first connection the server opens a second listener for
    # the test QPs while the client connects them; a client whose REQ comes first gets REJ 8 (no listener: cm.c
    # cm_req_handler), as a kernel client would, and perftest does not retry. It happens in both roles (the
    # server is perftest's code either way: in the guest, or on the host through jroce's libraries), so the case
    # is run again (three times at most), and the report says so.
    rerun_case "$dir" rej8 "$name: perftest -R's server rejected the test connection (REJ 8: its second listener was not up yet)" "$@"
  elif [ -n "$LOSSY" ] && [ "${RETRYING:-0}" -lt 3 ] && last_ack_lost "$dir" "$gcmd" "$jargs"; then
    # ibv_rc_pingpong's own limit on a lossy link: each side destroys its QP as soon as its last send is
    # acknowledged and its last receive has arrived. The two last ACKs cross: when the one for the first side's
    # last SEND is dropped, the other side has already received that SEND (its count is complete), gets its own
    # ACK and exits, and the first side's retransmissions find no QP (rdma_rxe drops packets for an unknown QPN:
    # rxe_recv.c, hdr_check) until its retry count runs out, as it would between two rxe peers. Nothing was lost
    # but that ACK, so the case is run again (three times at most), and the report says so.
    rerun_case "$dir" lastack "$name: the last ACK was dropped after its peer had received every message and exited (${why%; })" "$@"
  else
    FAILED=$((FAILED + 1)); log "FAIL: $name: ${why%; } (logs: $dir)"
  fi
}

# rerun_case DIR TAG WHY CASE-ARGS...: a case that lost a guest tool's own race runs again; its logs stay as DIR.TAG-N
rerun_case() {
  local dir=$1 tag=$2 why=$3 tries=$(( ${RETRYING:-0} + 1 ))
  shift 3
  log "RETRY $tries: $why"
  mv "$dir" "$dir.$tag-$tries"
  RETRYING=$tries run_case "$@"
}

# A pingpong case that failed only because its last ACK was dropped (see run_case): one side ran every iteration
# (both its sends and its receives: "N iters in") and the other's last SEND ran out of retries. A fault that is
# not this race shows up again in the rerun and fails the case there. DIR GUEST_CMD JROCE_ARGS
last_ack_lost() {
  local d=$1
  [[ $2 == ibv_rc_pingpong* && $3 == pingpong* ]] || return 1
  if grep -qE '^[0-9]+ iters in ' "$d/guest.out" 2>/dev/null; then
    grep -q 'Failed status RETRY_EXC_ERR (12) for wr_id 2 ' "$d/jroce.err" 2>/dev/null
  elif grep -qE '^[0-9]+ iters in ' "$d/jroce.out" 2>/dev/null; then
    grep -q 'Failed status transport retry counter exceeded (12) for wr_id 2' "$d/guest.out" 2>/dev/null
  else
    return 1
  fi
}

# Resolve the guest's IPv6 neighbour entry before an IPv6 case. Over IPv4 the TCP exchange has resolved the
# guest's MAC by ARP before the first RoCE packet; over IPv6 with the exchange on IPv4 nothing has, and a
# neighbour still unresolved holds only unres_qlen_bytes (212992) of datagrams, dropping the oldest: in the
# first IPv6 run jroce's first 64 KiB SEND burst at MTU 1024 lost its first 36 packets there, rxe NAKed the gap
# (out_of_seq_request +1) and jroce went back and resent them. One datagram to the discard port starts neighbour
# discovery (the guest learns our address from the solicitation); then wait until the entry is usable.
neighbour6() { # GUEST
  local a=${GIP6[$1]} i
  nsx bash -c "echo > /dev/udp/$a/9" 2>/dev/null || true
  for i in $(seq 1 50); do
    nsx ip -6 neigh show "$a" dev rxebr0 | grep -qE 'REACHABLE|STALE|DELAY|PROBE|PERMANENT' && return 0
    sleep 0.1
  done
  log "interop: fd77:: neighbour $a not resolved after 5 s"
}

# The wire capture of an IPv6 case: tcpdump on the guest's tap (the bridge port), so it holds the frames as rxe
# sent them and as rxe received them, which jroce's --pcap (written from the socket) cannot show: the IPv6
# header rxe wrote and the UDP checksums. wire_check appends to the caller's $why and sets $wnote.
wire_start() { # GUEST DIR
  # not through nsx: $! must be tcpdump itself (ip netns exec execs it), not a subshell that would outlive it
  ip netns exec "$NS" tcpdump -i "rxetap$1" -s 0 -U -w "$2/wire.pcap" 'udp port 4791' 2> "$2/tcpdump.err" &
  WPID=$!
  local i
  for i in $(seq 1 100); do
    grep -q 'listening on' "$2/tcpdump.err" && return 0
    kill -0 "$WPID" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}
wire_stop() {
  sleep 0.3 # the last ACK may still be on its way through the bridge
  # TERM, not INT: a script's background jobs ignore SIGINT; tcpdump flushes its file on either
  kill -TERM "$WPID" 2>/dev/null || true
  wait "$WPID" 2>/dev/null || true
  WPID=
}
wire_check() { # DIR GUEST
  local d=$1 g=$2 n
  if [ ! -s "$d/wire.pcap" ]; then why+="no wire capture; "; return; fi
  # jroce inspect checks every ICRC exactly over the captured IPv6 header (no IPv4 ID to solve for); exit 1 on
  # any malformed packet or bad ICRC
  java -jar "$JAR" inspect "$d/wire.pcap" > "$d/wire-inspect.txt" 2>&1 \
    || why+="the wire capture has malformed packets or bad ICRCs (wire-inspect.txt); "
  n=$(sed -n 's/^\([0-9]*\) RoCEv2 packets.*/\1/p' "$d/wire-inspect.txt")
  [ "${n:-0}" -gt 0 ] || why+="no RoCEv2 packet in the wire capture; "
  if command -v tshark >/dev/null && [ "$FAM" = 4 ]; then
    local bad
    bad=$(tshark -r "$d/wire.pcap" --disable-protocol rpcordma -o infiniband.identify_payload:FALSE \
      -Y '_ws.malformed || !infiniband' 2>/dev/null | wc -l)
    [ "$bad" = 0 ] || why+="tshark: $bad wire frames malformed or not InfiniBand; "
    wnote="wire: $n packets, ICRC exact, tshark clean"
  elif command -v tshark >/dev/null; then
    local bad
    bad=$(tshark -r "$d/wire.pcap" --disable-protocol rpcordma -o infiniband.identify_payload:FALSE \
      -Y '_ws.malformed || !infiniband || !ipv6' 2>/dev/null | wc -l)
    [ "$bad" = 0 ] || why+="tshark: $bad wire frames malformed, not IPv6 or not InfiniBand; "
    # UDP checksums, per sender: rdma_rxe writes 0 (rxe_net.c prepare_udp_hdr), which IPv6 forbids (RFC 8200
    # 8.1) and which jroce accepts with UDP_NO_CHECK6_RX; jroce's socket gets the kernel's real checksum, which
    # must be there (a 0 from jroce fails the case). lab.sh turns the bridge's TX checksum offload off so that
    # the kernel computes it in full; with offload on, the capture holds only the pseudo-header sum that the
    # receiver's side completes ("a pseudo-header sum" below).
    tshark -r "$d/wire.pcap" -o udp.check_checksum:TRUE -T fields -e ipv6.src -e udp.checksum -e udp.checksum.status \
      2>/dev/null > "$d/wire-udp-checksums.txt"
    local r rz j jz jg jp
    read -r r rz j jz jg jp <<< "$(awk -v rxe="${GIP6[$g]}" -v us="$HOST_IP6" '
      $1 == rxe { r++; if ($2 == "0x0000") rz++ }
      $1 == us  { j++; if ($2 == "0x0000") jz++; else if ($3 == 1) jg++; else jp++ }
      END { printf "%d %d %d %d %d %d", r, rz, j, jz, jg, jp }' "$d/wire-udp-checksums.txt")"
    [ "$jz" = 0 ] || why+="jroce sent $jz of $j datagrams with UDP checksum 0 over IPv6; "
    wnote="wire: $n packets, ICRC exact; UDP checksum from rxe 0 in $rz/$r, from jroce correct in $jg/$j"
    # jroce's --pcap (from the socket) and the tap should hold the same datagrams; a difference is noted
    local jn
    jn=$(sed -n 's/^\([0-9]*\) RoCEv2 packets.*/\1/p' "$d/inspect.txt" 2>/dev/null)
    [ "${jn:-x}" = "$n" ] || wnote+="; jroce's capture has ${jn:-no} packets"
    [ "$jp" = 0 ] || wnote+=", a pseudo-header sum (checksum offload) in $jp/$j"
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

PP="ibv_rc_pingpong -d rxe0 -g @GID@"
PT="-d rxe0 -x @GID@ -F"
pingpong() { # mtu size iters
  run_case "pingpong-m$1-s$2-guest-server" guest-server "$PP -m $1 -s $2 -n $3" "pingpong -m $1 -s $2 -n $3"
  run_case "pingpong-m$1-s$2-jroce-server" jroce-server "$PP -m $1 -s $2 -n $3" "pingpong -m $1 -s $2 -n $3"
}
# ibv_ud_pingpong: UD SEND ping-pong, Q_Key 0x11111111, receive buffers of size + 40 (GRH). jroce's -m is its port
# MTU, which bounds a UD message (rxe's is 4096 on the lab's 9000-byte links; ud_pingpong has no -m).
UDPP="ibv_ud_pingpong -d rxe0 -g @GID@"
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

log "interop: jroce $(basename "$JAR") vs rdma_rxe ($(gx -t 60 A 'uname -r' 2>/dev/null | tr -d '\r')), $([ $LOSS_ONLY = 1 ] && echo loss || { [ $IPV6_ONLY = 1 ] && echo IPv6; } || { [ $CM_ONLY = 1 ] && echo CM; } || { [ $VERBS_ONLY = 1 ] && echo "verbs libraries"; } || { [ $FULL = 1 ] && echo full || echo smoke; }) matrix, logs in $OUT"
rping_case() { # size: rdma-core's rping with -V -C 10, both roles
  run_case "rping-S$1-guest-server" guest-server "rping -s -a ${GIP[A]} -V -C 10 -S $1" "rping -c -a @HOST@ -V -C 10 -S $1"
  run_case "rping-S$1-jroce-server" jroce-server "rping -c -V -C 10 -S $1 -a" "rping -s -d -V -S $1"
}
cm_tools() { # rdma-core's ucmatose (four RC connections at once) and udaddy (UD over rdma_cm's UDP port space), both roles
  run_case "ucmatose-c4-guest-server" guest-server "ucmatose -c 4 -b ${GIP[A]}" "ucmatose -c 4 -s @HOST@"
  run_case "ucmatose-c4-jroce-server" jroce-server "ucmatose -c 4 -s" "ucmatose -c 4"
  run_case "udaddy-guest-server" guest-server "udaddy -b ${GIP[A]}" "udaddy -s @HOST@"
  run_case "udaddy-jroce-server" jroce-server "udaddy -s" "udaddy"
}
perf_cm() { # tool jroce-test size iters [-q N]: perftest -R (rdma_cm), both roles
  local lat= q=${5:-} tag=; [[ $1 == *_lat ]] && lat=--lat
  [ -z "$q" ] || tag=-q${q#-q }
  run_case "${1#ib_}-R$tag-s$3-guest-server" guest-server "$1 $PT -R -s $3 -n $4 $q" "perf $2 $lat -R -s $3 -n $4 $q"
  run_case "${1#ib_}-R$tag-s$3-jroce-server" jroce-server "$1 $PT -R -s $3 -n $4 $q" "perf $2 $lat -R -s $3 -n $4 $q"
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
ipv6() { # RoCEv2 over IPv6, both roles: data-checked pingpong at two MTUs, the three bandwidth tests, a latency
          # test and atomics (see ip_version for the exchange's address family)
  ip_version 6
  log "interop: IPv6 cases, jroce on $HOST_IP6, rxe GID index ${GID6[A]} (A) / ${GID6[B]} (B)"
  pingpong6 1024 9000 20
  pingpong6 4096 64 20
  perf ib_write_bw write 4096 65536 20
  perf ib_read_bw read 4096 65536 20
  perf ib_send_bw send 1024 65536 20
  perf ib_write_lat write 4096 2 100
  perf ib_atomic_bw atomic 4096 8 20 "-A FETCH_AND_ADD"
  perf ib_atomic_lat atomic 4096 8 100 "-A CMP_AND_SWAP"
  # rping over IPv6: rdma_cm resolves the GID from the IP address itself (no @GID@) and its exchange is the CM's
  # MADs over RoCE, so there is no TCP exchange and no --oob: both roles address each other by fd77::
  run_case "rping-S64-guest-server" guest-server "rping -s -a ${GIP6[A]} -V -C 10 -S 64" "rping -c -a @HOST@ -V -C 10 -S 64"
  EXCH=6
  run_case "rping-S64-jroce-server" jroce-server "rping -c -V -C 10 -S 64 -a" "rping -s -d -V -S 64"
  EXCH=4
  ip_version 4
}
pingpong6() { # mtu size iters: pingpong with -c; jroce as server exchanges over IPv6 (the guest connects to fd77::1)
  run_case "pingpong-m$1-s$2-guest-server" guest-server "$PP -m $1 -s $2 -n $3 -c" "pingpong -m $1 -s $2 -n $3 -c"
  EXCH=6
  run_case "pingpong-m$1-s$2-jroce-server" jroce-server "$PP -m $1 -s $2 -n $3 -c" "pingpong -m $1 -s $2 -n $3 -c"
  EXCH=4
}
# rdma-core's and perftest's programs on the host, unmodified, through jroce's libibverbs and librdmacm (jroce exec),
# against the same programs on rxe, both roles. jroce0's GID 1 is its IPv4 address (-x 1 / -g 1, as rxe's).
XPT="-d jroce0 -x 1 -F"
verbs_pair() { # NAME GUEST_CMD HOST_CMD: both roles (a server's command gets the peer's address appended by run_case)
  run_case "verbs-$1-guest-server" guest-server "$2" "exec:$3"
  run_case "verbs-$1-jroce-server" jroce-server "$2" "exec:$3"
}
verbs_perf() { # tool size iters [extra]: perftest through the libraries; with -R the path MTU comes from the CM
  local tool=$1 s=$2 n=$3 extra=${4:-} sz="-s $2" m="-m 1024"
  [[ $tool == ib_atomic* ]] && sz=
  [[ $extra == *-R* ]] && m=
  local t=${extra// /}
  verbs_pair "${tool#ib_}${t}-s$s" "$tool $PT $m $sz -n $n $extra" "$tool $XPT $m $sz -n $n $extra"
}
verbs_cases() {
  verbs_pair rc_pingpong-s4096 "$PP -m 1024 -s 4096 -n 20 -c" "ibv_rc_pingpong -d jroce0 -g 1 -m 1024 -s 4096 -n 20 -c"
  verbs_pair ud_pingpong-s1024 "$UDPP -s 1024 -n 20" "ibv_ud_pingpong -d jroce0 -g 1 -s 1024 -n 20"
  for t in send write read; do verbs_perf "ib_${t}_bw" 65536 20; done
  verbs_perf ib_atomic_bw 8 20 "-A FETCH_AND_ADD"
  for t in send write read; do verbs_perf "ib_${t}_lat" 2 100; done
  verbs_perf ib_atomic_lat 8 100 "-A CMP_AND_SWAP"
  for t in send write read; do verbs_perf "ib_${t}_bw" 65536 20 -R; done
  verbs_perf ib_atomic_bw 8 20 "-A FETCH_AND_ADD -R"
  for t in send write read; do verbs_perf "ib_${t}_lat" 2 100 -R; done
  verbs_perf ib_atomic_lat 8 100 "-A CMP_AND_SWAP -R"
  run_case "verbs-rping-S64-guest-server" guest-server "rping -s -a ${GIP[A]} -V -C 10 -S 64" "exec:rping -c -a @HOST@ -V -C 10 -S 64"
  run_case "verbs-rping-S64-jroce-server" jroce-server "rping -c -V -C 10 -S 64 -a" "exec:rping -s -d -V -S 64"
  run_case "verbs-ucmatose-c4-guest-server" guest-server "ucmatose -c 4 -b ${GIP[A]}" "exec:ucmatose -c 4 -s @HOST@"
  run_case "verbs-ucmatose-c4-jroce-server" jroce-server "ucmatose -c 4 -s" "exec:ucmatose -c 4"
  run_case "verbs-udaddy-guest-server" guest-server "udaddy -b ${GIP[A]}" "exec:udaddy -s @HOST@"
  run_case "verbs-udaddy-jroce-server" jroce-server "udaddy -s" "exec:udaddy"
  run_case "verbs-rdma_server-guest-server" guest-server "rdma_server -p 7471" "exec:rdma_client -p 7471 -s @HOST@"
  run_case "verbs-rdma_client-jroce-server" jroce-server "rdma_client -p 7471 -s" "exec:rdma_server -p 7471"
}
# shellcheck source=cm-cases.sh
. "$HERE/cm-cases.sh"
if [ $LOSS_ONLY = 1 ]; then
  lossy
elif [ $CM_ONLY = 1 ]; then
  cm_tools
  cm_all
elif [ $VERBS_ONLY = 1 ]; then
  verbs_cases
elif [ $IPV6_ONLY = 1 ]; then
  ipv6
elif [ $FULL = 0 ]; then
  pingpong 1024 4096 20
  perf ib_write_bw write 4096 65536 20
  perf ib_read_bw read 4096 65536 20
  run_case "atomic_bw-FETCH_AND_ADD-m4096-guest-server" guest-server "ib_atomic_bw $PT -m 4096 -n 20 -A FETCH_AND_ADD" "perf atomic -m 4096 -n 20"
  run_case "rping-S64-guest-server" guest-server "rping -s -a ${GIP[A]} -V -C 10 -S 64" "rping -c -a @HOST@ -V -C 10 -S 64"
  run_case "write_bw-R-s65536-jroce-server" jroce-server "ib_write_bw $PT -R -s 65536 -n 20" "perf write -R -s 65536 -n 20"
  run_case "ucmatose-c4-guest-server" guest-server "ucmatose -c 4 -b ${GIP[A]}" "ucmatose -c 4 -s @HOST@"
  run_case "udaddy-jroce-server" jroce-server "udaddy -s" "udaddy"
  run_case "verbs-write_bw-s65536-guest-server" guest-server "ib_write_bw $PT -m 1024 -s 65536 -n 20" "exec:ib_write_bw $XPT -m 1024 -s 65536 -n 20"
  run_case "verbs-rping-S64-jroce-server" jroce-server "rping -c -V -C 10 -S 64 -a" "exec:rping -s -d -V -S 64"
  ip_version 6
  run_case "pingpong-m1024-s9000-guest-server" guest-server "$PP -m 1024 -s 9000 -n 20 -c" "pingpong -m 1024 -s 9000 -n 20 -c"
  ip_version 4
else
  rping_case 64
  rping_case 4096
  perf_cm ib_write_bw write 65536 20
  perf_cm ib_read_bw read 65536 20
  perf_cm ib_send_bw send 65536 20
  perf_cm ib_write_lat write 2 100
  perf_cm ib_write_bw write 65536 20 "-q 2"
  perf_cm ib_read_bw read 65536 20 "-q 2"
  cm_tools
  cm_faults
  cm_all
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
  verbs_cases
  lossy
  ipv6
fi
[ $LABFAIL = 0 ] || exit 3
[ $FAILED = 0 ] || exit 1
exit 0
