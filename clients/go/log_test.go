package analytics

import (
	"errors"
	"log"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestDebugEnvTurnsOnLogging(t *testing.T) {
	t.Setenv("DEBUG", "analytics")
	srv := newRecorder(t, nil)
	c, logs := newTestClient(t, srv.URL)
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{"buffered message (1/20", "closing: flushing 1 queued messages", "delivered batch of 1 messages"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestVerboseTurnsOnLogging(t *testing.T) {
	t.Setenv("DEBUG", "")
	srv := newRecorder(t, func(n int, _ http.ResponseWriter) int {
		if n == 0 {
			return 500
		}
		return 200
	})
	c, logs := newTestClient(t, srv.URL)
	c.Verbose = true
	c.Size = 1
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Track(&Track{UserId: "u"}); err == nil {
		t.Fatal("a track without an event was accepted")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{"FlushAt reached", "attempt 1 failed, retrying", "in 2 attempt(s)",
		"dropped track message (no messageId): You must pass 'event'."} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestLossesAreLoggedWithoutVerboseOneLinePerKindPerPeriod(t *testing.T) {
	t.Setenv("DEBUG", "")
	ok := newRecorder(t, nil)
	c, logs := newTestClient(t, ok.URL)
	var offset atomic.Int64
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.tune.now = func() time.Time { return base.Add(time.Duration(offset.Load())) }
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	// v2-style code ignores the errors calls return: a systematic refusal
	// must still leave a trace, without a line per call.
	for range 5 {
		if err := c.Track(&Track{UserId: "u"}); err == nil {
			t.Fatal("a track without an event was accepted")
		}
	}
	if err := c.Track(&Track{UserId: "u", Event: "e", Message: Message{MessageId: " x"}}); err == nil {
		t.Fatal("a messageId starting with a space was accepted")
	}
	if out := logs.String(); out != "lost 1 message(s), refused as invalid: You must pass 'event'. (more of this kind are summarised every 10s)\n" {
		t.Fatalf("after 6 refused calls within the period the log holds:\n%s", out)
	}
	// Once the period has passed, the five since the first line are
	// summarised in one line: by the client's loop, which looks whenever
	// it wakes, or at the latest by Close.
	offset.Store(int64(11 * time.Second))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := "lost 5 more message(s), refused as invalid, since the last report; last error: analytics: 'messageId'"
	if out := logs.String(); strings.Count(out, "\n") != 2 || !strings.Contains(out, want) {
		t.Fatalf("want a summary of 5 after the period, got:\n%s", out)
	}
	if err := c.Track(&Track{UserId: "u", Event: "late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close = %v", err)
	}
	if out := logs.String(); strings.Count(out, "\n") != 3 ||
		!strings.Contains(out, "lost 1 message(s), refused because the client was closed") {
		t.Fatalf("want a line for the call after Close, got:\n%s", out)
	}
	if s := c.Stats(); s.Refused != 7 || s.Dropped != 7 || s.Sent != 1 {
		t.Fatalf("stats: %+v", s)
	}

	bad := newRecorder(t, func(int, http.ResponseWriter) int { return 400 })
	c, logs = newTestClient(t, bad.URL)
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err == nil {
		t.Fatal("Close returned nil after its flush failed")
	}
	if out := logs.String(); !strings.Contains(out, "lost 1 message(s), not delivered") || strings.Count(out, "\n") != 1 {
		t.Fatalf("want exactly one failure line, got:\n%s", out)
	}
}

func TestLogsNeverContainTheWriteKey(t *testing.T) {
	t.Setenv("DEBUG", "analytics")
	srv := newRecorder(t, func(int, http.ResponseWriter) int { return 503 })
	c, logs := newTestClient(t, srv.URL)
	c.tune.maxAttempts = 2
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err == nil || strings.Contains(err.Error(), testKey) {
		t.Fatalf("Close = %v, want an error without the write key", err)
	}
	if out := logs.String(); out == "" || strings.Contains(out, testKey) {
		t.Fatalf("log is empty or contains the write key:\n%s", out)
	}
}

func TestDebugValues(t *testing.T) {
	for v, want := range map[string]bool{
		"analytics": true, "*": true, "http,analytics": true, "foo analytics": true, "analytics:*": true,
		"": false, "analytics-go": false, "http": false, "ANALYTICS": false,
	} {
		if got := debugEnabled(v); got != want {
			t.Errorf("debugEnabled(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestNilLoggerFallsBackToStandardError(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Logger = nil
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var _ *log.Logger = c.core().cfg.logger
	if c.core().cfg.logger == nil {
		t.Fatal("no logger")
	}
}
