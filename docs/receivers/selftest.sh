#!/usr/bin/env bash
# Self-test of the reference webhook receivers: starts each one on a free
# port (PORT=0; the receiver reports the bound address on stderr), POSTs a
# correctly signed body, a wrongly signed one and an unsigned one, and checks
# the status codes and the JSON line each receiver prints. Finally it POSTs a
# body signed over its raw bytes that is not in JSON.stringify form, which
# only the node receiver (it also checks the re-serialized body) refuses.
#
# Needs: node, python3, go, curl, openssl. Usage: bash docs/receivers/selftest.sh
# Last line: "N passed, M failed"; exit status 1 on any failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
secret='selftest-s3cret-ü'
body='{"type":"track","messageId":"selftest-1","event":"Signed Up","properties":{"name":"Zoë 😀","price":1.1,"big":1e+21}}'
good_sig="$(printf '%s' "$body" | openssl dgst -sha1 -hmac "$secret" -r | cut -d' ' -f1)"
# Validly signed over its raw bytes, but not in JSON.stringify form: only a
# receiver that also checks the re-serialized body (node) refuses it.
loose_body='{ "type": "track", "messageId": "selftest-1", "n": 1.0 }'
loose_sig="$(printf '%s' "$loose_body" | openssl dgst -sha1 -hmac "$secret" -r | cut -d' ' -f1)"
bad_sig="$(printf '%s' "$body" | openssl dgst -sha1 -hmac "wrong-$secret" -r | cut -d' ' -f1)"
passed=0
failed=0
pid=""

cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }

# post NAME PORT SIGNATURE EXPECTED_STATUS [BODY] (empty SIGNATURE: no header)
post() {
  local name=$1 port=$2 sig=$3 want_status=$4 data=${5:-$body} status header=()
  [[ -n "$sig" ]] && header=(-H "X-Signature: $sig")
  status="$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 \
    -H 'Content-Type: application/json' "${header[@]}" \
    --data-binary "$data" "http://127.0.0.1:$port/hook")"
  if [[ "$status" == "$want_status" ]]; then ok "$name: status $status"; else fail "$name: status $status, want $want_status"; fi
}

# expect_line NAME N VALID: the Nth stdout line reports VALID and the message.
expect_line() {
  local name=$1 n=$2 valid=$3 line=""
  for _ in $(seq 50); do
    line="$(sed -n "${n}p" "$work/out")"
    [[ -n "$line" ]] && break
    sleep 0.1
  done
  if [[ "$line" =~ \"valid\":\ ?$valid[,}] && "$line" == *'"selftest-1"'* && "$line" == *'"track"'* ]]; then
    ok "$name: printed $line"
  else
    fail "$name: printed '${line}', want valid=$valid with messageId and type"
  fi
}

# run_receiver NAME LOOSE_STATUS COMMAND...
run_receiver() {
  local name=$1 loose_status=$2 port=""
  shift 2
  : >"$work/out"
  : >"$work/err"
  PORT=0 SHARED_SECRET="$secret" "$@" >"$work/out" 2>"$work/err" &
  pid=$!
  for _ in $(seq 100); do
    port="$(grep -o '127\.0\.0\.1:[0-9]*' "$work/err" | head -n1 | cut -d: -f2)"
    [[ -n "$port" ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$port" ]]; then
    fail "$name: did not start: $(cat "$work/err")"
  else
    post "$name signed" "$port" "$good_sig" 200
    expect_line "$name signed" 1 true
    post "$name uppercase hex" "$port" "${good_sig^^}" 200
    expect_line "$name uppercase hex" 2 true
    post "$name wrong signature" "$port" "$bad_sig" 401
    expect_line "$name wrong signature" 3 false
    post "$name unsigned" "$port" "" 401
    expect_line "$name unsigned" 4 false
    post "$name raw-signed body not in JSON.stringify form" "$port" "$loose_sig" "$loose_status" "$loose_body"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  pid=""
}

run_receiver node 401 node "$here/node/receiver.mjs"
run_receiver python 200 python3 "$here/python/receiver.py"
if (cd "$here/go" && go build -o "$work/sluice-receiver" .) 2>"$work/build"; then
  run_receiver go 200 "$work/sluice-receiver"
else
  fail "go: build failed: $(cat "$work/build")"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
