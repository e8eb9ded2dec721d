#!/usr/bin/env bash
# trixie-chroot.sh setup|run CMD|shell|teardown - Slurm 24.11 (Debian 13) on a Debian 12
# host, in a debootstrap chroot with Debian's own packages, to capture 24.11 fixtures or
# try a script against 24.11 without a Debian 13 machine. As root.
#
#   bash scripts/slurm-lab/trixie-chroot.sh setup      # debootstrap (~1 min), mounts, copies the kit
#   bash scripts/slurm-lab/stop-cluster.sh             # the host's cluster uses the same ports
#   bash scripts/slurm-lab/trixie-chroot.sh run 'bash start-cluster.sh && bash capture-fixtures.sh /opt/lab/fixtures'
#   cp -r /srv/trixie/opt/lab/fixtures/24.11 tests/fixtures/slurm/
#   bash scripts/slurm-lab/trixie-chroot.sh run 'bash stop-cluster.sh'
#   bash scripts/slurm-lab/trixie-chroot.sh teardown   # unmounts (the tree stays for next time)
#
# The chroot shares the host's network and /sys (cgroups: 24.11's slurmd needs them), so
# only one of the two clusters can run at a time. Commands run in /opt/lab, a copy of
# scripts/slurm-lab/ (refreshed by every `run`).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${TRIXIE_ROOT:-/srv/trixie}
[ "$(id -u)" = 0 ] || { echo "trixie-chroot.sh: must run as root" >&2; exit 1; }

mount_all() {
  mountpoint -q "$ROOT/proc" || mount --bind /proc "$ROOT/proc"
  mountpoint -q "$ROOT/sys" || mount --rbind /sys "$ROOT/sys"
  mountpoint -q "$ROOT/dev" || mount --bind /dev "$ROOT/dev"
  mountpoint -q "$ROOT/dev/pts" || mount --bind /dev/pts "$ROOT/dev/pts"
  cp /etc/hosts /etc/resolv.conf "$ROOT/etc/"
  mkdir -p "$ROOT/opt/lab"
  cp "$HERE"/*.sh "$HERE"/*.lua "$ROOT/opt/lab/"
}

case "${1:-}" in
  setup)
    command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
    [ -x "$ROOT/usr/sbin/slurmctld" ] || debootstrap --variant=minbase \
      --include=munge,slurmctld,slurmd,slurm-client trixie "$ROOT" http://deb.debian.org/debian
    mount_all
    chroot "$ROOT" /usr/sbin/slurmctld -V
    ;;
  run)
    shift
    mount_all
    chroot "$ROOT" /bin/bash -c "export PATH=/usr/sbin:/usr/bin:/sbin:/bin; cd /opt/lab && $*"
    ;;
  shell)
    mount_all
    chroot "$ROOT" /bin/bash -c "export PATH=/usr/sbin:/usr/bin:/sbin:/bin; cd /opt/lab && exec bash -i"
    ;;
  teardown)
    for m in dev/pts dev sys proc; do
      if mountpoint -q "$ROOT/$m"; then umount -R "$ROOT/$m" || umount -l "$ROOT/$m"; fi
    done
    ;;
  *)
    sed -n '2,16p' "$0" >&2
    exit 2
    ;;
esac
