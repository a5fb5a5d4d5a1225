package analytics_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	analytics "github.com/sluice-dev/sluice/clients/go"
)

// TestEndToEndOneRefusedMessageCostsOneMoreRequest sends a gzip-compressed
// batch in which a real sluice server refuses one message (properties
// nested deeper than it takes, which the library does not check). The
// server names the item in its 400 answer, so the library drops that
// message alone and sends the others again once: they are all stored, and
// each was retried once.
func TestEndToEndOneRefusedMessageCostsOneMoreRequest(t *testing.T) {
	bin := os.Getenv("SLUICE_BIN")
	if bin == "" {
		if os.Getenv("SLUICE_E2E") == "1" {
			t.Fatal("SLUICE_E2E=1 but SLUICE_BIN is empty: set it to the built sluice binary")
		}
		t.Skip("SLUICE_BIN is not set; skipping the end-to-end test")
	}
	srv := startSluice(t, bin)
	var source struct {
		ID       string `json:"id"`
		WriteKey string `json:"write_key"`
	}
	srv.admin(t, "POST", "/api/v1/sources", map[string]interface{}{"name": "go-e2e-refused"}, http.StatusCreated, &source)

	client := analytics.New(source.WriteKey)
	client.Endpoint = srv.base
	client.Size = 100 // one batch, sent by Close
	client.Gzip = true
	client.Logger = log.New(io.Discard, "", 0)
	var mu sync.Mutex
	var refused []json.RawMessage
	client.OnFailure = func(_ error, msgs []json.RawMessage) { mu.Lock(); refused = append(refused, msgs...); mu.Unlock() }

	deep := map[string]interface{}{"leaf": true}
	for range 130 {
		deep = map[string]interface{}{"n": deep}
	}
	for i := range 20 {
		props := map[string]interface{}{"i": i}
		if i == 7 {
			props = deep
		}
		if err := client.Track(&analytics.Track{UserId: "e2e-user", Event: fmt.Sprint("e", i), Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Close(); err == nil || !strings.Contains(err.Error(), "1 undelivered") {
		t.Fatalf("Close = %v, want an error for the one refused message", err)
	}
	mu.Lock()
	if len(refused) != 1 || !strings.Contains(string(refused[0]), `"event":"e7"`) {
		t.Fatalf("OnFailure got %d messages, want e7 alone", len(refused))
	}
	mu.Unlock()
	// Retried counts each resent message once: 19 means one resend of the
	// others, where a halving search would have resent many more.
	if s := client.Stats(); s.Sent != 19 || s.Failed != 1 || s.Retried != 19 {
		t.Fatalf("stats: %+v, want 19 sent, 1 failed, 19 retried", s)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		var events struct {
			Data []json.RawMessage `json:"data"`
		}
		srv.admin(t, "GET", "/api/v1/sources/"+source.ID+"/events?limit=50", nil, http.StatusOK, &events)
		if len(events.Data) == 19 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events stored after 10s, want 19", len(events.Data))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
