package analytics

import (
	"log"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/segmentio/backo-go"
)

// This file pins analytics-go v2's (2.1.x) exported surface in v2's own
// types: if any identifier below disappears or changes type, the package's
// tests stop compiling. Identifiers this library adds are not listed; the
// whole exported API is pinned by api.txt.

// Constants stay constants (2.1.x made Version and Endpoint const).
const (
	_ string = Version
	_ string = Endpoint
)

// Package variables, functions and methods, with v2's types.
var (
	_ map[string]interface{} = DefaultContext
	_ *backo.Backo           = Backo

	_ func(key string) *Client             = New
	_ func(c *Client, msg *Alias) error    = (*Client).Alias
	_ func(c *Client, msg *Page) error     = (*Client).Page
	_ func(c *Client, msg *Group) error    = (*Client).Group
	_ func(c *Client, msg *Identify) error = (*Client).Identify
	_ func(c *Client, msg *Track) error    = (*Client).Track
	_ func(c *Client) error                = (*Client).Close
)

// v2's Client fields, set as v2 code sets them.
var _ = &Client{
	Endpoint: "",
	Interval: time.Duration(0),
	Size:     0,
	Logger:   (*log.Logger)(nil),
	Verbose:  false,
	Client:   http.Client{},
}

// v2's message types, field for field. A conversion compiles only when the
// field names, types and order are identical; the tags are compared below.
type (
	v2Message struct {
		Type      string `json:"type,omitempty"`
		MessageId string `json:"messageId,omitempty"`
		Timestamp string `json:"timestamp,omitempty"`
		SentAt    string `json:"sentAt,omitempty"`
	}
	v2Batch struct {
		Context  map[string]interface{} `json:"context,omitempty"`
		Messages []interface{}          `json:"batch"`
		Message
	}
	v2Identify struct {
		Context      map[string]interface{} `json:"context,omitempty"`
		Integrations map[string]interface{} `json:"integrations,omitempty"`
		Traits       map[string]interface{} `json:"traits,omitempty"`
		AnonymousId  string                 `json:"anonymousId,omitempty"`
		UserId       string                 `json:"userId,omitempty"`
		Message
	}
	v2Group struct {
		Context      map[string]interface{} `json:"context,omitempty"`
		Integrations map[string]interface{} `json:"integrations,omitempty"`
		Traits       map[string]interface{} `json:"traits,omitempty"`
		AnonymousId  string                 `json:"anonymousId,omitempty"`
		UserId       string                 `json:"userId,omitempty"`
		GroupId      string                 `json:"groupId"`
		Message
	}
	v2Track struct {
		Context      map[string]interface{} `json:"context,omitempty"`
		Integrations map[string]interface{} `json:"integrations,omitempty"`
		Properties   map[string]interface{} `json:"properties,omitempty"`
		AnonymousId  string                 `json:"anonymousId,omitempty"`
		UserId       string                 `json:"userId,omitempty"`
		Event        string                 `json:"event"`
		Message
	}
	v2Page struct {
		Context      map[string]interface{} `json:"context,omitempty"`
		Integrations map[string]interface{} `json:"integrations,omitempty"`
		Traits       map[string]interface{} `json:"properties,omitempty"`
		AnonymousId  string                 `json:"anonymousId,omitempty"`
		UserId       string                 `json:"userId,omitempty"`
		Category     string                 `json:"category,omitempty"`
		Name         string                 `json:"name,omitempty"`
		Message
	}
	v2Alias struct {
		PreviousId string `json:"previousId"`
		UserId     string `json:"userId"`
		Message
	}
)

var (
	_ = Message(v2Message{})
	_ = Batch(v2Batch{})
	_ = Identify(v2Identify{})
	_ = Group(v2Group{})
	_ = Track(v2Track{})
	_ = Page(v2Page{})
	_ = Alias(v2Alias{})
)

func TestMessageTypesHaveV2Tags(t *testing.T) {
	pairs := []struct{ ours, v2 interface{} }{
		{Message{}, v2Message{}}, {Batch{}, v2Batch{}}, {Identify{}, v2Identify{}}, {Group{}, v2Group{}},
		{Track{}, v2Track{}}, {Page{}, v2Page{}}, {Alias{}, v2Alias{}},
	}
	for _, p := range pairs {
		ours, v2 := reflect.TypeOf(p.ours), reflect.TypeOf(p.v2)
		if ours.NumField() != v2.NumField() {
			t.Fatalf("%s has %d fields, v2 has %d", ours.Name(), ours.NumField(), v2.NumField())
		}
		for i := range ours.NumField() {
			if a, b := ours.Field(i), v2.Field(i); a.Tag != b.Tag {
				t.Errorf("%s.%s is tagged %q, v2 tags it %q", ours.Name(), a.Name, a.Tag, b.Tag)
			}
		}
	}
}

// v2 code tunes retries by replacing Backo with its own; clients started
// afterwards use it.
func TestReplacingBackoTunesRetries(t *testing.T) {
	saved := Backo
	t.Cleanup(func() { Backo = saved })
	Backo = backo.NewBacko(40*time.Millisecond, 3, 0, time.Second)

	srv := newRecorder(t, func(n int, _ http.ResponseWriter) int {
		if n < 3 {
			return 503
		}
		return 200
	})
	c := New(testKey)
	c.Endpoint = srv.URL
	c.Logger = newTestLogger()
	var s sleeps
	c.tune.sleep = s.sleep
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := s.all()
	base := []time.Duration{40 * time.Millisecond, 120 * time.Millisecond, 360 * time.Millisecond}
	if len(got) != len(base) {
		t.Fatalf("waited %v, want %d waits", got, len(base))
	}
	for i, d := range got {
		if d < base[i] || d > base[i]*3/2 {
			t.Errorf("wait %d = %v, want within [%v, %v] from the replaced Backo", i, d, base[i], base[i]*3/2)
		}
	}
	if st := c.Stats(); st.Retried != 3 || st.Sent != 1 {
		t.Fatalf("stats: %+v, want 3 retried and 1 sent", st)
	}
}
