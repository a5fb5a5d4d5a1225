package analytics_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"

	analytics "github.com/sluice-dev/sluice/clients/go"
)

// collector stands in for a Sluice server: it prints each batch it receives.
func collector() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Batch []map[string]interface{} `json:"batch"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		user, _, _ := r.BasicAuth()
		fmt.Printf("%s %s: batch of %d from key %q\n", r.Method, r.URL.Path, len(body.Batch), user)
		for _, m := range body.Batch {
			fmt.Printf("  %v", m["type"])
			for _, k := range []string{"userId", "event", "name", "groupId", "previousId"} {
				if v, ok := m[k]; ok {
					fmt.Printf(" %s=%v", k, v)
				}
			}
			fmt.Println()
		}
		fmt.Fprint(w, `{"success":true}`)
	}))
}

func Example() {
	server := collector()
	defer server.Close()

	client := analytics.New("my-write-key")
	client.Endpoint = server.URL // by default, http://localhost:8088

	_ = client.Identify(&analytics.Identify{
		UserId: "019mr8mf4r",
		Traits: map[string]interface{}{"plan": "premium"},
	})
	_ = client.Track(&analytics.Track{
		UserId:     "019mr8mf4r",
		Event:      "Purchased Item",
		Properties: map[string]interface{}{"revenue": 39.95},
	})
	_ = client.Close() // flushes the queued calls and waits for the upload

	// Output:
	// POST /v1/batch: batch of 2 from key "my-write-key"
	//   identify userId=019mr8mf4r
	//   track userId=019mr8mf4r event=Purchased Item
}

func ExampleClient_Track() {
	server := collector()
	defer server.Close()
	client := analytics.New("my-write-key")
	client.Endpoint = server.URL
	client.Logger = log.New(os.Stdout, "log: ", 0) // losses are logged, rate-limited

	err := client.Track(&analytics.Track{AnonymousId: "a1b2", Event: "Signed Up"})
	fmt.Println("err:", err)
	err = client.Track(&analytics.Track{UserId: "019mr8mf4r"}) // invalid: not queued
	fmt.Println("err:", err)
	// A caller-set MessageId or Timestamp that the server would refuse is
	// refused by the call, so it cannot sink the batch it would travel in.
	err = client.Track(&analytics.Track{UserId: "019mr8mf4r", Event: "Imported",
		Message: analytics.Message{Timestamp: "10/11/2009 23:00"}})
	fmt.Println("err:", err)
	_ = client.Close()

	// Output:
	// err: <nil>
	// log: lost 1 message(s), refused as invalid: You must pass 'event'. (more of this kind are summarised every 10s)
	// err: You must pass 'event'.
	// err: analytics: 'timestamp' is not an ISO 8601 date-time
	// POST /v1/batch: batch of 1 from key "my-write-key"
	//   track event=Signed Up
	// log: lost 1 more message(s), refused as invalid, since the last report; last error: analytics: 'timestamp' is not an ISO 8601 date-time
}

func ExampleClient_Identify() {
	server := collector()
	defer server.Close()
	client := analytics.New("my-write-key")
	client.Endpoint = server.URL

	_ = client.Identify(&analytics.Identify{
		UserId: "019mr8mf4r",
		Traits: map[string]interface{}{"email": "peter@example.com"},
		// Integrations turns destinations on or off for this call.
		Integrations: map[string]interface{}{"All": false, "Webhooks": true},
	})
	_ = client.Close()

	// Output:
	// POST /v1/batch: batch of 1 from key "my-write-key"
	//   identify userId=019mr8mf4r
}

func ExampleClient_Page() {
	server := collector()
	defer server.Close()
	client := analytics.New("my-write-key")
	client.Endpoint = server.URL

	_ = client.Page(&analytics.Page{
		UserId: "019mr8mf4r",
		Name:   "Pricing",
		Traits: map[string]interface{}{"url": "https://example.com/pricing"}, // sent as "properties"
	})
	_ = client.Close()

	// Output:
	// POST /v1/batch: batch of 1 from key "my-write-key"
	//   page userId=019mr8mf4r name=Pricing
}

func ExampleClient_Group() {
	server := collector()
	defer server.Close()
	client := analytics.New("my-write-key")
	client.Endpoint = server.URL

	_ = client.Group(&analytics.Group{
		UserId:  "019mr8mf4r",
		GroupId: "g-42",
		Traits:  map[string]interface{}{"name": "Initech"},
	})
	_ = client.Close()

	// Output:
	// POST /v1/batch: batch of 1 from key "my-write-key"
	//   group userId=019mr8mf4r groupId=g-42
}

func ExampleClient_Alias() {
	server := collector()
	defer server.Close()
	client := analytics.New("my-write-key")
	client.Endpoint = server.URL

	_ = client.Alias(&analytics.Alias{PreviousId: "a1b2", UserId: "019mr8mf4r"})
	_ = client.Close()

	// Output:
	// POST /v1/batch: batch of 1 from key "my-write-key"
	//   alias userId=019mr8mf4r previousId=a1b2
}

func ExampleClient_Close() {
	server := collector()
	defer server.Close()
	client := analytics.New("my-write-key")
	client.Endpoint = server.URL
	client.Logger = log.New(io.Discard, "", 0)

	_ = client.Track(&analytics.Track{UserId: "019mr8mf4r", Event: "Logged Out"})
	fmt.Println("close:", client.Close())
	fmt.Println("close again:", client.Close())
	err := client.Track(&analytics.Track{UserId: "019mr8mf4r", Event: "Too Late"})
	fmt.Println("after close:", errors.Is(err, analytics.ErrClosed))

	// Output:
	// POST /v1/batch: batch of 1 from key "my-write-key"
	//   track userId=019mr8mf4r event=Logged Out
	// close: <nil>
	// close again: analytics: client is closed
	// after close: true
}

// Setting FlushAt (or Size) to 1 sends every call at once, without batching.
func Example_flushAt() {
	server := collector()
	defer server.Close()
	client := analytics.New("my-write-key")
	client.Endpoint = server.URL
	client.FlushAt = 1

	_ = client.Track(&analytics.Track{UserId: "019mr8mf4r", Event: "Deployed"})
	_ = client.Close()

	// Output:
	// POST /v1/batch: batch of 1 from key "my-write-key"
	//   track userId=019mr8mf4r event=Deployed
}

// A Size (or FlushAt) set by the caller caps every request, as in
// analytics-go v2: here five calls go out as requests of 3 and 2 messages.
// At the defaults a backlog may go out in larger requests.
func Example_size() {
	var mu sync.Mutex
	var sizes []int
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Batch []json.RawMessage `json:"batch"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		sizes = append(sizes, len(body.Batch))
		mu.Unlock()
		fmt.Fprint(w, `{"success":true}`)
	}))
	defer server.Close()
	client := analytics.New("my-write-key")
	client.Endpoint = server.URL
	client.Size = 3

	for i := 0; i < 5; i++ {
		_ = client.Track(&analytics.Track{UserId: "123456", Event: "Download",
			Properties: map[string]interface{}{"version": i}})
	}
	_ = client.Close()

	slices.Sort(sizes) // two uploads may finish in either order
	fmt.Println("messages per request:", sizes)

	// Output:
	// messages per request: [2 3]
}

