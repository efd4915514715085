#!/usr/bin/env bash
# rxe <-> rxe baseline for interop.sh: the same tools between the two guests (A server, B client), without
# jroce, printing the rxe hw_counters that moved on each side. It shows what the emulated lab does on its own,
# e.g. rxe's retransmissions on its 67 ms timer (completer_retry_err / duplicate_request), so an interop note
# can be compared with rxe talking to itself.
#
#   integration-tests/rxe/baseline.sh [ROUNDS]     (root; boots and stops the lab, integration-tests/rxe/lab,
#                                                   like interop.sh; the image must be built: lab/build.sh)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB=$HERE/lab
ROUNDS=${1:-3}
[ "$(id -u)" = 0 ] || { echo "baseline.sh: must run as root" >&2; exit 2; }
trap '"$LAB/lab.sh" stop > /dev/null 2>&1 || true' EXIT
"$LAB/lab.sh" start 2 > /dev/null
gx() { "$LAB/lab.sh" exec "$@"; }
counters() {
  gx -t 60 "$1" 'cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo "$f $(cat $f)"; done' | sort
}
moved() { join <(echo "$1") <(echo "$2") | awk '$3 != $2 && $1 ~ /retry|duplicate|seq|exceeded|err/ {printf " %s+%d", $1, $3 - $2}'; }
one() { # name server-command client-command
  local a0 b0 t=$SECONDS id
  a0=$(counters A); b0=$(counters B)
  id=$(gx -b A "$2")
  gx -t 60 A 'for i in $(seq 1 300); do ss -ltnH "sport = :18515" | grep -q . && exit 0; sleep 0.1; done; exit 1' \
    || echo "  server not listening on 18515"
  gx -t 240 B "$3 10.77.0.11" > /tmp/rxe-baseline.out 2>&1 || echo "  client failed: $(tail -1 /tmp/rxe-baseline.out)"
  "$LAB/lab.sh" wait -t 120 A "$id" > /dev/null 2>&1 || echo "  server failed"
  echo "$1 ($((SECONDS - t)) s): server A:$(moved "$a0" "$(counters A)") | client B:$(moved "$b0" "$(counters B)")"
}
PP="ibv_rc_pingpong -d rxe0 -g 1"
for r in $(seq 1 "$ROUNDS"); do
  one "round $r pingpong -m 1024 -s 64 -n 20" "$PP -m 1024 -s 64 -n 20" "$PP -m 1024 -s 64 -n 20"
  one "round $r pingpong -m 1024 -s 9000 -n 20" "$PP -m 1024 -s 9000 -n 20" "$PP -m 1024 -s 9000 -n 20"
  one "round $r ib_write_bw -m 4096 -s 65536 -n 20" "ib_write_bw -d rxe0 -x 1 -F -m 4096 -s 65536 -n 20" "ib_write_bw -d rxe0 -x 1 -F -m 4096 -s 65536 -n 20"
  one "round $r ib_read_bw -m 4096 -s 65536 -n 20" "ib_read_bw -d rxe0 -x 1 -F -m 4096 -s 65536 -n 20" "ib_read_bw -d rxe0 -x 1 -F -m 4096 -s 65536 -n 20"
done
