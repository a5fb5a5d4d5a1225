package analytics

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestJSONMatchesV2 pins every message type's JSON keys and their order,
// as analytics-go v2 produces them.
func TestJSONMatchesV2(t *testing.T) {
	ctx := map[string]interface{}{"ip": "1.2.3.4"}
	integ := map[string]interface{}{"All": false}
	props := map[string]interface{}{"k": "v"}
	msg := Message{Type: "t", MessageId: "m", Timestamp: "ts", SentAt: "s"}
	cases := []struct {
		v    interface{}
		want string
	}{
		{&Identify{Context: ctx, Integrations: integ, Traits: props, AnonymousId: "a", UserId: "u", Message: msg},
			`{"context":{"ip":"1.2.3.4"},"integrations":{"All":false},"traits":{"k":"v"},"anonymousId":"a","userId":"u","type":"t","messageId":"m","timestamp":"ts","sentAt":"s"}`},
		{&Group{Context: ctx, Integrations: integ, Traits: props, AnonymousId: "a", UserId: "u", GroupId: "g", Message: msg},
			`{"context":{"ip":"1.2.3.4"},"integrations":{"All":false},"traits":{"k":"v"},"anonymousId":"a","userId":"u","groupId":"g","type":"t","messageId":"m","timestamp":"ts","sentAt":"s"}`},
		{&Track{Context: ctx, Integrations: integ, Properties: props, AnonymousId: "a", UserId: "u", Event: "e", Message: msg},
			`{"context":{"ip":"1.2.3.4"},"integrations":{"All":false},"properties":{"k":"v"},"anonymousId":"a","userId":"u","event":"e","type":"t","messageId":"m","timestamp":"ts","sentAt":"s"}`},
		{&Page{Context: ctx, Integrations: integ, Traits: props, AnonymousId: "a", UserId: "u", Category: "c", Name: "n", Message: msg},
			`{"context":{"ip":"1.2.3.4"},"integrations":{"All":false},"properties":{"k":"v"},"anonymousId":"a","userId":"u","category":"c","name":"n","type":"t","messageId":"m","timestamp":"ts","sentAt":"s"}`},
		{&Alias{PreviousId: "p", UserId: "u", Message: msg},
			`{"previousId":"p","userId":"u","type":"t","messageId":"m","timestamp":"ts","sentAt":"s"}`},
		{&Batch{Context: ctx, Messages: []interface{}{1}, Message: msg},
			`{"context":{"ip":"1.2.3.4"},"batch":[1],"type":"t","messageId":"m","timestamp":"ts","sentAt":"s"}`},
		// Empty values: omitempty everywhere except event, groupId, previousId,
		// userId of alias, and batch.
		{&Identify{}, `{}`},
		{&Track{}, `{"event":""}`},
		{&Group{}, `{"groupId":""}`},
		{&Page{}, `{}`},
		{&Alias{}, `{"previousId":"","userId":""}`},
		{&Batch{}, `{"batch":null}`},
	}
	for _, tc := range cases {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%T:\n got %s\nwant %s", tc.v, got, tc.want)
		}
	}
}

func TestMessageIdAndTimestampAreFilledOnlyWhenEmpty(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)

	fresh := &Track{UserId: "u", Event: "fresh"}
	kept := &Track{UserId: "u", Event: "kept", Message: Message{
		MessageId: "caller-id", Timestamp: "2009-11-10T23:00:00+0000"}}
	if err := c.Track(fresh); err != nil {
		t.Fatal(err)
	}
	if err := c.Track(kept); err != nil {
		t.Fatal(err)
	}
	if fresh.Type != "track" || kept.Type != "track" {
		t.Fatalf("type not set: %q %q", fresh.Type, kept.Type)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(fresh.MessageId) {
		t.Fatalf("messageId %q is not a UUID v4", fresh.MessageId)
	}
	if _, err := time.Parse(time.RFC3339Nano, fresh.Timestamp); err != nil {
		t.Fatalf("timestamp %q: %v", fresh.Timestamp, err)
	}
	if kept.MessageId != "caller-id" || kept.Timestamp != "2009-11-10T23:00:00+0000" {
		t.Fatalf("caller's values replaced: %+v", kept.Message)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := srv.delivered(t)
	if len(got) != 2 || got[0]["messageId"] != fresh.MessageId || got[1]["messageId"] != "caller-id" ||
		got[1]["timestamp"] != "2009-11-10T23:00:00+0000" {
		t.Fatalf("delivered %v", got)
	}
}

func TestNewUUIDIsRandomVersion4(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		u := newUUID()
		if !re.MatchString(u) {
			t.Fatalf("%q is not a UUID v4", u)
		}
		if seen[u] {
			t.Fatalf("duplicate %q", u)
		}
		seen[u] = true
	}
}

