#!/usr/bin/env bash
# Prints, every 0.5 s, the cumulative CPU ticks (utime + stime, 100 per
# second) of every running sluice-bench and sluice server process, so that
# per-phase core use of the server and of the load generator can be read
# off side by side (BENCHMARKS.md, "The A/B method").
#
#   bench/perf/cpu-sample.sh > cpu.txt &  target/release/sluice-bench --only ingest;  kill %1
set -euo pipefail
while true; do
  line=$(date +%s.%N | cut -c1-14)
  for pid in $(pgrep -f 'sluice-bench|sluice serve' || true); do
    ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || true)
    name=$(cat "/proc/$pid/comm" 2>/dev/null || true)
    [ -n "$ticks" ] && line="$line $name[$pid]:$ticks"
  done
  echo "$line"
  sleep 0.5
done
