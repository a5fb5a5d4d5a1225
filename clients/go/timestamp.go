package analytics

import (
	"strings"
	"time"
)

// validTimestamp reports whether s is a date-time the Sluice server
// accepts: its lenient ISO 8601, after trimming surrounding white space,
//
//   - YYYY-MM-DD (year 0000 to 9999) alone, meaning midnight UTC, with
//     nothing after it;
//   - or YYYY-MM-DD, then T, t or a space, then HH:MM or HH:MM:SS;
//   - after seconds only, an optional fraction after . or , with at least
//     one digit;
//   - after a time, an optional offset Z, z, ±HH:MM, ±HHMM or ±HH (hours
//     at most 23, minutes at most 59); without one, UTC is meant;
//
// naming a real calendar date and time of day whose UTC instant is still
// within years 0000 to 9999.
func validTimestamp(s string) bool {
	p := tsParser{s: strings.TrimSpace(s)}
	year, ok1 := p.digits(4)
	ok2 := p.byte("-")
	month, ok3 := p.digits(2)
	ok4 := p.byte("-")
	day, ok5 := p.digits(2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return false
	}
	hour, minute, second := 0, 0, 0
	var offset time.Duration
	if p.s != "" { // a date alone is midnight UTC
		var ok bool
		if hour, minute, second, ok = p.clock(); !ok {
			return false
		}
		if offset, ok = p.offset(); !ok || p.s != "" {
			return false
		}
	}
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59 {
		return false
	}
	// time.Date normalises an impossible day (February 30) into the next
	// month; a real date survives unchanged.
	d := time.Date(year, time.Month(month), day, hour, minute, second, 0, time.UTC)
	if d.Day() != day || d.Month() != time.Month(month) {
		return false
	}
	utc := d.Add(-offset).Year() // a fraction cannot cross a year: offsets are whole minutes
	return utc >= 0 && utc <= 9999
}

// tsParser reads a timestamp from the front.
type tsParser struct{ s string }

// digits reads exactly n ASCII digits as a number.
func (p *tsParser) digits(n int) (int, bool) {
	if len(p.s) < n {
		return 0, false
	}
	v := 0
	for i := range n {
		c := p.s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	p.s = p.s[n:]
	return v, true
}

// byte reads one byte out of set, if the next byte is one.
func (p *tsParser) byte(set string) bool {
	if p.s == "" || strings.IndexByte(set, p.s[0]) < 0 {
		return false
	}
	p.s = p.s[1:]
	return true
}

// run reads a run of ASCII digits and returns its length.
func (p *tsParser) run() int {
	n := 0
	for n < len(p.s) && p.s[n] >= '0' && p.s[n] <= '9' {
		n++
	}
	p.s = p.s[n:]
	return n
}

// clock reads the separator and HH:MM, then optionally :SS and a fraction
// (a fraction needs seconds: HH:MM.5 is then refused as an offset).
func (p *tsParser) clock() (hour, minute, second int, ok bool) {
	ok1 := p.byte("Tt ")
	hour, ok2 := p.digits(2)
	ok3 := p.byte(":")
	minute, ok4 := p.digits(2)
	if !(ok1 && ok2 && ok3 && ok4) {
		return 0, 0, 0, false
	}
	if !p.byte(":") {
		return hour, minute, 0, true
	}
	if second, ok = p.digits(2); !ok {
		return 0, 0, 0, false
	}
	if p.byte(".,") && p.run() == 0 {
		return 0, 0, 0, false
	}
	return hour, minute, second, true
}

// offset reads an optional UTC offset: Z, z, ±HH, ±HHMM or ±HH:MM.
func (p *tsParser) offset() (time.Duration, bool) {
	if p.s == "" || p.byte("Zz") {
		return 0, true
	}
	sign := time.Duration(1)
	if p.byte("-") {
		sign = -1
	} else if !p.byte("+") {
		return 0, false
	}
	hours, ok := p.digits(2)
	if !ok {
		return 0, false
	}
	minutes := 0
	if p.s != "" {
		p.byte(":")
		if minutes, ok = p.digits(2); !ok {
			return 0, false
		}
	}
	if hours > 23 || minutes > 59 {
		return 0, false
	}
	return sign * (time.Duration(hours)*time.Hour + time.Duration(minutes)*time.Minute), true
}