func TestFormatTimeMatchesTheLayout(t *testing.T) {
	times := []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-5, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 23, 59, 59, 1e6-1, time.FixedZone("x", -7*3600)), time.Now(),
	}
	for i := range 1000 {
		times = append(times, time.Unix(int64(i)*7919*86413, int64(i)*999331).In(time.FixedZone("y", 3600*(i%25-12))))
	}
	for _, at := range times {
		if got, want := formatTime(at), at.UTC().Format(timeLayout); got != want {
			t.Fatalf("formatTime(%v) = %s, want %s", at, got, want)
		}
	}
}

func TestTimestampsAreUTCWithMilliseconds(t *testing.T) {
	at := time.Date(2024, 5, 1, 14, 30, 0, 123456789, time.FixedZone("x", 2*3600))
	if got := formatTime(at); got != "2024-05-01T12:30:00.123Z" {
		t.Fatalf("got %q", got)
	}
}

func TestContextAndIntegrationsPassThrough(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	ctx := map[string]interface{}{"ip": "203.0.113.7", "app": map[string]interface{}{"name": "shop"}}
	integ := map[string]interface{}{"All": false, "Webhooks": true}
	if err := c.Page(&Page{UserId: "u", Name: "Home", Context: ctx, Integrations: integ,
		Traits: map[string]interface{}{"url": "https://example.com/"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := srv.delivered(t)
	if len(got) != 1 {
		t.Fatalf("delivered %d", len(got))
	}
	m := got[0]
	if ip := m["context"].(map[string]interface{})["ip"]; ip != "203.0.113.7" {
		t.Fatalf("context = %v", m["context"])
	}
	if i := m["integrations"].(map[string]interface{}); i["All"] != false || i["Webhooks"] != true {
		t.Fatalf("integrations = %v", i)
	}
	if p := m["properties"].(map[string]interface{}); p["url"] != "https://example.com/" {
		t.Fatalf("page traits not sent as properties: %v", m)
	}
}

// padded returns a track message whose JSON is exactly n bytes.
func padded(t *testing.T, n int) *Track {
	t.Helper()
	m := &Track{UserId: "u", Event: "e", Message: Message{Type: "track", MessageId: "id", Timestamp: "2009-11-10T23:00:00.000Z"},
		Properties: map[string]interface{}{"pad": ""}}
	base, _ := json.Marshal(m)
	m.Properties["pad"] = strings.Repeat("x", n-len(base))
	if b, _ := json.Marshal(m); len(b) != n {
		t.Fatalf("padded to %d, want %d", len(b), n)
	}
	return m
}

func TestMessagesOver32768BytesAreRejected(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)

	if err := c.Track(padded(t, 32768)); err != nil {
		t.Fatalf("32768-byte message rejected: %v", err)
	}
	err := c.Track(padded(t, 32769))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "32769") {
		t.Fatalf("error = %v, want ErrTooLarge naming the size", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 1 {
		t.Fatalf("delivered %d messages, want only the one that fits", n)
	}
}

func TestUnencodableMessageIsRejected(t *testing.T) {
	c, _ := newTestClient(t, "http://127.0.0.1:1")
	err := c.Track(&Track{UserId: "u", Event: "e", Properties: map[string]interface{}{"f": func() {}}})
	if err == nil || !strings.Contains(err.Error(), "encoding track message") {
		t.Fatalf("error = %v", err)
	}
}

func TestCallerMayReuseMapsAfterTheCall(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	props := map[string]interface{}{"n": 1}
	if err := c.Track(&Track{UserId: "u", Event: "e", Properties: props}); err != nil {
		t.Fatal(err)
	}
	props["n"] = 2 // the message was encoded by the call
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := srv.delivered(t)[0]["properties"].(map[string]interface{})["n"]; got != 1.0 {
		t.Fatalf("properties.n = %v, want 1", got)
	}
}
