#!/usr/bin/env bash
# A one-link bottleneck bed for jroce: two network namespaces joined by a veth pair, with a token-bucket
# (tc tbf) bottleneck on the sender's side of the link. The lossy-Ethernet report (docs/reports/lossy-ethernet.md) measures on it.
#
#   bed.sh up [--rate 1gbit] [--burst 64kb] [--limit 256kb] [--delay 1ms] [--pairs 16]
#   bed.sh down | status | stats
#
#   namespace  jroce-tbf-snd  veth jroce-tbs  10.198.0.1 .. 10.198.0.N   (flow senders: perf clients)
#                                             10.198.0.50                 (latency probe client)
#   namespace  jroce-tbf-rcv  veth jroce-tbr  10.198.0.101 .. 10.198.0.(100+N)  (perf servers)
#                                             10.198.0.150                (latency probe server)
#
# Flow i runs between 10.198.0.i (sender) and 10.198.0.(100+i) (receiver): each jroce process binds UDP
# 4791 on its own address, so every flow needs its own address pair. 10.198.0.0/24 lives only inside the
# two namespaces (NetnsLossIT uses 10.199.0.0/24 and jroce-it-a/b, so both beds can coexist).
#
# The bottleneck is the root qdisc of jroce-tbs, i.e. the egress from the sender namespace towards the
# receiver: data packets (WRITE/SEND) queue there; ACKs and NAKs come back on the unshaped reverse path.
#   rate   the bottleneck's line rate (default 1gbit).
#   burst  the token bucket: how many bytes may leave back to back at veth speed after an idle period.
#          64 KiB is 15 packets of a 4096-byte path MTU (4096 + 58 bytes of RoCE/UDP/IP headers and ICRC
#          on the wire), about 0.5 ms at 1 Gbit/s: the rate holds on sub-millisecond scales, and the bucket
#          is far above the 9000-byte MTU tbf needs as a minimum.
#   limit  the bottleneck's queue in bytes; a packet that does not fit is dropped (tc's "dropped"). This
#          is the knob that makes the loss: 256 KiB is about 2 ms at 1 Gbit/s, the per-port share of a
#          shallow-buffered data-centre switch, and half of one jroce QP's window (128 PSNs of 4 KiB), so
#          one flow faster than the bottleneck already overflows it, and 16 flows overflow it many times.
#          (Each jroce socket has a 4 MiB send buffer, larger than the limit, so the socket never pushes
#          back before the queue drops.)
#   delay  an extra one-way delay by a netem child of the tbf; this kernel build may lack netem (then
#          'up --delay' fails and says so). Without it the round trip is the veth's and the JVMs'.
# MTU 9000 on both veths so RoCE path MTU 4096 fits in one Ethernet frame.
set -euo pipefail

NS_S=jroce-tbf-snd
NS_R=jroce-tbf-rcv
DEV_S=jroce-tbs
DEV_R=jroce-tbr
NET=10.198.0
PROBE=50

rate=1gbit burst=64kb limit=256kb delay="" pairs=16

usage() {
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

need_root() {
    [ "$(id -u)" = 0 ] || { echo "bed.sh: needs root (network namespaces, tc)" >&2; exit 1; }
    command -v ip >/dev/null && command -v tc >/dev/null || { echo "bed.sh: needs ip and tc (iproute2)" >&2; exit 1; }
}

exists() { ip netns list | grep -qw "$1"; }

down() {
    # deleting a namespace deletes its veth end, and with it the peer and the qdisc
    for ns in "$NS_S" "$NS_R"; do
        if exists "$ns"; then ip netns del "$ns"; fi
    done
}

up() {
    down
    ip netns add "$NS_S"
    ip netns add "$NS_R"
    ip link add "$DEV_S" netns "$NS_S" mtu 9000 type veth peer name "$DEV_R" netns "$NS_R" mtu 9000
    for i in $(seq 1 "$pairs"); do
        ip -n "$NS_S" addr add "$NET.$i/24" dev "$DEV_S"
        ip -n "$NS_R" addr add "$NET.$((100 + i))/24" dev "$DEV_R"
    done
    ip -n "$NS_S" addr add "$NET.$PROBE/24" dev "$DEV_S"
    ip -n "$NS_R" addr add "$NET.$((100 + PROBE))/24" dev "$DEV_R"
    for ns in "$NS_S" "$NS_R"; do ip -n "$ns" link set lo up; done
    ip -n "$NS_S" link set "$DEV_S" up
    ip -n "$NS_R" link set "$DEV_R" up
    tc -n "$NS_S" qdisc add dev "$DEV_S" root handle 1: tbf rate "$rate" burst "$burst" limit "$limit"
    if [ -n "$delay" ]; then
        if ! tc -n "$NS_S" qdisc add dev "$DEV_S" parent 1:1 handle 10: netem delay "$delay" 2>/dev/null; then
            down
            echo "bed.sh: --delay needs netem (sch_netem), which this kernel does not have" >&2
            exit 1
        fi
    fi
    status
}

# One line, key=value, of the bottleneck's counters since 'up': bytes and packets sent, packets dropped
# at the queue limit, overlimits (packets that had to wait for tokens), the backlog now.
stats() {
    exists "$NS_S" || { echo "bed.sh: the bed is down" >&2; exit 1; }
    tc -n "$NS_S" -s qdisc show dev "$DEV_S" | awk '
        /^qdisc tbf/ { tbf = 1; next }
        /^qdisc/ { tbf = 0 }
        tbf && /Sent/ { gsub(/[(),]/, " "); for (i = 1; i <= NF; i++) {
            if ($i == "Sent") { bytes = $(i + 1); pkts = $(i + 3) }
            if ($i == "dropped") drops = $(i + 1)
            if ($i == "overlimits") over = $(i + 1) } }
        tbf && /backlog/ { backlog = $2 }
        END { total = pkts + drops
              printf "bottleneck sent_bytes=%.0f sent_packets=%.0f dropped=%.0f overlimits=%.0f backlog=%s drop_pct=%.3f\n",
                     bytes, pkts, drops, over, backlog, total ? 100 * drops / total : 0 }'
}

status() {
    for ns in "$NS_S" "$NS_R"; do
        if exists "$ns"; then echo "namespace $ns: up"; else echo "namespace $ns: down"; fi
    done
    exists "$NS_S" || return 0
    echo "sender $DEV_S: $NET.1..$NET.$pairs, probe $NET.$PROBE; receiver $DEV_R: $NET.101..$NET.$((100 + pairs)), probe $NET.$((100 + PROBE))"
    tc -n "$NS_S" -s qdisc show dev "$DEV_S"
    stats
}

cmd=${1:-}
[ -n "$cmd" ] || usage
shift
while [ $# -gt 0 ]; do
    case "$1" in
        --rate) rate=$2; shift 2 ;;
        --burst) burst=$2; shift 2 ;;
        --limit) limit=$2; shift 2 ;;
        --delay) delay=$2; shift 2 ;;
        --pairs) pairs=$2; shift 2 ;;
        *) usage ;;
    esac
done
[ "$pairs" -ge 1 ] && [ "$pairs" -le 49 ] || { echo "bed.sh: --pairs 1..49" >&2; exit 2; }

need_root
case "$cmd" in
    up) up ;;
    down) down ;;
    status) status ;;
    stats) stats ;;
    *) usage ;;
esac
