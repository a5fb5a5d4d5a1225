package analytics_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	analytics "github.com/sluice-dev/sluice/clients/go"
)

// TestEndToEndWithSluiceServer drives a real sluice process: it creates a
// source and a webhook destination through the admin API, sends the five
// calls with this library, then checks the stored events and the signed
// webhook deliveries. It runs when SLUICE_BIN names the server binary; it is
// skipped otherwise, unless SLUICE_E2E=1 demands it.
func TestEndToEndWithSluiceServer(t *testing.T) {
	bin := os.Getenv("SLUICE_BIN")
	if bin == "" {
		if os.Getenv("SLUICE_E2E") == "1" {
			t.Fatal("SLUICE_E2E=1 but SLUICE_BIN is empty: set it to the built sluice binary")
		}
		t.Skip("SLUICE_BIN is not set; skipping the end-to-end test")
	}

	srv := startSluice(t, bin)
	hook := newReceiver(t)
	const secret = "e2e-shared-secret"

	var source struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Enabled  bool   `json:"enabled"`
		WriteKey string `json:"write_key"`
	}
	srv.admin(t, "POST", "/api/v1/sources", map[string]interface{}{"name": "go-e2e"}, http.StatusCreated, &source)
	if !strings.HasPrefix(source.ID, "src_") || source.WriteKey == "" || !source.Enabled {
		t.Fatalf("created source %+v", source)
	}
	var dest struct {
		ID string `json:"id"`
	}
	srv.admin(t, "POST", "/api/v1/destinations", map[string]interface{}{
		"name": "hook", "type": "Webhooks", "enabled": true, "source_ids": []string{source.ID},
		"settings": map[string]interface{}{
			"urls":         []interface{}{map[string]interface{}{"url": hook.URL, "headers": map[string]string{"X-Test": "1"}}},
			"sharedSecret": secret,
		},
	}, http.StatusCreated, &dest)
	if !strings.HasPrefix(dest.ID, "dst_") {
		t.Fatalf("created destination %+v", dest)
	}

	// The five calls, through the library.
	client := analytics.New(source.WriteKey)
	client.Endpoint = srv.base
	client.Logger = log.New(testWriter{t}, "analytics: ", 0)
	t.Cleanup(func() { _ = client.Close() }) // a no-op after the Close below
	var failed []error
	var mu sync.Mutex
	client.OnFailure = func(err error, _ []json.RawMessage) { mu.Lock(); failed = append(failed, err); mu.Unlock() }
	identify := &analytics.Identify{UserId: "e2e-user", Traits: map[string]interface{}{"plan": "premium"}}
	track := &analytics.Track{UserId: "e2e-user", Event: "Purchased Item", Properties: map[string]interface{}{"revenue": 39.95},
		Integrations: map[string]interface{}{"All": false, "Webhooks": true}}
	page := &analytics.Page{UserId: "e2e-user", Name: "Pricing", Traits: map[string]interface{}{"path": "/pricing"}}
	group := &analytics.Group{UserId: "e2e-user", GroupId: "g-42", Traits: map[string]interface{}{"name": "Initech"}}
	alias := &analytics.Alias{UserId: "e2e-user", PreviousId: "e2e-anon"}
	for _, err := range []error{client.Identify(identify), client.Track(track), client.Page(page), client.Group(group), client.Alias(alias)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(failed) > 0 {
		t.Fatalf("the server refused the batch: %v", failed)
	}
	mu.Unlock()
	sent := map[string]string{ // messageId → type
		identify.MessageId: "identify", track.MessageId: "track", page.MessageId: "page",
		group.MessageId: "group", alias.MessageId: "alias",
	}

	// The stored events.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var events struct {
			Data []struct {
				MessageID string                 `json:"message_id"`
				Type      string                 `json:"type"`
				Event     map[string]interface{} `json:"event"`
			} `json:"data"`
		}
		srv.admin(t, "GET", "/api/v1/sources/"+source.ID+"/events?limit=50", nil, http.StatusOK, &events)
		stored := map[string]string{}
		for _, e := range events.Data {
			stored[e.MessageID] = e.Type
		}
		missing := 0
		for id, typ := range sent {
			got, ok := stored[id]
			if !ok {
				missing++
			} else if got != typ {
				t.Fatalf("event %s stored as %q, sent as %q", id, got, typ)
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 5 events not stored after 10s; stored: %v", missing, stored)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The webhook deliveries.
	deliveries := hook.waitFor(t, 5, 10*time.Second)
	if len(deliveries) != 5 {
		t.Fatalf("receiver got %d POSTs, want 5", len(deliveries))
	}
	seen := map[string]bool{}
	for _, d := range deliveries {
		mac := hmac.New(sha1.New, []byte(secret))
		mac.Write(d.body)
		if want := hex.EncodeToString(mac.Sum(nil)); d.header.Get("X-Signature") != want {
			t.Errorf("X-Signature %q, want %q for body %s", d.header.Get("X-Signature"), want, d.body)
		}
		if ua := d.header.Get("User-Agent"); ua != "Sluice/1.0" {
			t.Errorf("User-Agent %q", ua)
		}
		if x := d.header.Get("X-Test"); x != "1" {
			t.Errorf("X-Test %q", x)
		}
		var body map[string]interface{}
		if err := json.Unmarshal(d.body, &body); err != nil {
			t.Fatalf("webhook body is not JSON: %v: %s", err, d.body)
		}
		typ, _ := body["type"].(string)
		seen[typ] = true
		switch typ {
		case "alias":
			if body["Previous ID"] != "e2e-anon" || body["User ID"] != "e2e-user" {
				t.Errorf("alias body lacks Previous ID / User ID: %s", d.body)
			}
			if _, ok := body["userId"]; ok {
				t.Errorf("alias body has userId: %s", d.body)
			}
		case "identify", "track", "page", "group":
			if body["userId"] != "e2e-user" {
				t.Errorf("%s body userId: %s", typ, d.body)
			}
		default:
			t.Errorf("unexpected type %q: %s", typ, d.body)
		}
	}
	for _, typ := range []string{"identify", "track", "page", "group", "alias"} {
		if !seen[typ] {
			t.Errorf("no %s delivered", typ)
		}
	}
}
