package analytics

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestConcurrentCallersAreAllDelivered(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Size = 7
	const workers, each = 8, 200
	var wg sync.WaitGroup
	ids := make(chan string, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				user := fmt.Sprintf("u%d", w)
				var err error
				var id string
				switch i % 5 {
				case 0:
					m := &Identify{UserId: user}
					err, id = c.Identify(m), m.MessageId
				case 1:
					m := &Track{UserId: user, Event: "e"}
					err, id = c.Track(m), m.MessageId
				case 2:
					m := &Page{UserId: user}
					err, id = c.Page(m), m.MessageId
				case 3:
					m := &Group{UserId: user, GroupId: "g"}
					err, id = c.Group(m), m.MessageId
				case 4:
					m := &Alias{UserId: user, PreviousId: "p"}
					err, id = c.Alias(m), m.MessageId
				}
				if err != nil {
					t.Error(err)
					return
				}
				ids <- id
			}
		}()
	}
	wg.Wait()
	close(ids)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, m := range srv.delivered(t) {
		got[m["messageId"].(string)]++
	}
	sent := 0
	for id := range ids {
		sent++
		if got[id] != 1 {
			t.Fatalf("message %s delivered %d times", id, got[id])
		}
	}
	if sent != workers*each || len(got) != sent {
		t.Fatalf("sent %d, delivered %d distinct", sent, len(got))
	}
}

func TestCallsRacingCloseEitherSucceedOrReturnErrClosed(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	c.Size = 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	start := make(chan struct{})
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 300 {
				err := c.Track(&Track{UserId: "u", Event: "e"})
				switch {
				case err == nil:
					mu.Lock()
					accepted++
					mu.Unlock()
				case errors.Is(err, ErrClosed):
					return
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	closeErr := c.Close()
	wg.Wait()
	if closeErr != nil {
		t.Fatal(closeErr)
	}
	if n := len(srv.delivered(t)); n != accepted {
		t.Fatalf("accepted %d calls, delivered %d", accepted, n)
	}
}
