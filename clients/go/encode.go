package analytics

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// encodeMessage returns the JSON encoding of a message (*Identify, *Track,
// *Page, *Group or *Alias), byte for byte what json.Marshal returns.
//
// Why not json.Marshal itself: it reaches map entries through reflection,
// which allocates a copy of every key and value, and encoding happens on
// the caller's goroutine for every call. This encoder walks the message and
// the value types that properties and traits are made of (maps, slices,
// strings, numbers, booleans, nil) directly, into a pooled buffer. Any
// other value (a struct, a time.Time, a json.Marshaler, NaN, a cycle) makes
// it hand the whole message to json.Marshal, so the result and the errors
// are always encoding/json's. TestEncoderMatchesEncodingJSON holds it to
// that.
func encodeMessage(v interface{}) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.buf, e.failed, e.depth = e.buf[:0], false, 0
	e.message(v)
	var out []byte
	if !e.failed {
		out = make([]byte, len(e.buf))
		copy(out, e.buf)
	}
	failed := e.failed
	if cap(e.buf) <= maxMessageBytes*2 {
		encoders.Put(e)
	}
	if failed {
		return json.Marshal(v)
	}
	return out, nil
}

var encoders = sync.Pool{New: func() interface{} { return &encoder{buf: make([]byte, 0, 1024)} }}

// maxDepth bounds nesting; deeper values (or cycles) go to json.Marshal.
const maxDepth = 64

type pair struct {
	key   string
	value interface{}
}

type encoder struct {
	buf    []byte
	pairs  []pair // a stack of map entries being sorted, one segment per open map
	depth  int
	failed bool
}

// head opens a message and writes the fields every call type but Alias
// starts with, in their struct order.
func (e *encoder) head(context, integrations map[string]interface{}) {
	e.begin()
	e.mapField("context", context)
	e.mapField("integrations", integrations)
}

// ids writes the optional identity pair, in struct order.
func (e *encoder) ids(anonymousID, userID string) {
	e.stringField("anonymousId", anonymousID, true)
	e.stringField("userId", userID, true)
}

func (e *encoder) message(v interface{}) {
	switch m := v.(type) {
	case *Identify:
		e.head(m.Context, m.Integrations)
		e.mapField("traits", m.Traits)
		e.ids(m.AnonymousId, m.UserId)
		e.common(&m.Message)
	case *Track:
		e.head(m.Context, m.Integrations)
		e.mapField("properties", m.Properties)
		e.ids(m.AnonymousId, m.UserId)
		e.stringField("event", m.Event, false)
		e.common(&m.Message)
	case *Page:
		e.head(m.Context, m.Integrations)
		e.mapField("properties", m.Traits)
		e.ids(m.AnonymousId, m.UserId)
		e.stringField("category", m.Category, true)
		e.stringField("name", m.Name, true)
		e.common(&m.Message)
	case *Group:
		e.head(m.Context, m.Integrations)
		e.mapField("traits", m.Traits)
		e.ids(m.AnonymousId, m.UserId)
		e.stringField("groupId", m.GroupId, false)
		e.common(&m.Message)
	case *Alias:
		e.begin()
		e.stringField("previousId", m.PreviousId, false)
		e.stringField("userId", m.UserId, false)
		e.common(&m.Message)
	default:
		e.failed = true
		return
	}
	e.buf = append(e.buf, '}')
}

// begin opens the message object; name writes a comma before every field
// but the first.
func (e *encoder) begin() { e.buf = append(e.buf, '{') }

func (e *encoder) common(m *Message) {
	e.stringField("type", m.Type, true)
	e.stringField("messageId", m.MessageId, true)
	e.stringField("timestamp", m.Timestamp, true)
	e.stringField("sentAt", m.SentAt, true)
}

// name writes the separator and a field name that needs no escaping.
func (e *encoder) name(n string) {
	if e.buf[len(e.buf)-1] != '{' {
		e.buf = append(e.buf, ',')
	}
	e.buf = append(e.buf, '"')
	e.buf = append(e.buf, n...)
	e.buf = append(e.buf, '"', ':')
}

func (e *encoder) stringField(n, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	e.name(n)
	e.string(v)
}

// mapField writes a map[string]interface{} field tagged omitempty.
func (e *encoder) mapField(n string, m map[string]interface{}) {
	if len(m) == 0 {
		return
	}
	e.name(n)
	e.object(m)
}

func (e *encoder) value(v interface{}) {
	if e.failed {
		return
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		e.string(x)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case float64:
		e.float(x, 64)
	case float32:
		e.float(float64(x), 32)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int16:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int8:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case uint:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
	case uint32:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint16:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint8:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case map[string]interface{}:
		e.object(x)
	case []interface{}:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return
		}
		if !e.enter() {
			return
		}
		e.buf = append(e.buf, '[')
		for i, item := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.value(item)
		}
		e.buf = append(e.buf, ']')
		e.depth--
	case []string:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.buf = append(e.buf, '[')
		for i, s := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.string(s)
		}
		e.buf = append(e.buf, ']')
	default:
		e.failed = true
	}
}

func (e *encoder) enter() bool {
	if e.depth++; e.depth > maxDepth {
		e.failed = true
		return false
	}
	return true
}

// object writes a map with its keys sorted, as encoding/json does.
func (e *encoder) object(m map[string]interface{}) {
	if m == nil {
		e.buf = append(e.buf, "null"...)
		return
	}
	if !e.enter() {
		return
	}
	start := len(e.pairs)
	for k, v := range m {
		e.pairs = append(e.pairs, pair{k, v})
	}
	end := len(e.pairs)
	pairs := e.pairs[start:end]
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.key, b.key) })
	e.buf = append(e.buf, '{')
	for i, p := range pairs {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.string(p.key)
		e.buf = append(e.buf, ':')
		e.value(p.value)
	}
	e.buf = append(e.buf, '}')
	clear(e.pairs[start:end]) // do not keep the caller's values alive in the pool
	e.pairs = e.pairs[:start]
	e.depth--
}

// float writes a number as encoding/json does (ES6 style); NaN and the
// infinities fail, so that json.Marshal reports them.
func (e *encoder) float(f float64, bits int) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.failed = true
		return
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b := strconv.AppendFloat(e.buf, f, format, -1, bits)
	if format == 'e' { // e-09 → e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	e.buf = b
}

const hexDigits = "0123456789abcdef"

// plain marks the ASCII bytes written as they are: printable, and not one
// of " \ < > &.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// string writes s quoted, escaped as encoding/json does by default:
// control characters, quote and backslash, the HTML characters < > &,
// U+2028 and U+2029; invalid UTF-8 becomes U+FFFD.
func (e *encoder) string(s string) {
	b := append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	e.buf = append(b, '"')
}
