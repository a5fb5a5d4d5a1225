#!/usr/bin/env bash
# Runs the benchmarks that compare this library with segmentio/analytics-go
# v3 (module ./bench). Extra arguments go to go test, e.g.
#   clients/go/bench.sh -benchtime 2s -count 3
set -euo pipefail
cd "$(dirname "$0")/bench"
go version
grep -m1 'model name' /proc/cpuinfo 2>/dev/null || true
exec go test -run '^$' -bench . -benchmem "$@" ./...
