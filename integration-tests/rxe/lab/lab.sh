#!/usr/bin/env bash
# Runs the rdma_rxe lab: QEMU guests (built by build.sh) with Soft-RoCE on a bridge in a network namespace.
#
#   lab.sh start [N]                   boot N guests (1: A, 2: A and B; default 2), wait until rxe0 is up in each
#   lab.sh stop                        stop the guests, delete the namespace (and with it bridge and taps)
#   lab.sh status                      guests, addresses, rxe GID indexes, links
#   lab.sh gid GUEST 4|6               rxe0's GID index of the guest's IPv4 (its IPv4-mapped GID) or IPv6 address
#   lab.sh exec [-t SECS] GUEST CMD    run CMD (bash; "-" reads it from stdin) as root in GUEST, print its
#                                      output, exit with its status; 124 when it outlives SECS (default 120)
#   lab.sh exec -b GUEST CMD           start CMD in GUEST and print a job id without waiting
#   lab.sh wait [-t SECS] GUEST JOB    wait for a job started with -b: its output and status, as exec
#   lab.sh console GUEST               the guest's serial console (kernel log, init messages)
#
# Network, all of it inside namespace rxelab, so no lab traffic reaches the host's own interfaces:
#   bridge rxebr0 10.77.0.1/24 and fd77::1/64 (the host-side peer, e.g. jroce, binds here: ip netns exec rxelab ...)
#   guest A 10.77.0.11 and fd77::11 on tap rxetapA, guest B 10.77.0.12 and fd77::12 on tap rxetapB
# IPv6 addresses are added without duplicate address detection (nodad), so they work at once.
# MTU 9000 everywhere, so that rxe's active MTU is 4096. QEMU itself runs in the namespace.
#
# Environment: JROCE_LAB_CACHE (default /var/tmp/jroce-rxe-lab), JROCE_LAB_ACCEL (tcg, the default, or kvm),
# JROCE_LAB_CPUS (1), JROCE_LAB_MEM (MiB, 1024), JROCE_LAB_BOOT_TIMEOUT (seconds; 600 under tcg, 120 kvm).
set -euo pipefail

CACHE=${JROCE_LAB_CACHE:-/var/tmp/jroce-rxe-lab}
ACCEL=${JROCE_LAB_ACCEL:-tcg}
CPUS=${JROCE_LAB_CPUS:-1}
MEM=${JROCE_LAB_MEM:-1024}
NS=rxelab
BRIDGE=rxebr0
NET=10.77.0
NET6=fd77:
MTU=9000
GUESTS=(A B)
STATE=$CACHE/guests

usage() { sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
die() { echo "lab.sh: $*" >&2; exit "${2:-1}"; }

guest_host() { # GUEST -> last byte of its address (and of its MAC)
  case $1 in A) echo 11 ;; B) echo 12 ;; *) die "no guest '$1' (A or B)" 2 ;; esac
}
in_ns() { ip netns exec "$NS" "$@"; }
ns_exists() { ip netns list | grep -qE "^$NS( |\$)"; }
qemu_pid() { # GUEST -> pid of its running QEMU, or fail
  local f=$STATE/$1/qemu.pid p
  [ -s "$f" ] || return 1
  p=$(< "$f")
  kill -0 "$p" 2> /dev/null && echo "$p"
}

# ------------------------------------------------------------------------------------------------ start
network_up() {
  ns_exists || ip netns add "$NS"
  in_ns ip link set lo up
  in_ns ip link show "$BRIDGE" > /dev/null 2>&1 \
    || in_ns ip link add "$BRIDGE" type bridge stp_state 0 forward_delay 0 mcast_snooping 0
  in_ns ip link set "$BRIDGE" mtu "$MTU"
  in_ns ip addr replace "$NET.1/24" dev "$BRIDGE"
  in_ns ip -6 addr replace "$NET6:1/64" dev "$BRIDGE" nodad
  # The host stack computes its UDP checksums in full instead of leaving them to "hardware" (the bridge and
  # taps would pass a partial sum on to the guest): a capture then shows the checksum a real NIC would send,
  # and the guest's UDP layer verifies it.
  in_ns ethtool -K "$BRIDGE" tx off > /dev/null 2>&1 || echo "lab.sh: ethtool -K $BRIDGE tx off failed (ethtool missing?)" >&2
  in_ns ip link set "$BRIDGE" up
}

