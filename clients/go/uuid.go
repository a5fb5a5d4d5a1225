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

// formatTime is t.UTC().Format(timeLayout), without parsing the layout on
// every call: it runs once per call of the library.
func formatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(timeLayout)
	}
	hour, minute, sec := t.Clock()
	var b [24]byte
	put := func(at, v, width int) {
		for i := at + width - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, minute, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, t.Nanosecond()/1e6, 3)
	b[23] = 'Z'
	return string(b[:])
}
