#!/usr/bin/env bash
# The connection manager against rdma_rxe's (ib_cm + rdma_cm): jroce's node session language (listen cm /
# connect cm) against librdmacm's rdma_server / rdma_client (port 7471, one 16-byte SEND each way) in guest A.
#   1. jroce connects to rdma_server          (rxe accepts jroce's REQ; jroce's RTU; rxe's DREQ)
#   2. rdma_client connects to jroce          (jroce accepts rxe's REQ; rxe's RTU; rxe's DREQ)
#   3. rdma_client to a port nobody listens on (jroce's REJ 8 -> librdmacm's ECONNREFUSED)
#   4. jroce to a port nobody listens on      (rxe's REJ 8 as jroce reads it)
#   5. jroce connects to ucmatose and calls disconnect (DREQ/DREP both ways: ucmatose releases at once too)
#   6. jroce rping -c --jroce-extensions all to rxe's rping -s: the offer is opaque private data to rxe
# `connect cm` offers jroce's extensions (an 8-byte "jroceX" trailer at the end of the REQ's private data):
# 1 and 5 check that the offer went out (in the capture), that rxe connects all the same and that the QP runs
# without extensions; 2 that jroce's REP to a plain REQ carries no trailer.
# Run as root while holding the lab lock: flock /var/tmp/jroce-lab.lock integration-tests/rxe/cm-interop.sh
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
LAB=$HERE/lab
NS=rxelab
JAR=$REPO/cli/target/jroce.jar
HOST_IP=10.77.0.1
GA=10.77.0.11
OUT=${OUT:-$(mktemp -d /tmp/jroce-cm-interop.XXXX)}
PASSED=0 FAILED=0
[ -f "$JAR" ] || { echo "cm-interop.sh: build the jar first (mvn -pl cli -am package -DskipTests)" >&2; exit 2; }
cleanup() { "$LAB/lab.sh" stop > "$OUT/lab-stop.log" 2>&1 || true; echo "cm-interop: $PASSED passed, $FAILED failed; logs in $OUT"; }
trap cleanup EXIT
ok() { echo "PASS $1"; PASSED=$((PASSED + 1)); }
bad() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
node() { # node NAME SCRIPT-TEXT: runs a jroce node in the namespace with that script
  printf '%s\n' "$2" > "$OUT/$1.jroce"
  timeout 120 ip netns exec "$NS" java -jar "$JAR" node --bind "$HOST_IP" --pcap "$OUT/$1.pcap" --script "$OUT/$1.jroce" \
    > "$OUT/$1.out" 2>&1
}

"$LAB/lab.sh" start > "$OUT/lab-start.log" 2>&1 || { echo "lab did not start (see $OUT/lab-start.log)"; exit 1; }

# 1. jroce -> rdma_server
id=$("$LAB/lab.sh" exec -b A "rdma_server -p 7471")
node client "cq c
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
"$LAB/lab.sh" wait -t 60 A "$id" > "$OUT/rdma_server.out" 2>&1; src=$?
if [ $rc = 0 ] && [ $src = 0 ]; then ok "jroce connect cm -> rdma_server"; else bad "jroce connect cm -> rdma_server" "jroce $rc, rdma_server $src"; fi
if grep -aq "jroceX" "$OUT/client.pcap" && grep -q "extensions: none" "$OUT/client.out"; then
  ok "jroce's extensions offer in the REQ, ignored by rdma_cm: extensions none"
else
  bad "extensions offer to rdma_server" "$(grep -c jroceX "$OUT/client.pcap" 2>/dev/null) trailer(s) in the capture; $(grep -o 'extensions: [a-z,-]*' "$OUT/client.out")"
fi

