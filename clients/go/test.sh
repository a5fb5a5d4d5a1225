#!/usr/bin/env bash
# Checks the Go client library: formatting, vet and the race-enabled tests
# of the library module, then vet and build of the separate bench module
# (whose benchmarks run only through bench.sh).
#
# The end-to-end test runs when SLUICE_BIN names a built sluice binary
# (SLUICE_E2E=1 makes its absence an error); otherwise it is skipped.
set -euo pipefail
cd "$(dirname "$0")"

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt: these files need formatting:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet (library)"
go vet ./...

echo "== go test -race (library)"
go test -race -count=1 ./...

echo "== go vet + go build (bench module)"
(cd bench && go vet ./... && go build ./...)
