package analytics

import (
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
