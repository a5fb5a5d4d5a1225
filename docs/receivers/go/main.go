// Command sluice-receiver is a reference webhook receiver for Sluice
// (standard library only).
//
// It verifies X-Signature = hex HMAC-SHA1(SHARED_SECRET, raw body) with a
// constant-time comparison. Always verify the raw bytes: re-encoding with
// encoding/json would not reproduce them (it escapes <, > and &, and orders
// map keys alphabetically).
//
// Env: PORT (0 picks a free port), SHARED_SECRET (required).
// Answers 200 when valid, 401 when not; prints one JSON line per request:
//
//	{"valid":true,"messageId":"…","type":"track"}
//
// (messageId/type are null when the body has none). Diagnostics go to stderr.
package main

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxBodyBytes bounds every read; Sluice caps messages far below this.
const maxBodyBytes = 1 << 20

// line is what the receiver prints for each request.
type line struct {
	Valid     bool    `json:"valid"`
	MessageID *string `json:"messageId"`
	Type      *string `json:"type"`
}

type receiver struct {
	secret []byte
	mu     sync.Mutex // one complete line at a time on stdout
	out    io.Writer
}

// validSignature reports whether received is the hex HMAC-SHA1 of body.
func (r *receiver) validSignature(body []byte, received string) bool {
	got, err := hex.DecodeString(received)
	if err != nil {
		return false
	}
	mac := hmac.New(sha1.New, r.secret)
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), got) // constant time
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "cannot read body", http.StatusBadRequest)
		}
		return
	}

	valid := r.validSignature(body, req.Header.Get("X-Signature"))
	var message struct {
		MessageID *string `json:"messageId"`
		Type      *string `json:"type"`
	}
	_ = json.Unmarshal(body, &message) // fields stay nil when absent or not JSON
	r.print(line{Valid: valid, MessageID: message.MessageID, Type: message.Type})

	if valid {
		fmt.Fprintln(w, "ok")
	} else {
		http.Error(w, "invalid signature", http.StatusUnauthorized)
	}
}

func (r *receiver) print(l line) {
	b, err := json.Marshal(l)
	if err != nil {
		log.Printf("encoding line: %v", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// os.Stdout is unbuffered, so each line is flushed as it is written.
	if _, err := r.out.Write(append(b, '\n')); err != nil {
		log.Printf("writing line: %v", err)
	}
}

func main() {
	secret := os.Getenv("SHARED_SECRET")
	if secret == "" {
		log.Fatal("SHARED_SECRET is required")
	}
	port, err := strconv.Atoi(strings.TrimSpace(os.Getenv("PORT")))
	if err != nil || port < 0 || port > 65535 {
		log.Fatal("PORT must be a port number (0 picks a free one)")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on %s", ln.Addr())
	srv := &http.Server{
		Handler:           &receiver{secret: []byte(secret), out: os.Stdout},
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Fatal(srv.Serve(ln))
}
