package analytics

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestRefusedCallsAreCountedReportedAndLoggedWhenVerbose(t *testing.T) {
	t.Setenv("DEBUG", "")
	srv := newRecorder(t, nil)
	c, logs := newTestClient(t, srv.URL)
	c.Verbose = true
	var reports []json.RawMessage
	var errs []error
	c.OnFailure = func(err error, msgs []json.RawMessage) { // called from the caller's goroutine here
		errs = append(errs, err)
		reports = append(reports, msgs...)
	}
	big := padded(t, maxMessageBytes+1)
	big.MessageId = ""
	if err := c.Track(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized call = %v", err)
	}
	if err := c.Track(&Track{UserId: "u"}); err == nil {
		t.Fatal("a track without an event was accepted")
	}
	if err := c.Track(&Track{UserId: "u", Event: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Track(&Track{UserId: "u", Event: "late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close = %v", err)
	}

	if len(errs) != 3 || !errors.Is(errs[0], ErrTooLarge) || errs[1] != errMissingEvent || !errors.Is(errs[2], ErrClosed) {
		t.Fatalf("OnFailure errors: %v", errs)
	}
	if len(reports) != 3 || !strings.Contains(string(reports[0]), `"messageId":"`+big.MessageId+`"`) ||
		!strings.Contains(string(reports[2]), `"event":"late"`) {
		t.Fatalf("OnFailure messages: %s", reports)
	}
	out := logs.String()
	for _, want := range []string{"dropped track message " + big.MessageId + ": analytics: message too large",
		"You must pass 'event'.", "client is closed"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if s := c.Stats(); s.Calls != 4 || s.Sent != 1 || s.Dropped != 3 || s.Failed != 0 || s.QueueDepth != 0 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestStatsCountRetriedAndFailedBatches(t *testing.T) {
	srv := newRecorder(t, func(n int, _ http.ResponseWriter) int {
		if n < 3 {
			return 503 // the first batch: three failed attempts, then given up
		}
		return 400 // the second batch: a final status
	})
	c, _ := newTestClient(t, srv.URL)
	c.tune.maxAttempts = 3
	c.tune.maxUploads = 1
	c.Size = 2
	var f failures
	c.OnFailure = f.record
	for range 2 {
		if err := c.Page(&Page{UserId: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the first batch to be given up", func() bool { return c.Stats().Failed == 2 })
	if err := c.Page(&Page{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "1 undelivered") {
		t.Fatalf("Close = %v, want an error for the message its flush lost", err)
	}
	want := Stats{Calls: 3, Sent: 0, Retried: 4, Dropped: 3, Failed: 3, QueueDepth: 0}
	if s := c.Stats(); s != want {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	if _, count := f.snapshot(); count != 3 {
		t.Fatalf("OnFailure reported %d messages, want 3", count)
	}
}

func TestStatsOfAnUnusedClientAreZero(t *testing.T) {
	if s := New(testKey).Stats(); s != (Stats{}) {
		t.Fatalf("stats %+v", s)
	}
}
