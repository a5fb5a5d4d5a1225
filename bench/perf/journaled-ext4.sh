#!/usr/bin/env bash
# A journaled ext4 filesystem on a loop device, for benchmarking the SQLite
# store on the filesystem most Linux servers run (this machine's root is
# ext4 without a journal, where fsync and fdatasync cost the same). Needs
# root. The suite puts its data dirs under TMPDIR:
#
#   sudo bench/perf/journaled-ext4.sh start        # prints the mount point
#   TMPDIR=/mnt/sluice-ext4j target/release/sluice-bench --only ingest
#   sudo bench/perf/journaled-ext4.sh stop
#
# The image is a sparse 3 GiB file beside the mount point's name in /tmp.
set -euo pipefail
mnt=${SLUICE_EXT4J_MOUNT:-/mnt/sluice-ext4j}
img=/tmp/sluice-ext4j.img
case "${1:-}" in
  start)
    if ! mountpoint -q "$mnt"; then
      truncate -s 3G "$img"
      mkfs.ext4 -q -F "$img"          # the default: has_journal, ordered data
      mkdir -p "$mnt"
      mount -o loop "$img" "$mnt"
      chmod 1777 "$mnt"
    fi
    echo "$mnt"
    ;;
  stop)
    if mountpoint -q "$mnt"; then umount "$mnt"; fi
    rm -f "$img"
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
