# The connection manager against rdma_rxe's (ib_cm + rdma_cm), with librdmacm's own programs in guest A.
# Sourced by interop.sh (which defines gx, gwait, nsx, log, elapsed, OUT, ONLY, NS, JAR, HOST_IP, GIP, PASSED,
# FAILED); `interop.sh --cm` runs only these, `--full` runs them all, the smoke runs cm_smoke.
#
#   rdma-server-*, rdma-client-*  jroce's node (`connect cm` / `listen cm`) against rdma_server / rdma_client
#                                 (port 7471, one 16-byte SEND each way), and each side's port nobody listens on
#   ucmatose-*, udaddy-*          jroce ucmatose / udaddy against librdmacm's, both roles
#   rping-rtu-dropped-*           jroce passive: every RTU dropped by nft, the first data packet establishes the
#                                 connection (COMM_EST); rxe passive: the first RTU dropped, rxe's REP resent, jroce's
#                                 RTU again (rxe's rping waits for the RTU: Linux reports COMM_EST to the application)
#   rping-*-stops-first           the server's process stopped in the middle of the pings (rping's server never
#                                 ends on its own): its DREQ, sent as the process exits, ends the client at once
#   rping-offer-extensions        jroce rping offering jroce's extensions: opaque private data to rdma_cm
# (the client disconnecting first is every rping case of interop.sh: rping's client disconnects after -C pings)

cm_begin() { # name: 1 when --only leaves it out; else sets CMNAME, CMDIR, CMT
  CMNAME=$1
  if [ -n "$ONLY" ] && ! [[ $1 =~ $ONLY ]]; then return 1; fi
  CMDIR=$OUT/$1; mkdir -p "$CMDIR"; CMT=$SECONDS
}
cm_pass() { PASSED=$((PASSED + 1)); log "PASS: $CMNAME ($(elapsed "$CMT") s)${1:+ [$1]}"; }
cm_fail() { FAILED=$((FAILED + 1)); log "FAIL: $CMNAME: $1 (logs: $CMDIR)"; }
cm_node() { # name script-text: a jroce node in the namespace running that session script; its exit status
  printf '%s\n' "$2" > "$CMDIR/$1.jroce"
  timeout 120 ip netns exec "$NS" java -jar "$JAR" node --bind "$HOST_IP" --pcap "$CMDIR/$1.pcap" --script "$CMDIR/$1.jroce" \
    > "$CMDIR/$1.out" 2>&1
}
cm_wait_line() { # file regex count seconds: waits until file has count lines matching regex
  local i
  for i in $(seq 1 $(($4 * 5))); do
    [ "$(grep -c -- "$2" "$1" 2>/dev/null || true)" -ge "$3" ] && return 0
    sleep 0.2
  done
  return 1
}
cm_rtu_drop() { # all | first | off: nft in the bridge drops every CM RTU, or only the first (a byte quota only one
                # fits in), by MAD attribute 0x0014 at UDP payload byte 36 (BTH 12 + DETH 8 + the MAD header's
                # attribute ID at 16), from jroce (output) and to jroce (input)
  if [ "$1" != off ]; then
    local quota=; [ "$1" = first ] && quota='quota until 400 bytes'
    nsx nft add table bridge jroce_rtu
    nsx nft add chain bridge jroce_rtu output '{ type filter hook output priority 0; }'
    nsx nft add chain bridge jroce_rtu input '{ type filter hook input priority 0; }'
    # shellcheck disable=SC2086
    nsx nft add rule bridge jroce_rtu output ether type ip udp dport 4791 '@th,352,16' 0x0014 $quota counter drop
    # shellcheck disable=SC2086
    nsx nft add rule bridge jroce_rtu input ether type ip udp dport 4791 '@th,352,16' 0x0014 $quota counter drop
  else
    nsx nft delete table bridge jroce_rtu 2>/dev/null || true
  fi
}
cm_rtu_dropped() { # RTUs the two rules dropped
  nsx nft list table bridge jroce_rtu | awk '{for (i = 1; i < NF; i++) if ($i == "packets") n += $(i + 1)} END {print n + 0}'
}

