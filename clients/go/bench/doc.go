// Package bench compares the Sluice Go client with segmentio/analytics-go
// v3. It lives in its own module so that the library does not depend on
// analytics-go v3; the benchmarks are in bench_test.go. Run them with
// ../bench.sh.
package bench
