#!/usr/bin/env bash
# Prints, every 0.5 s, one line per thread of every running sluice server
# and sluice-bench process: time, pid, tid, thread name, cumulative CPU ticks
# (utime + stime, 100 per second) and, from schedstat, nanoseconds run and
# nanoseconds waited runnable for a core. Differences between two lines of
# a thread (pid, tid) give its cores and its run-queue wait over that stretch
# (BENCHMARKS.md, "The A/B method"; it showed the SQLite writer's wait and
# the load generator's CPU per call). Uses shell builtins only, so that
# sampling takes next to nothing from the cores it measures.
#
#   bench/perf/thread-sample.sh > threads.txt &
#   target/release/sluice-bench --only ingest; kill %1
#   awk -f bench/perf/thread-rates.awk -v from=4.0 -v to=5.5 threads.txt
set -uo pipefail
pids=()
found=0
while true; do
  now=$EPOCHREALTIME
  # Look for new processes every 2 s (pgrep forks; the reads below do not).
  if (( ${now%.*} - found >= 2 )); then
    found=${now%.*}
    mapfile -t pids < <(pgrep -f 'sluice-bench|sluice serve|sluice.* serve' || true)
  fi
  for pid in "${pids[@]}"; do
    for task in /proc/"$pid"/task/*; do
      read -r stat < "$task/stat" 2>/dev/null || continue
      read -r run wait _ < "$task/schedstat" 2>/dev/null || continue
      name=${stat#*(}; name=${name%)*}; name=${name// /_}
      rest=${stat##*) }
      read -r -a f <<< "$rest"
      echo "$now $pid ${task##*/} $name $(( f[11] + f[12] )) $run $wait"
    done
  done
  sleep 0.5
done