boot() { # GUEST
  local g=$1 h dir=$STATE/$1 cpu=max
  h=$(guest_host "$g")
  if qemu_pid "$g" > /dev/null; then echo "guest $g already running"; return 0; fi
  rm -rf "$dir"
  mkdir -p "$dir/share/jobs"
  in_ns ip link show "rxetap$g" > /dev/null 2>&1 || in_ns ip tuntap add dev "rxetap$g" mode tap
  in_ns ip link set "rxetap$g" mtu "$MTU" master "$BRIDGE" up
  [ "$ACCEL" = kvm ] && cpu=host
  date +%s > "$dir/started"
  in_ns qemu-system-x86_64 -name "jroce-lab-$g" \
    -machine q35,accel="$ACCEL" -cpu "$cpu" -smp "$CPUS" -m "$MEM" \
    -nodefaults -no-user-config -display none -no-reboot \
    -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.img" \
    -append "console=ttyS0 root=/dev/vda rw init=/sbin/jroce-lab-init panic=-1 net.ifnames=0 lab.name=$g lab.addr=$NET.$h/24 lab.addr6=$NET6:$h/64 lab.mtu=$MTU" \
    -drive file="$CACHE/disk.img",format=raw,if=virtio,snapshot=on \
    -netdev tap,id=net0,ifname="rxetap$g",script=no,downscript=no \
    -device virtio-net-pci,netdev=net0,mac="52:54:00:77:00:$h" \
    -fsdev local,id=lab,path="$dir/share",security_model=none \
    -device virtio-9p-pci,fsdev=lab,mount_tag=lab \
    -serial file:"$dir/console.log" \
    -pidfile "$dir/qemu.pid" -daemonize
}

await_up() { # GUEST TIMEOUT
  local g=$1 limit=$((SECONDS + $2)) dir=$STATE/$1
  until [ -e "$dir/share/up" ]; do
    if ! qemu_pid "$g" > /dev/null; then
      tail -n 30 "$dir/console.log" >&2; die "guest $g: QEMU exited before the guest came up"
    fi
    if [ $SECONDS -ge $limit ]; then
      tail -n 30 "$dir/console.log" >&2; die "guest $g: not up after $2 s"
    fi
    sleep 0.5
  done
  echo "guest $g up after $(($(date +%s) - $(< "$dir/started"))) s: $(grep -E '^(kernel|boot_seconds|gid4|gid6)=' "$dir/share/up" | tr '\n' ' ')"
}

cmd_start() {
  local n=${1:-2} timeout g
  [[ $n =~ ^[12]$ ]] || die "start: 1 or 2 guests" 2
  [ -e "$CACHE/disk.img" ] || die "no guest image in $CACHE: run build.sh first"
  command -v qemu-system-x86_64 > /dev/null || die "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
  if [ "$ACCEL" = kvm ]; then timeout=${JROCE_LAB_BOOT_TIMEOUT:-120}; else timeout=${JROCE_LAB_BOOT_TIMEOUT:-600}; fi
  network_up
  for g in "${GUESTS[@]:0:n}"; do boot "$g"; done
  for g in "${GUESTS[@]:0:n}"; do await_up "$g" "$timeout"; done
  echo "lab: netns $NS, bridge $BRIDGE $NET.1/24 $NET6:1/64, accel $ACCEL, $CPUS vcpu, $MEM MiB, mtu $MTU"
}

# ------------------------------------------------------------------------------------------------ stop
cmd_stop() {
  local g p i
  # The disks are snapshots that die with QEMU, so there is nothing to shut down cleanly: SIGTERM makes
  # QEMU exit at once.
  for g in "${GUESTS[@]}"; do
    p=$(qemu_pid "$g") || continue
    kill "$p"
    for i in $(seq 1 50); do kill -0 "$p" 2> /dev/null || break; sleep 0.1; done
    kill -0 "$p" 2> /dev/null && kill -9 "$p"
    echo "guest $g stopped"
  done
  if ns_exists; then
    ip netns del "$NS"   # takes the bridge and the taps with it
    echo "netns $NS deleted"
  fi
}

