package analytics

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFlushesWhenSizeMessagesAreQueued(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Size = 3
	for i := range 3 {
		if err := c.Track(&Track{UserId: "u", Event: "e" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a batch of 3", func() bool { return len(srv.requests()) == 1 })
	if n := len(srv.requests()[0].decode(t).Batch); n != 3 {
		t.Fatalf("first batch has %d messages, want 3", n)
	}
	for range 2 {
		if err := c.Track(&Track{UserId: "u", Event: "more"}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("%d requests before Close with 2 of 3 messages queued, want 1", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || len(reqs[1].decode(t).Batch) != 2 {
		t.Fatalf("want the remaining 2 messages flushed on Close, got %d requests", len(reqs))
	}
}

func TestABacklogAtTheDefaultsIsSentInBatchesLargerThanFlushAt(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, _ := newTestClient(t, srv.URL)
	t.Cleanup(g.open)
	c.FlushAfter = 10 * time.Millisecond // the first call goes alone; FlushAfter caps nothing
	c.tune.maxUploads = 1
	if err := c.Track(&Track{UserId: "u", Event: "first"}); err != nil {
		t.Fatal(err)
	}
	<-g.started // the only upload slot is busy: the next 3000 calls wait
	for range 3000 {
		if err := c.Track(&Track{UserId: "u", Event: "backlog"}); err != nil {
			t.Fatal(err)
		}
	}
	g.open()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, r := range srv.requests() {
		sizes = append(sizes, len(r.decode(t).Batch))
	}
	// One message, then the backlog in as few requests as the 2500-message
	// limit allows.
	if len(sizes) != 3 || sizes[0] != 1 || sizes[1] != maxBatchMessages || sizes[2] != 500 {
		t.Fatalf("batch sizes %v, want [1 2500 500]", sizes)
	}
}

// A Size set by the caller caps every request, as in analytics-go v2, even
// when a backlog waits: programs may rely on small requests.
func TestSizeSetByTheCallerCapsEveryRequestOfABacklog(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, _ := newTestClient(t, srv.URL)
	t.Cleanup(g.open)
	c.Size = 3
	c.tune.maxUploads = 1
	for range 3 {
		if err := c.Track(&Track{UserId: "u", Event: "first"}); err != nil {
			t.Fatal(err)
		}
	}
	<-g.started // the only upload slot is busy: the next 20 calls wait
	for range 20 {
		if err := c.Track(&Track{UserId: "u", Event: "backlog"}); err != nil {
			t.Fatal(err)
		}
	}
	g.open()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	total := 0
	for _, r := range srv.requests() {
		n := len(r.decode(t).Batch)
		sizes = append(sizes, n)
		total += n
	}
	if total != 23 || len(sizes) != 8 || slices.Max(sizes) != 3 {
		t.Fatalf("batch sizes %v, want 23 messages in 8 requests of at most 3", sizes)
	}
}

func TestFlushAtIsASynonymOfSize(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.FlushAt = 2
	c.Size = 50 // FlushAt wins when both are set
	for range 2 {
		if err := c.Identify(&Identify{UserId: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a batch of 2", func() bool { return len(srv.requests()) == 1 })
	if n := len(srv.requests()[0].decode(t).Batch); n != 2 {
		t.Fatalf("batch has %d messages, want 2", n)
	}
}

func TestSizeOneSendsEveryCallImmediately(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Size = 1
	for i := range 3 {
		if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "an immediate upload", func() bool { return len(srv.requests()) == i+1 })
	}
	for _, r := range srv.requests() {
		if n := len(r.decode(t).Batch); n != 1 {
			t.Fatalf("batch of %d, want 1", n)
		}
	}
}

func TestFlushesWhenIntervalPasses(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Interval = 10 * time.Millisecond
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a flush by interval", func() bool { return len(srv.requests()) == 1 })
	if err := c.Track(&Track{UserId: "u", Event: "again"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a second flush by interval", func() bool { return len(srv.requests()) == 2 })
}

func TestFlushAfterIsASynonymOfInterval(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Interval = time.Hour
	c.FlushAfter = 10 * time.Millisecond // FlushAfter wins when both are set
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a flush by FlushAfter", func() bool { return len(srv.requests()) == 1 })
}

func TestSettingsResolveSynonymsAndDefaults(t *testing.T) {
	counts := []struct{ flushAt, size, want int }{
		{0, 0, 20}, {0, 20, 20}, {0, 7, 7}, {9, 0, 9}, {9, 7, 9}, {-1, -1, 20}, {1, 250, 1}, {0, 5000, 2500},
	}
	for _, tc := range counts {
		if got := flushCount(tc.flushAt, tc.size); got != tc.want {
			t.Errorf("flushCount(FlushAt=%d, Size=%d) = %d, want %d", tc.flushAt, tc.size, got, tc.want)
		}
	}
	s, h := time.Second, time.Hour
	intervals := []struct{ after, interval, want time.Duration }{
		{0, 0, 5 * s}, {0, h, h}, {s, h, s}, {s, 0, s}, {-s, -s, 5 * s},
	}
	for _, tc := range intervals {
		if got := flushInterval(tc.after, tc.interval); got != tc.want {
			t.Errorf("flushInterval(FlushAfter=%v, Interval=%v) = %v, want %v", tc.after, tc.interval, got, tc.want)
		}
	}

	c := New("k")
	if c.Endpoint != "http://localhost:8088" || c.Size != 0 || c.Interval != 5*time.Second || c.Logger == nil ||
		c.Client.Timeout != 30*time.Second || c.CloseTimeout != 0 {
		t.Fatalf("New's defaults: %+v", c)
	}
	// No Close deadline by default (v2's Close waited for every upload),
	// and an HTTP timeout that outlasts the server's 10 s storage timeout.
	cfg := (&Client{Endpoint: "http://h:1/"}).settings()
	if cfg.url != "http://h:1/v1/batch" || cfg.flushAt != 20 || cfg.flushAfter != 5*time.Second ||
		cfg.batchMax != maxBatchMessages || cfg.maxQueued != math.MaxInt || cfg.maxBytes != 128<<20 ||
		cfg.block || cfg.closeTimeout != 0 || cfg.logger == nil || cfg.http.Timeout != 30*time.Second ||
		cfg.maxRetryAfter != 10*time.Second {
		t.Fatalf("zero-value settings: %+v", cfg)
	}
	// Blocking is asked for explicitly; DropWhenFull, from the releases
	// that blocked by default, wins over it.
	if !(&Client{BlockWhenFull: true}).settings().block ||
		(&Client{BlockWhenFull: true, DropWhenFull: true}).settings().block {
		t.Fatal("BlockWhenFull does not block, or wins over DropWhenFull")
	}
	if cfg := (&Client{Size: 7}).settings(); cfg.batchMax != 7 || cfg.flushAt != 7 {
		t.Fatalf("a caller's Size: flushAt %d, batchMax %d; want 7 and 7", cfg.flushAt, cfg.batchMax)
	}
	if cfg := (&Client{CloseTimeout: -time.Second}).settings(); cfg.closeTimeout != 0 {
		t.Fatalf("negative CloseTimeout resolves to %v, want 0 (no deadline)", cfg.closeTimeout)
	}
	if cfg := (&Client{CloseTimeout: time.Second}).settings(); cfg.closeTimeout != time.Second {
		t.Fatalf("CloseTimeout 1s resolves to %v", cfg.closeTimeout)
	}
	if cfg := (&Client{}).settings(); cfg.url != "http://localhost:8088/v1/batch" {
		t.Fatalf("empty Endpoint resolves to %q", cfg.url)
	}
}

func TestFlushesBeforeABatchWouldPass500KB(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Size = 1000
	const n = 40 // 40 × 30000 bytes: more than two full batches
	for range n {
		if err := c.Track(padded(t, 30000)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "flushes by size before Close", func() bool { return len(srv.requests()) >= 2 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range srv.requests() {
		if len(r.body) > maxBatchBytes {
			t.Fatalf("batch of %d bytes passes the limit", len(r.body))
		}
		total += len(r.decode(t).Batch)
	}
	if total != n {
		t.Fatalf("delivered %d messages, want %d", total, n)
	}
}

func TestCloseFlushesEverything(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Size = 100
	for range 5 {
		if err := c.Group(&Group{UserId: "u", GroupId: "g"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(srv.requests()) != 0 {
		t.Fatal("flushed before Close")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if reqs := srv.requests(); len(reqs) != 1 || len(reqs[0].decode(t).Batch) != 5 {
		t.Fatalf("want one batch of 5 on Close, got %d requests", len(reqs))
	}
}

func TestBatchRequestShape(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Endpoint = srv.URL + "/" // a trailing slash is tolerated
	if err := c.Alias(&Alias{UserId: "new", PreviousId: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.method != "POST" || r.path != "/v1/batch" {
		t.Fatalf("%s %s", r.method, r.path)
	}
	if got := r.header.Get("User-Agent"); got != "analytics-go (version: 2.1.0)" {
		t.Fatalf("User-Agent %q", got)
	}
	if got := r.header.Get("Content-Type"); got != "application/json" {
		t.Fatalf("Content-Type %q", got)
	}
	// Basic auth: the write key as username, an empty password.
	if got := r.header.Get("Authorization"); got != "Basic dGVzdC13cml0ZS1rZXk6" {
		t.Fatalf("Authorization %q", got)
	}
	if !strings.HasPrefix(string(r.body), `{"batch":[{"previousId":"old","userId":"new","type":"alias","messageId":"`) {
		t.Fatalf("body %s", r.body)
	}
	b := r.decode(t)
	lib, _ := b.Context["library"].(map[string]interface{})
	if lib["name"] != "analytics-go" || lib["version"] != "2.1.0" {
		t.Fatalf("context %v", b.Context)
	}
	if len(b.MessageId) != 36 || b.MessageId == b.Batch[0]["messageId"] {
		t.Fatalf("batch messageId %q", b.MessageId)
	}
	if _, err := time.Parse(time.RFC3339Nano, b.SentAt); err != nil {
		t.Fatalf("sentAt %q: %v", b.SentAt, err)
	}
}
