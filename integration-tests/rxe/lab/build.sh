#!/usr/bin/env bash
# Builds the rdma_rxe lab's guest: a minimal Debian root filesystem (debootstrap) holding the stock Debian
# kernel, whose rdma_rxe module is the Soft-RoCE peer jroce is tested against, the verbs tools that drive it
# (ibv_rc_pingpong, perftest) and the lab's own PID 1 (guest-init). The result, in the cache directory:
#
#   $JROCE_LAB_CACHE/root/       the unpacked guest root filesystem (kept: the slow, downloaded part)
#   $JROCE_LAB_CACHE/disk.img    ext4 image of it; guests boot it with snapshot=on, so every boot is clean
#   $JROCE_LAB_CACHE/vmlinuz, initrd.img, kernel-release
#
# The cache defaults to /var/tmp/jroce-rxe-lab. Running it again is cheap: debootstrap runs only once, the
# disk image is remade only when guest-init or this script changed. Needs root, debootstrap, e2fsprogs and a
# Debian mirror (JROCE_LAB_MIRROR, default the one apt uses here, else deb.debian.org).
set -euo pipefail

LAB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${JROCE_LAB_CACHE:-/var/tmp/jroce-rxe-lab}
SUITE=${JROCE_LAB_SUITE:-bookworm}
DISK_SIZE=${JROCE_LAB_DISK_SIZE:-2G}

# What the guest needs, and why:
#   linux-image-amd64 initramfs-tools kmod   a kernel with rdma_rxe, virtio and 9p modules, and modprobe
#   iproute2                                 ip, and rdma (to create rxe0), ss
#   rdma-core ibverbs-providers              libibverbs and librxe (the user-space half of rdma_rxe)
#   ibverbs-utils perftest                   ibv_rc_pingpong, ibv_ud_pingpong, ibv_devinfo; ib_{write,read,send,atomic}_{bw,lat}
#   rdmacm-utils                             rping, ucmatose, udaddy (librdmacm's own test programs)
#   procps util-linux tcpdump                ps, dmesg; a capture from inside a guest when debugging
PACKAGES=(linux-image-amd64 initramfs-tools kmod iproute2 rdma-core ibverbs-providers ibverbs-utils perftest
  rdmacm-utils procps util-linux tcpdump)

die() { echo "build.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap)"
for tool in debootstrap:debootstrap mkfs.ext4:e2fsprogs; do
  command -v "${tool%%:*}" > /dev/null || die "${tool%%:*} missing (apt-get install ${tool#*:})"
done

default_mirror() { # the plain Debian archive apt already uses here (not -security), else deb.debian.org
  local m
  m=$( { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
         grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}'; } \
       | grep -E '/debian/?$' | head -n 1)
  echo "${m:-http://deb.debian.org/debian}"
}
MIRROR=${JROCE_LAB_MIRROR:-$(default_mirror)}

mkdir -p "$CACHE"
cd "$CACHE"

# 1. The root filesystem. Built beside its final place and renamed at the end, so an interrupted run
#    leaves no half-made root behind that a later run would take for finished.
#    A cached root that lacks packages added to the list since gets them with apt-get inside it.
if [ -e root/.jroce-lab-root ]; then
  echo "lab: root filesystem cached in $CACHE/root"
  missing=()
  for p in "${PACKAGES[@]}"; do
    chroot root dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "lab: adding ${missing[*]} to the cached root"
    cp -f /etc/resolv.conf root/etc/resolv.conf
    chroot root apt-get update -qq > "$CACHE/apt.log" 2>&1 \
      && DEBIAN_FRONTEND=noninteractive chroot root apt-get install -y -qq --no-install-recommends "${missing[@]}" >> "$CACHE/apt.log" 2>&1 \
      || { tail -n 20 "$CACHE/apt.log" >&2; die "apt-get in the cached root failed (log $CACHE/apt.log)"; }
    chroot root apt-get clean
  fi
else
  echo "lab: debootstrap $SUITE from $MIRROR into $CACHE/root (a few minutes)"
  rm -rf root.partial
  if ! debootstrap --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" \
      "$SUITE" root.partial "$MIRROR" > debootstrap.log 2>&1; then
    tail -n 20 debootstrap.log >&2
    die "debootstrap failed (log $CACHE/debootstrap.log)"
  fi
  rm -f root.partial/var/cache/apt/archives/*.deb
  touch root.partial/.jroce-lab-root
  rm -rf root
  mv root.partial root
fi

# 2. The lab's files inside the guest.
install -m 0755 "$LAB/guest-init" root/sbin/jroce-lab-init
echo "/dev/vda / ext4 rw,noatime 0 1" > root/etc/fstab
echo rxe-guest > root/etc/hostname

# 3. Kernel and initramfs come out of the guest's own /boot (the newest, should there be several).
kernel=$(ls root/boot/vmlinuz-* | sort -V | tail -n 1)
initrd=$(ls root/boot/initrd.img-* | sort -V | tail -n 1)
cp -f "$kernel" vmlinuz
cp -f "$initrd" initrd.img
basename "$kernel" | sed 's/^vmlinuz-//' > kernel-release

# 4. The disk image, remade when what goes into it changed.
want=$(cat "$LAB/guest-init" "$LAB/build.sh" | sha256sum | cut -c1-16)
if [ -e disk.img ] && [ "$(cat disk.img.id 2> /dev/null)" = "$want" ]; then
  echo "lab: disk image up to date"
else
  echo "lab: making $CACHE/disk.img ($DISK_SIZE, ext4)"
  rm -f disk.img.partial
  truncate -s "$DISK_SIZE" disk.img.partial
  mkfs.ext4 -q -F -L jroce-lab -d root disk.img.partial
  mv disk.img.partial disk.img
  echo "$want" > disk.img.id
fi
echo "lab: ready in $CACHE (kernel $(cat kernel-release))"