cmd_status() {
  local g p
  for g in "${GUESTS[@]}"; do
    if p=$(qemu_pid "$g"); then
      if [ -e "$STATE/$g/share/up" ]; then
        echo "guest $g: running (qemu pid $p), up, $NET.$(guest_host "$g") (rxe GID index $(up_value "$g" gid4)), $NET6:$(guest_host "$g") (rxe GID index $(up_value "$g" gid6))"
      else
        echo "guest $g: running (qemu pid $p), booting"
      fi
    else
      echo "guest $g: not running"
    fi
  done
  if ns_exists; then in_ns ip -br addr; in_ns bridge link; else echo "netns $NS: absent"; fi
}

up_value() { # GUEST KEY -> KEY's value in the guest's "up" file (guest-init writes it), "?" when absent
  local v
  v=$(sed -n "s/^$2=//p" "$STATE/$1/share/up" 2> /dev/null)
  echo "${v:-?}"
}

cmd_gid() { # GUEST 4|6
  [ $# -eq 2 ] && [[ $2 =~ ^[46]$ ]] || usage
  guest_host "$1" > /dev/null
  [ -e "$STATE/$1/share/up" ] || die "guest $1 is not up" 3
  local v
  v=$(up_value "$1" "gid$2")
  [ "$v" != "?" ] || die "guest $1: rxe0 has no RoCE v2 GID for its IPv$2 address (see lab.sh console $1)"
  echo "$v"
}

# ------------------------------------------------------------------------------------------------ jobs
jobs_dir() { # GUEST -> its job directory, if the guest is up
  guest_host "$1" > /dev/null
  [ -e "$STATE/$1/share/up" ] && qemu_pid "$1" > /dev/null || die "guest $1 is not up" 3
  echo "$STATE/$1/share/jobs"
}

await_job() { # DIR ID TIMEOUT GUEST
  local limit=$((SECONDS + $3))
  until [ -e "$1/$2.exit" ]; do
    if [ $SECONDS -ge $limit ]; then
      cat "$1/$2.out" 2> /dev/null || true
      echo "lab.sh: job $2 in guest $4 still running after $3 s" >&2
      exit 124
    fi
    sleep 0.1
  done
  cat "$1/$2.out"
  exit "$(< "$1/$2.exit")"
}

cmd_exec() {
  local timeout=120 background= o dir id guest
  OPTIND=1
  while getopts "t:b" o; do
    case $o in t) timeout=$OPTARG ;; b) background=1 ;; *) usage ;; esac
  done
  shift $((OPTIND - 1))
  [ $# -ge 2 ] || usage
  guest=$1; shift
  dir=$(jobs_dir "$guest")
  id=$(date +%s%N)-$$
  if [ "$*" = - ]; then cat > "$dir/$id.tmp"; else printf '%s\n' "$*" > "$dir/$id.tmp"; fi
  mv "$dir/$id.tmp" "$dir/$id.sh"
  if [ -n "$background" ]; then echo "$id"; exit 0; fi
  await_job "$dir" "$id" "$timeout" "$guest"
}

cmd_wait() {
  local timeout=120 o dir
  OPTIND=1
  while getopts "t:" o; do
    case $o in t) timeout=$OPTARG ;; *) usage ;; esac
  done
  shift $((OPTIND - 1))
  [ $# -eq 2 ] || usage
  dir=$(jobs_dir "$1")
  [ -e "$dir/$2.sh" ] || [ -e "$dir/$2.run" ] || [ -e "$dir/$2.exit" ] || die "guest $1 has no job $2" 2
  await_job "$dir" "$2" "$timeout" "$1"
}

[ "$(id -u)" = 0 ] || die "must run as root (network namespace, taps)" 2
cmd=${1:-}; [ $# -eq 0 ] || shift
case $cmd in
  start) cmd_start "$@" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  gid) cmd_gid "$@" ;;
  exec) cmd_exec "$@" ;;
  wait) cmd_wait "$@" ;;
  console) guest_host "${1:-}" > /dev/null; cat "$STATE/$1/console.log" ;;
  *) usage ;;
esac
