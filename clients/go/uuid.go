package analytics

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// newUUID returns a random (version 4) UUID in its canonical 36-character
// form, read from crypto/rand.
func newUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])  // never fails on supported platforms (Go 1.24+ panics instead)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}

// timeLayout is ISO 8601 in UTC with millisecond precision, e.g.
// 2024-05-01T12:30:00.123Z.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string {
	return t.UTC().Format(timeLayout)
}