// OnFailure receives the batches that could not be delivered; here the
// server rejects the write key, and 401 is not retried.
func Example_onFailure() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"success":false,"code":"invalid_write_key","message":"unknown write key"}`)
	}))
	defer server.Close()

	client := analytics.New("wrong-key")
	client.Endpoint = server.URL
	client.Logger = log.New(io.Discard, "", 0) // failures are logged too; not here
	client.OnFailure = func(err error, msgs []json.RawMessage) {
		fmt.Printf("%d message(s) not delivered: %v\n", len(msgs), err)
	}
	_ = client.Track(&analytics.Track{UserId: "019mr8mf4r", Event: "Signed Up"})
	fmt.Println("close:", client.Close()) // Close reports what its flush could not deliver

	// Output:
	// 1 message(s) not delivered: analytics: server answered 401 Unauthorized: {"success":false,"code":"invalid_write_key","message":"unknown write key"}
	// close: analytics: Close: 1 undelivered messages were dropped; last error: analytics: server answered 401 Unauthorized: {"success":false,"code":"invalid_write_key","message":"unknown write key"}
}

// Stats counts what happened to the calls; every message that is not
// delivered is also logged and passed to OnFailure.
func ExampleClient_Stats() {
	server := collector()
	defer server.Close()
	client := analytics.New("my-write-key")
	client.Endpoint = server.URL
	client.Logger = log.New(io.Discard, "", 0) // drops are logged too; not here

	_ = client.Track(&analytics.Track{UserId: "019mr8mf4r", Event: "Signed Up"})
	_ = client.Track(&analytics.Track{UserId: "019mr8mf4r"}) // no event: refused
	_ = client.Close()

	s := client.Stats()
	fmt.Printf("calls %d, sent %d, dropped %d, queued %d\n", s.Calls, s.Sent, s.Dropped, s.QueueDepth)

	// Output:
	// POST /v1/batch: batch of 1 from key "my-write-key"
	//   track userId=019mr8mf4r event=Signed Up
	// calls 2, sent 1, dropped 1, queued 0
}