cm_rdma_server() {
  local GA=${GIP[A]} id rc src
  cm_begin rdma-server-jroce-client || return 0
  id=$(gx -b A "rdma_server -p 7471")
  sleep 2
  cm_node client "cq c
qp q
mr b size=4k
recv mr=b offset=1k len=16 wr_id=1
connect cm host=$GA port=7471 timeout=60s
fill b text=\"jroce to rdma_sv\"
send mr=b len=16
expect opcode=SEND
expect wr_id=1 opcode=RECV len=16
sleep 2s"
  rc=$?
  gwait -t 60 A "$id" > "$CMDIR/rdma_server.out" 2>&1; src=$?
  if [ $rc != 0 ] || [ $src != 0 ]; then cm_fail "jroce $rc, rdma_server $src"
  elif ! grep -aq "jroceX" "$CMDIR/client.pcap" || ! grep -q "extensions: none" "$CMDIR/client.out"; then
    cm_fail "jroce's extensions offer: $(grep -ac jroceX "$CMDIR/client.pcap") trailer(s) in the capture; $(grep -o 'extensions: [a-z,-]*' "$CMDIR/client.out")"
  else cm_pass "the REQ offered jroce's extensions; rdma_cm ignored them"; fi
}

cm_rdma_client() {
  local jp rc crc
  cm_begin rdma-client-jroce-server || return 0
  cm_node server "cq c
qp q
mr b size=4k
recv mr=b len=16 wr_id=1
listen cm port=7471 timeout=90s
expect wr_id=1 opcode=RECV len=16
send mr=b len=16
expect opcode=SEND
sleep 2s" &
  jp=$!
  cm_wait_line "$CMDIR/server.out" 'waiting for an rdma_cm connect' 1 30
  gx -t 60 A "rdma_client -s $HOST_IP -p 7471" > "$CMDIR/rdma_client.out" 2>&1; crc=$?
  wait $jp; rc=$?
  if [ $rc != 0 ] || [ $crc != 0 ]; then cm_fail "jroce $rc, rdma_client $crc"
  elif grep -aq "jroceX" "$CMDIR/server.pcap" || ! grep -q "extensions: none" "$CMDIR/server.out"; then
    cm_fail "the REP to a plain REQ: $(grep -ac jroceX "$CMDIR/server.pcap") trailer(s) in the capture"
  else cm_pass "no trailer in the REP to a plain REQ"; fi
}

cm_no_listener() {
  local jp GA=${GIP[A]}
  if cm_begin rdma-client-no-listener-rej; then # jroce's REJ 8 must fail rdma_connect at once
    cm_node idle "cq c
qp q
listen cm port=7471 timeout=20s" &
    jp=$!
    cm_wait_line "$CMDIR/idle.out" 'waiting for an rdma_cm connect' 1 30
    gx -t 60 A "rdma_client -s $HOST_IP -p 7999; echo exit=\$?" > "$CMDIR/rdma_client.out" 2>&1
    wait $jp
    if grep -qi "refused\|rejected" "$CMDIR/rdma_client.out"; then cm_pass "$(grep -i -m1 'refused\|rejected' "$CMDIR/rdma_client.out")"
    else cm_fail "$(tr '\n' ' ' < "$CMDIR/rdma_client.out")"; fi
  fi
  if cm_begin rdma-server-no-listener-rej; then # rxe answers REJ 8
    cm_node refused "cq c
qp q
connect cm host=$GA port=7999 timeout=3s"
    if grep -q "REJ 8" "$CMDIR/refused.out"; then cm_pass; else cm_fail "$(tr '\n' ' ' < "$CMDIR/refused.out")"; fi
  fi
}