# 2. rdma_client -> jroce
node server "cq c
qp q
mr b size=4k
recv mr=b len=16 wr_id=1
listen cm port=7471 timeout=90s
expect wr_id=1 opcode=RECV len=16
send mr=b len=16
expect opcode=SEND
sleep 2s" &
jp=$!
sleep 3
"$LAB/lab.sh" exec -t 60 A "rdma_client -s $HOST_IP -p 7471" > "$OUT/rdma_client.out" 2>&1; crc=$?
wait $jp; rc=$?
if [ $rc = 0 ] && [ $crc = 0 ]; then ok "rdma_client -> jroce listen cm"; else bad "rdma_client -> jroce listen cm" "jroce $rc, rdma_client $crc"; fi
if ! grep -aq "jroceX" "$OUT/server.pcap" && grep -q "extensions: none" "$OUT/server.out"; then
  ok "jroce's REP to rdma_client's plain REQ carries no trailer"
else
  bad "REP to a plain REQ" "$(grep -ac jroceX "$OUT/server.pcap") trailer(s) in the capture"
fi

# 3. rdma_client -> a jroce port nobody listens on: jroce's REJ 8 must fail rdma_connect at once
node idle "cq c
qp q
listen cm port=7471 timeout=20s" &
jp=$!
sleep 3
"$LAB/lab.sh" exec -t 60 A "rdma_client -s $HOST_IP -p 7999; echo exit=\$?" > "$OUT/rdma_client-refused.out" 2>&1
wait $jp
if grep -qi "refused\|rejected" "$OUT/rdma_client-refused.out"; then ok "rdma_client to no listener: refused"; else bad "rdma_client to no listener" "$(tr '\n' ' ' < "$OUT/rdma_client-refused.out")"; fi

# 4. jroce -> a guest port nobody listens on: rxe answers REJ 8
node refused "cq c
qp q
connect cm host=$GA port=7999 timeout=3s"
if grep -q "REJ 8" "$OUT/refused.out"; then ok "jroce connect cm to no listener: REJ 8"; else bad "jroce to no listener" "$(tr '\n' ' ' < "$OUT/refused.out")"; fi
# 5. jroce -> ucmatose (server, port 7471): connect, then jroce releases first; ucmatose's server sends
#    message_count (here 0) messages and waits for DISCONNECTED
id=$("$LAB/lab.sh" exec -b A "ucmatose -C 0 -c 1")
node dreq "cq c
qp q
connect cm host=$GA port=7471 timeout=60s
disconnect"
rc=$?
"$LAB/lab.sh" wait -t 60 A "$id" > "$OUT/ucmatose.out" 2>&1; urc=$?
if [ $rc = 0 ] && [ $urc = 0 ] && grep -q "DISCONNECTED" "$OUT/dreq.out"; then ok "jroce -> ucmatose, jroce disconnects"; else bad "jroce -> ucmatose, jroce disconnects" "jroce $rc, ucmatose $urc"; fi
if grep -q "extensions: none" "$OUT/dreq.out"; then ok "ucmatose ignores the offer: extensions none"; else bad "offer to ucmatose" "$(grep -o 'extensions: [a-z,-]*' "$OUT/dreq.out")"; fi

# 6. jroce rping offering the extensions -> rxe rping -s (-V checks the data both ways)
id=$("$LAB/lab.sh" exec -b A "rping -s -a $GA -V -C 5")
sleep 1
timeout 60 ip netns exec "$NS" java -jar "$JAR" rping -c -a "$GA" --bind "$HOST_IP" -C 5 -V --jroce-extensions all \
  --pcap "$OUT/rping.pcap" --timeout 30 > "$OUT/rping.out" 2>&1; rc=$?
"$LAB/lab.sh" wait -t 60 A "$id" > "$OUT/rping-server.out" 2>&1; rrc=$?
if [ $rc = 0 ] && [ $rrc = 0 ] && grep -q "jroce extensions: none" "$OUT/rping.out" && grep -aq "jroceX" "$OUT/rping.pcap"; then
  ok "jroce rping --jroce-extensions all -> rxe rping: offer sent, ignored, 5 pings"
else
  bad "jroce rping offering -> rxe rping" "jroce $rc, rping $rrc: $(tr '\n' ' ' < "$OUT/rping.out" | head -c 300)"
fi
[ $FAILED = 0 ]
