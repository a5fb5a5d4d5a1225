package analytics

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// refusingServer answers every batch with refuse(batch) (0 means 200), and
// records the requests.
func refusingServer(t *testing.T, refuse func(batch []map[string]interface{}) int) *recorder {
	t.Helper()
	var srv *recorder
	srv = newRecorder(t, func(n int, _ http.ResponseWriter) int {
		b := srv.requests()[n].decode(t)
		if status := refuse(b.Batch); status != 0 {
			return status
		}
		return 200
	})
	return srv
}

func hasEvent(batch []map[string]interface{}, event string) bool {
	for _, m := range batch {
		if m["event"] == event {
			return true
		}
	}
	return false
}

// One message the server refuses (400) must not sink the other messages of
// its batch: the batch is sent again in halves until the refused message
// fails alone.
func TestBatchRefusedWith400IsSplitSoOnlyTheRefusedMessageFails(t *testing.T) {
	srv := refusingServer(t, func(batch []map[string]interface{}) int {
		if hasEvent(batch, "poison") {
			return 400
		}
		return 0
	})
	c, logs := newTestClient(t, srv.URL)
	c.Size = 1000 // one batch, sent by Close
	var f failures
	var refused []json.RawMessage
	c.OnFailure = func(err error, msgs []json.RawMessage) {
		f.record(err, msgs)
		refused = append(refused, msgs...) // one upload goroutine here
	}
	for i := range 100 {
		event := fmt.Sprint("ok-", i)
		if i == 37 {
			event = "poison"
		}
		if err := c.Track(&Track{UserId: "u", Event: event}); err != nil {
			t.Fatal(err)
		}
	}
	err := c.Close()
	if err == nil || !strings.Contains(err.Error(), "1 undelivered") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("Close = %v, want an error for the one refused message", err)
	}
	delivered := srv.delivered(t)
	if len(delivered) != 99 || hasEvent(delivered, "poison") {
		t.Fatalf("delivered %d messages, want the 99 good ones", len(delivered))
	}
	errs, count := f.snapshot()
	if len(errs) != 1 || count != 1 || !strings.Contains(string(refused[0]), `"event":"poison"`) {
		t.Fatalf("OnFailure got %v for %d messages (%s), want the poison message alone", errs, count, refused)
	}
	if s := c.Stats(); s.Sent != 99 || s.Failed != 1 || s.Dropped != 1 || s.QueueDepth != 0 {
		t.Fatalf("stats: %+v", s)
	}
	if n := strings.Count(logs.String(), "lost 1 message(s), not delivered"); n != 1 {
		t.Fatalf("want one failure line for the refused message:\n%s", logs.String())
	}
	// Halving finds one message among 100 in about 2 × log2(100) requests.
	if n := len(srv.requests()); n > 20 {
		t.Fatalf("%d requests to isolate one message among 100", n)
	}
}

// 413 says the batch is too large for the server: halves go through.
func TestBatchRefusedWith413IsSentInHalves(t *testing.T) {
	srv := refusingServer(t, func(batch []map[string]interface{}) int {
		if len(batch) > 10 {
			return 413
		}
		return 0
	})
	c, _ := newTestClient(t, srv.URL)
	c.Size = 50
	for range 50 {
		if err := c.Identify(&Identify{UserId: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 50 {
		t.Fatalf("delivered %d, want 50", n)
	}
	if s := c.Stats(); s.Sent != 50 || s.Dropped != 0 {
		t.Fatalf("stats: %+v", s)
	}
}

// A bad write key refuses every message alike: no split, one request.
func TestBatchRefusedForItsWriteKeyIsNotSplit(t *testing.T) {
	for _, status := range []int{401, 403} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := newRecorder(t, func(int, http.ResponseWriter) int { return status })
			c, _ := newTestClient(t, srv.URL)
			c.Size = 100 // one batch, sent by Close
			var f failures
			c.OnFailure = f.record
			for range 10 {
				if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Close(); err == nil || !strings.Contains(err.Error(), "10 undelivered") {
				t.Fatalf("Close = %v", err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			if errs, count := f.snapshot(); len(errs) != 1 || count != 10 {
				t.Fatalf("OnFailure got %v for %d messages", errs, count)
			}
		})
	}
}

// Halves of a refused batch are retried like any batch when the server is
// unavailable in between.
func TestHalvesOfARefusedBatchAreRetried(t *testing.T) {
	var srv *recorder
	srv = newRecorder(t, func(n int, _ http.ResponseWriter) int {
		b := srv.requests()[n].decode(t)
		switch {
		case n == 1:
			return 503 // the first half's first attempt
		case hasEvent(b.Batch, "poison"):
			return 400
		}
		return 200
	})
	c, _ := newTestClient(t, srv.URL)
	c.Size = 100 // one batch, sent by Close
	var f failures
	c.OnFailure = f.record
	for _, e := range []string{"a", "b", "c", "poison"} {
		if err := c.Track(&Track{UserId: "u", Event: e}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "1 undelivered") {
		t.Fatalf("Close = %v", err)
	}
	if n := len(srv.delivered(t)); n != 3 {
		t.Fatalf("delivered %d, want 3", n)
	}
}