cm_ucmatose_release() { # jroce connects to ucmatose's server and releases first; ucmatose waits for DISCONNECTED
  local id rc urc GA=${GIP[A]}
  cm_begin ucmatose-jroce-disconnects || return 0
  id=$(gx -b A "ucmatose -C 0 -c 1")
  sleep 2
  cm_node dreq "cq c
qp q
connect cm host=$GA port=7471 timeout=60s
disconnect"
  rc=$?
  gwait -t 60 A "$id" > "$CMDIR/ucmatose.out" 2>&1; urc=$?
  if [ $rc = 0 ] && [ $urc = 0 ] && grep -q "DISCONNECTED" "$CMDIR/dreq.out" && grep -q "extensions: none" "$CMDIR/dreq.out"; then
    cm_pass "DREQ/DREP both ways; extensions none"
  else cm_fail "jroce $rc, ucmatose $urc; $(grep -o 'extensions: [a-z,-]*' "$CMDIR/dreq.out")"; fi
}

cm_rping_offer() { # jroce rping offering the extensions -> rxe rping -s (-V checks the data both ways)
  local id rc rrc GA=${GIP[A]}
  cm_begin rping-offer-extensions || return 0
  id=$(gx -b A "rping -s -a $GA -V -C 5")
  sleep 2
  timeout 60 ip netns exec "$NS" java -jar "$JAR" rping -c -a "$GA" --bind "$HOST_IP" -C 5 -V --jroce-extensions all \
    --pcap "$CMDIR/rping.pcap" --timeout 30 > "$CMDIR/rping.out" 2>&1; rc=$?
  gwait -t 60 A "$id" > "$CMDIR/rping-server.out" 2>&1; rrc=$?
  if [ $rc = 0 ] && [ $rrc = 0 ] && grep -q "jroce extensions: none" "$CMDIR/rping.out" && grep -aq "jroceX" "$CMDIR/rping.pcap"; then
    cm_pass "offer sent, ignored, 5 pings"
  else cm_fail "jroce $rc, rping $rrc: $(tr '\n' ' ' < "$CMDIR/rping.out" | head -c 300)"; fi
}

cm_rtu_dropped_cases() {
  local id rc grc jp n GA=${GIP[A]}
  # rxe as the passive side: rping waits for ESTABLISHED, which Linux's CM reports on the RTU only (librdmacm leaves
  # the QP's COMM_EST event to the application, and rping does not pass it on with rdma_notify): with every RTU lost
  # the server never starts, rxe against rxe alike. So the first RTU is dropped: rxe resends its REP, and jroce must
  # answer the duplicate REP with the RTU again (cm.c cm_rep_handler in ESTABLISHED)
  if cm_begin rping-rtu-dropped-guest-server; then
    cm_rtu_drop first
    id=$(gx -b A "rping -s -a $GA -V -C 5")
    sleep 2
    timeout 120 ip netns exec "$NS" java -jar "$JAR" rping -c -a "$GA" --bind "$HOST_IP" -V -C 5 --timeout 60 \
      --pcap "$CMDIR/jroce.pcap" > "$CMDIR/jroce.out" 2> "$CMDIR/jroce.err"; rc=$?
    gwait -t 60 A "$id" > "$CMDIR/guest.out" 2>&1; grc=$?
    n=$(cm_rtu_dropped); cm_rtu_drop off
    local rtus; rtus=$(java -jar "$JAR" inspect "$CMDIR/jroce.pcap" 2>/dev/null | grep -c 'cm\[RTU' || true)
    if [ $rc = 0 ] && [ $grc = 0 ] && [ "${n:-0}" = 1 ] && [ "$rtus" -ge 2 ]; then cm_pass "nft dropped the first RTU; jroce sent $rtus; 5 pings"
    else cm_fail "jroce $rc, rping $grc, RTUs dropped ${n:-?}, sent $rtus: $(tail -1 "$CMDIR/jroce.err")"; fi
  fi
  if cm_begin rping-rtu-dropped-jroce-server; then # rxe's RTU never arrives: jroce's QP is established by its first SEND
    cm_rtu_drop all
    timeout 120 ip netns exec "$NS" java -jar "$JAR" rping -s -a "$HOST_IP" -d -V --timeout 60 --pcap "$CMDIR/jroce.pcap" \
      > "$CMDIR/jroce.out" 2> "$CMDIR/jroce.err" &
    jp=$!
    cm_wait_line "$CMDIR/jroce.out" '^rdma_listen' 1 30
    gx -t 120 B "rping -c -a $HOST_IP -V -C 5" > "$CMDIR/guest.out" 2>&1; grc=$?
    wait $jp; rc=$?
    n=$(cm_rtu_dropped); cm_rtu_drop off
    if [ $rc = 0 ] && [ $grc = 0 ] && [ "${n:-0}" -ge 1 ]; then cm_pass "nft dropped $n RTU(s); 5 pings"
    else cm_fail "jroce $rc, rping $grc, RTUs dropped ${n:-?}: $(tail -1 "$CMDIR/jroce.err")"; fi
  fi
}

