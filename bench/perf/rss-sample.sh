#!/usr/bin/env bash
# Prints, every 0.25 s, the anonymous and file-backed resident memory (kB)
# of every running sluice server (any binary named sluice*, such as the
# copies an A/B run names with --sluice), so that the phase where a scenario's
# peak RSS falls can be read off (BENCHMARKS.md,
# "The A/B method").
#
#   bench/perf/rss-sample.sh > rss.txt &  target/release/sluice-bench --only end-to-end;  kill %1
set -euo pipefail
while true; do
  line=$(date +%s.%N | cut -c1-14)
  for pid in $(pgrep -f 'sluice[^ /]* serve' || true); do
    mem=$(awk '/RssAnon/{a=$2} /RssFile/{f=$2} END{print a "/" f}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$mem" ] && line="$line [$pid]:$mem"
  done
  echo "$line"
  sleep 0.25
done
