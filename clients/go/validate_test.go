package analytics

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestInvalidCallsReturnV2MessagesAndQueueNothing(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Size = 1

	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"identify without ids", func() error { return c.Identify(&Identify{Traits: map[string]interface{}{"a": 1}}) },
			"You must pass either an 'anonymousId' or 'userId'."},
		{"track without event", func() error { return c.Track(&Track{UserId: "u"}) },
			"You must pass 'event'."},
		{"track without event or ids reports event first", func() error { return c.Track(&Track{}) },
			"You must pass 'event'."},
		{"track without ids", func() error { return c.Track(&Track{Event: "e"}) },
			"You must pass either an 'anonymousId' or 'userId'."},
		{"page without ids", func() error { return c.Page(&Page{Name: "Home"}) },
			"You must pass either an 'anonymousId' or 'userId'."},
		{"group without groupId", func() error { return c.Group(&Group{UserId: "u"}) },
			"You must pass a 'groupId'."},
		{"group without groupId or ids reports groupId first", func() error { return c.Group(&Group{}) },
			"You must pass a 'groupId'."},
		{"group without ids", func() error { return c.Group(&Group{GroupId: "g"}) },
			"You must pass either an 'anonymousId' or 'userId'."},
		{"alias without userId", func() error { return c.Alias(&Alias{PreviousId: "p"}) },
			"You must pass a 'userId'."},
		{"alias without either reports userId first", func() error { return c.Alias(&Alias{}) },
			"You must pass a 'userId'."},
		{"alias without previousId", func() error { return c.Alias(&Alias{UserId: "u"}) },
			"You must pass a 'previousId'."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
		})
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("invalid messages were sent: %d requests", n)
	}
}

func TestInvalidMessageIsNotModified(t *testing.T) {
	c, _ := newTestClient(t, "http://127.0.0.1:1")
	m := &Track{UserId: "u"}
	if err := c.Track(m); err == nil {
		t.Fatal("want error")
	}
	if m.Type != "" || m.MessageId != "" || m.Timestamp != "" {
		t.Fatalf("invalid message was filled in: %+v", m.Message)
	}
}

func TestAnonymousIdAloneIsEnough(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	calls := []error{
		c.Identify(&Identify{AnonymousId: "a"}),
		c.Track(&Track{AnonymousId: "a", Event: "e"}),
		c.Page(&Page{AnonymousId: "a"}),
		c.Group(&Group{AnonymousId: "a", GroupId: "g"}),
	}
	for i, err := range calls {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 4 {
		t.Fatalf("delivered %d messages, want 4", n)
	}
}

// A caller-set MessageId, Timestamp or SentAt that the server would refuse
// is refused by the call, which queues nothing: otherwise it would sink
// the batch it travels in.
func TestCallerSetFieldsTheServerWouldRefuseAreRefusedByTheCall(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	var f failures
	c.OnFailure = f.record
	long := strings.Repeat("a", 101)
	cases := []struct {
		name string
		msg  Message
		want error
	}{
		{"messageId of 101 characters", Message{MessageId: long}, errInvalidMessageId},
		{"messageId with a leading space", Message{MessageId: " order-42"}, errInvalidMessageId},
		{"messageId with a trailing space", Message{MessageId: "order-42 "}, errInvalidMessageId},
		{"messageId with a newline", Message{MessageId: "order\n42"}, errInvalidMessageId},
		{"messageId with a C1 control", Message{MessageId: "order\u008542"}, errInvalidMessageId},
		{"messageId with DEL", Message{MessageId: "order\x7f"}, errInvalidMessageId},
		{"timestamp with hours only", Message{Timestamp: "2009-11-10 23"}, errInvalidTimestamp},
		{"fraction without seconds", Message{Timestamp: "2009-11-10T23:00.5Z"}, errInvalidTimestamp},
		{"date alone with an offset", Message{Timestamp: "2009-11-10+01:00"}, errInvalidTimestamp},
		{"Go's time.String", Message{Timestamp: "2009-11-10 23:00:00 +0000 UTC"}, errInvalidTimestamp},
		{"timestamp on February 30", Message{Timestamp: "2009-02-30T00:00:00Z"}, errInvalidTimestamp},
		{"sentAt that is not a date", Message{SentAt: "yesterday"}, errInvalidSentAt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &Track{UserId: "u", Event: "e", Message: tc.msg}
			if err := c.Track(m); err != tc.want {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			if m.Type != "" {
				t.Fatalf("a refused message was filled in: %+v", m.Message)
			}
		})
	}
	if !strings.Contains(errInvalidMessageId.Error(), "'messageId'") || !strings.Contains(errInvalidTimestamp.Error(), "'timestamp'") {
		t.Fatal("the errors do not name their field")
	}
	// The v2 checks come first, with v2's messages.
	if err := c.Track(&Track{UserId: "u", Message: Message{MessageId: long}}); err != errMissingEvent {
		t.Fatalf("error = %v, want v2's %v", err, errMissingEvent)
	}

	good := []Message{
		{MessageId: strings.Repeat("é", 100)}, // 100 characters, 200 bytes
		{MessageId: "a b"},
		{Timestamp: "2009-11-10T23:00:00+0000"}, // analytics-go v2's own format
		{Timestamp: "2009-11-10 23:00:00"},
		{Timestamp: "2009-11-10"},                                    // analytics-node passes a date alone through
		{Timestamp: "2009-11-10 23:00", SentAt: "2009-11-10T23:01Z"}, // SQL-style, without seconds
		{Timestamp: " 2009-11-10T23:00:00.123456789123Z ", SentAt: "2009-11-10t23:00:01,5-05"},
	}
	for _, m := range good {
		if err := c.Track(&Track{UserId: "u", Event: "e", Message: m}); err != nil {
			t.Fatalf("%+v refused: %v", m, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != len(good) {
		t.Fatalf("delivered %d, want %d", n, len(good))
	}
	if _, count := f.snapshot(); count != len(cases)+1 {
		t.Fatalf("OnFailure reported %d messages, want %d", count, len(cases)+1)
	}
}

// validTimestamp follows the server's lenient ISO 8601 grammar.
func TestTimestampGrammarMatchesTheServers(t *testing.T) {
	// Shared with the server's tests (sluice-model), so the two grammars
	// cannot drift apart.
	data, err := os.ReadFile("../../testdata/timestamps/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct{ Valid, Invalid []string }
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors.Valid) == 0 || len(vectors.Invalid) == 0 {
		t.Fatal("no vectors")
	}
	for _, s := range vectors.Valid {
		if !validTimestamp(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range vectors.Invalid {
		if validTimestamp(s) {
			t.Errorf("%q accepted", s)
		}
	}
}