cm_stops_first_cases() {
  local id rc grc jp t GA=${GIP[A]}
  if cm_begin rping-guest-server-stops-first; then # rxe's rping -s killed: the kernel's DREQ ends jroce's client
    id=$(gx -b A "rping -s -a $GA -V")
    sleep 2
    timeout 120 ip netns exec "$NS" java -jar "$JAR" rping -c -a "$GA" --bind "$HOST_IP" -v -V -C 0 --timeout 60 \
      --pcap "$CMDIR/jroce.pcap" > "$CMDIR/jroce.out" 2> "$CMDIR/jroce.err" &
    jp=$!
    if cm_wait_line "$CMDIR/jroce.out" 'ping data' 5 60; then
      gx -t 30 A "pkill -TERM -x rping" > /dev/null 2>&1
      t=$SECONDS
      wait $jp; rc=$?
      t=$((SECONDS - t))
      gwait -t 30 A "$id" > "$CMDIR/guest.out" 2>&1
      if [ $rc = 0 ] && [ $t -le 5 ] && grep -q "server disconnected" "$CMDIR/jroce.err"; then
        cm_pass "jroce's client ended $t s after the server stopped: $(grep -m1 'server disconnected' "$CMDIR/jroce.err")"
      else cm_fail "jroce exit $rc after $t s: $(tail -1 "$CMDIR/jroce.err")"; fi
    else
      kill $jp 2>/dev/null; wait $jp; cm_fail "no pings: $(tail -1 "$CMDIR/jroce.err")"
    fi
  fi
  if cm_begin rping-jroce-server-stops-first; then # jroce's rping -s stopped with SIGTERM: its DREQ ends rxe's client
    timeout 120 ip netns exec "$NS" java -jar "$JAR" rping -s -a "$HOST_IP" -d -v --timeout 60 --pcap "$CMDIR/jroce.pcap" \
      > "$CMDIR/jroce.out" 2> "$CMDIR/jroce.err" &
    jp=$!
    cm_wait_line "$CMDIR/jroce.out" '^rdma_listen' 1 30
    id=$(gx -b B "rping -c -a $HOST_IP -V -C 0")
    if cm_wait_line "$CMDIR/jroce.out" 'ping data' 5 60; then
      pkill -TERM -f "jroce.jar rping -s -a $HOST_IP" || true
      wait $jp; rc=$?
      t=$SECONDS
      gwait -t 60 B "$id" > "$CMDIR/guest.out" 2>&1; grc=$?
      t=$((SECONDS - t))
      if [ $t -le 5 ] && grep -q "DISCONNECT" "$CMDIR/guest.out"; then
        cm_pass "rxe's rping ended $t s after jroce stopped (exit $grc): $(grep -m1 DISCONNECT "$CMDIR/guest.out")"
      else cm_fail "rxe's rping exit $grc after $t s: $(tail -2 "$CMDIR/guest.out" | tr '\n' ' ')"; fi
    else
      kill $jp 2>/dev/null; wait $jp; gx -t 30 B "pkill -x rping" > /dev/null 2>&1
      cm_fail "no pings: $(tail -1 "$CMDIR/jroce.err")"
    fi
  fi
}

cm_all() {
  set +e # each case judges its commands' exit status itself
  log "interop: connection manager cases (rdma_server/rdma_client, ucmatose, udaddy, rping's RTU and release paths)"
  cm_rdma_server
  cm_rdma_client
  cm_no_listener
  cm_ucmatose_release
  cm_rping_offer
  cm_rtu_dropped_cases
  cm_stops_first_cases
  set -e
}
