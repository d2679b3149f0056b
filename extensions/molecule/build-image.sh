#!/usr/bin/env bash
# Builds the podman image the molecule scenarios boot as GPU nodes, and prints its reference.
#
#   Debian 12 from `debootstrap --variant=minbase`, running systemd as PID 1, with the real
#   containerd, runc, infiniband-diags and dkms. A dummy DKMS package named mlnx-ofed-kernel
#   (resources/dkms/) is built and installed for the one kernel whose headers the image holds.
#   /var/lib/rdma-node-probe/rootfs is a busybox root file system for test containers, and
#   /var/lib/rdma-node-probe/busybox-oci.tar the same as an OCI image archive.
#
# What the image cannot have: a kernel of its own (containers share the machine's) or RDMA
# hardware. /boot/vmlinuz-<kernel> is an EMPTY placeholder so that the DKMS kernel counts as
# installed; the scenarios add the simulated parts (sysfs trees, loaded modules) per host.
#
# The tag is a hash of this script (which holds the package list) and the dummy module's sources:
# an unchanged input reuses the image, a changed one rebuilds it from nothing. Downloaded Debian
# packages are kept in $RDMA_NODE_CACHE/molecule/ (default ~/.cache/rdma-node/molecule/).
#
# Usage: build-image.sh            build when missing, print the reference
#        build-image.sh --ref      print the reference only
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${RDMA_NODE_CACHE:-$HOME/.cache/rdma-node}/molecule
export CONTAINERS_CONF=${CONTAINERS_CONF:-$HERE/containers.conf}
REPO=localhost/rdma-node-molecule
SUITE=bookworm
DKMS_SOURCES=$HERE/resources/dkms/mlnx-ofed-kernel
PROBE_IMAGE=localhost/rdma-node-probe:busybox

PACKAGES=(
  systemd systemd-sysv dbus python3 iproute2 kmod procps
  containerd runc                  # the container runtime the role remediates
  infiniband-diags                 # real ibstat over the simulated /sys/class/infiniband
  dkms gcc make libc6-dev linux-headers-amd64   # a real DKMS build for one kernel
  busybox-static                   # the root file system of test containers
)

log() { printf 'build-image: %s\n' "$*" >&2; }

inputs_hash() {
  {
    cat "$HERE/build-image.sh"
    find "$DKMS_SOURCES" -type f -print0 | sort -z | xargs -0 cat
  } | sha256sum | cut -c1-12
}

IMAGE=$REPO:$(inputs_hash)
if [ "${1:-}" = --ref ]; then
  echo "$IMAGE"
  exit 0
fi

mkdir -p "$CACHE/debs" "$CACHE/apt-archives/partial"
exec 9>"$CACHE/build-image.lock"
flock 9
if podman image exists "$IMAGE"; then
  echo "$IMAGE"
  exit 0
fi

ROOTFS=$(mktemp -d /var/tmp/rdma-node-molecule-rootfs.XXXXXX)
MOUNTED=()
cleanup() {
  local i
  for (( i=${#MOUNTED[@]}-1; i>=0; i-- )); do
    umount "${MOUNTED[$i]}" 2>/dev/null || umount -l "${MOUNTED[$i]}" || true
  done
  # Never delete through a mount that is still there (the package cache is bind-mounted inside).
  if grep -q " $ROOTFS/" /proc/self/mounts; then
    log "left $ROOTFS in place: something is still mounted below it"
  else
    rm -rf "$ROOTFS"
  fi
}
trap cleanup EXIT

mount_in() {  # mount_in TARGET ARGS...: mount below the root file system and remember it
  local target=$ROOTFS/$1
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  MOUNTED+=("$target")
}

in_root() {
  chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    LC_ALL=C.UTF-8 "$@"
}

start=$(date +%s)
log "debootstrap $SUITE (minbase) into $ROOTFS"
debootstrap --variant=minbase --cache-dir="$CACHE/debs" "$SUITE" "$ROOTFS" >&2

mount_in proc -t proc proc
mount_in var/cache/apt/archives --bind "$CACHE/apt-archives"
log "installing ${PACKAGES[*]}"
in_root apt-get update -qq >&2
in_root apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >&2

kernels=("$ROOTFS"/lib/modules/*)
[ ${#kernels[@]} -eq 1 ] || { log "expected the headers of one kernel, found: ${kernels[*]}"; exit 1; }
KERNEL=$(basename "${kernels[0]}")
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$DKMS_SOURCES/dkms.conf")
log "DKMS: mlnx-ofed-kernel/$version for $KERNEL"
cp -a "$DKMS_SOURCES" "$ROOTFS/usr/src/mlnx-ofed-kernel-$version"
in_root dkms add "mlnx-ofed-kernel/$version" >&2
in_root dkms install "mlnx-ofed-kernel/$version" -k "$KERNEL" >&2
# The placeholder that makes the kernel count as installed (see the header).
: > "$ROOTFS/boot/vmlinuz-$KERNEL"
mkdir -p "$ROOTFS/etc/rdma-node-molecule"
echo "$KERNEL" > "$ROOTFS/etc/rdma-node-molecule/dkms-kernel"

log "busybox root file system for test containers"
probe=$ROOTFS/var/lib/rdma-node-probe/rootfs
mkdir -p "$probe/bin" "$probe/proc" "$probe/dev" "$probe/sys" "$probe/tmp" "$probe/etc"
cp "$ROOTFS/bin/busybox" "$probe/bin/busybox"
for applet in sh cat sleep grep; do
  ln -s busybox "$probe/bin/$applet"
done
# The same file system as an image, for containerd to import: `ctr images import` of this archive
# gives localhost/rdma-node-probe:busybox, the hosts' stand-in for an image a node already has.
tar --numeric-owner -C "$probe" -c . | podman import --change 'CMD=["/bin/sh"]' - "$PROBE_IMAGE" >/dev/null
podman save --quiet --format oci-archive -o "$ROOTFS/var/lib/rdma-node-probe/busybox-oci.tar" "$PROBE_IMAGE"
podman rmi "$PROBE_IMAGE" >/dev/null

# A privileged container shares the machine's kernel settings: nothing in it may apply sysctl.d,
# binfmt_misc or module configuration, and no timer should wake up during a test.
in_root systemctl mask systemd-sysctl.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
  proc-sys-fs-binfmt_misc.mount systemd-modules-load.service apt-daily.timer apt-daily-upgrade.timer \
  e2scrub_all.timer dpkg-db-backup.timer >&2

# Each container gets its own machine id; no package lists in the image.
: > "$ROOTFS/etc/machine-id"
for (( i=${#MOUNTED[@]}-1; i>=0; i-- )); do
  umount "${MOUNTED[$i]}"
done
MOUNTED=()
rm -rf "$ROOTFS"/var/lib/apt/lists/*

log "importing $IMAGE"
tar --numeric-owner -C "$ROOTFS" -c . \
  | podman import --change 'CMD=["/sbin/init"]' --change "LABEL=rdma.node.molecule.kernel=$KERNEL" - "$IMAGE" >&2

# Older builds of this image are replaced by this one (only our own repository name).
podman images --format '{{.Repository}}:{{.Tag}}' --filter "reference=$REPO" \
  | grep -v -x -F "$IMAGE" | xargs -r podman rmi >/dev/null 2>&1 || true
log "built $IMAGE in $(( $(date +%s) - start ))s"
echo "$IMAGE"
