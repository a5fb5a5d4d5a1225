#!/usr/bin/env bash
# Interleaved A/B of builds: one `sluice-bench` run per argument, in the
# order given, each summarised on one line of OUT. This is the loop behind
# BENCHMARKS.md's A/B method ("The A/B method": runs in a balanced order
# such as "A B B A").
#
#   cargo build --release -p sluice -p sluice-bench
#   cp target/release/sluice /tmp/sluice-A     # and so on for each build
#   bench/perf/ab.sh OUT "--only end-to-end" A=/tmp/sluice-A B=/tmp/sluice-B B=/tmp/sluice-B A=/tmp/sluice-A
#
# ARGS is passed to sluice-bench as it is (for example "--only ingest
# --only end-to-end", or "--backend postgres --only end-to-end"). A figure
# the run does not produce prints as "-"; `fails` counts failed checks.
set -euo pipefail
out=$1; args=$2; shift 2
bench=${SLUICE_BENCH:-target/release/sluice-bench}
figure() { # the value column of the first row named exactly $2
  awk -F'|' -v name="$2" '{ n = $3; gsub(/^ +| +$/, "", n); v = $4; gsub(/[ ,]/, "", v) }
    n == name { print v; found = 1; exit } END { if (!found) print "-" }' <<<"$1"
}
for spec in "$@"; do
  label=${spec%%=*}; bin=${spec#*=}
  # shellcheck disable=SC2086 # ARGS is a list of options
  r=$("$bench" $args --sluice "$bin" 2>&1 || true)
  echo "$label $(date -u +%H:%M:%S)" \
    "batch=$(figure "$r" 'batch (100 ev/req, 64 conns): events/s')" \
    "batch_cpu=$(figure "$r" 'CPU seconds per million events, ingest batch')" \
    "track=$(figure "$r" 'track (1 ev/req, 64 conns): events/s')" \
    "track_cpu=$(figure "$r" 'CPU seconds per million events, ingest track')" \
    "hooks=$(figure "$r" 'webhooks/s draining a backlog (1 URL, signed)')" \
    "e2e_cpu=$(figure "$r" 'CPU seconds per million events, ingest + delivery')" \
    "p99=$(figure "$r" 'ingest 200 -> sink at 2000 ev/s: p99')" \
    "disk_at_rest=$(figure "$r" 'disk per stored event, after delivery, store at rest')" \
    "rss=$(figure "$r" 'peak RSS of sluice, any scenario (VmHWM)')" \
    "fails=$(grep -c '^ *FAIL' <<<"$r" || true)" >> "$out"
done
