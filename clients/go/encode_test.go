package analytics

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// trickyStrings exercise every escaping rule of encoding/json.
var trickyStrings = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff utf8 \xe2\x28\xa1", "\u00e9\xc3",
}

var trickyNumbers = []interface{}{
	0.0, -0.0, 1.0, -1.5, 39.95, 1e-7, 1e-6, 1e20, 1e21, 123456789.123456789, math.MaxFloat64,
	math.SmallestNonzeroFloat64, float32(1e-7), float32(3.4e38), float32(0.1),
	0, -7, math.MaxInt64, math.MinInt64, int8(-8), int16(16), int32(-32), uint(7), uint8(8), uint16(16),
	uint32(32), uint64(math.MaxUint64),
}

func TestEncoderMatchesEncodingJSON(t *testing.T) {
	nested := map[string]interface{}{
		"z": nil, "a": []interface{}{1, "x", nil, map[string]interface{}{"k": true}},
		"strs": []string{"a", "<b>"}, "nilStrs": []string(nil), "nilList": []interface{}(nil),
		"nilMap": map[string]interface{}(nil), "empty": map[string]interface{}{}, "emptyList": []interface{}{},
		"f": false, "t": true,
	}
	for _, s := range trickyStrings {
		nested[s] = s
	}
	for i, n := range trickyNumbers {
		nested["n"+string(rune('a'+i))] = n
	}
	msgs := []interface{}{
		&Identify{}, &Track{}, &Page{}, &Group{}, &Alias{},
		&Identify{UserId: "u", AnonymousId: "a", Traits: nested, Context: nested, Integrations: map[string]interface{}{"All": false}},
		&Track{UserId: "u", Event: "e", Properties: nested, Message: Message{Type: "track", MessageId: "m", Timestamp: "t", SentAt: "s"}},
		&Page{UserId: "u", Name: "n", Category: "c", Traits: nested},
		&Group{AnonymousId: "a", GroupId: "g", Traits: nested},
		&Alias{UserId: "<u>", PreviousId: "p\u2028"},
	}
	for _, s := range trickyStrings {
		msgs = append(msgs, &Track{UserId: s, Event: s, AnonymousId: s, Message: Message{MessageId: s}})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		msgs = append(msgs, &Track{UserId: "u", Event: "e", Properties: randomMap(rng, 0), Context: randomMap(rng, 2)})
	}
	for _, m := range msgs {
		assertEncodesLikeJSON(t, m)
	}
}

func TestEncoderFallsBackForOtherValues(t *testing.T) {
	cyclic := map[string]interface{}{}
	cyclic["self"] = cyclic
	deep := map[string]interface{}{}
	for cur, i := deep, 0; i < 100; i++ {
		next := map[string]interface{}{}
		cur["d"] = next
		cur = next
	}
	for _, v := range []interface{}{
		time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), json.RawMessage(`{"raw": 1}`), json.Number("12.50"),
		struct{ A int }{1}, &struct{ B string }{"b"}, []int{1, 2}, map[string]string{"k": "v"},
		math.NaN(), math.Inf(1), float32(math.Inf(-1)), cyclic, deep, func() {},
	} {
		assertEncodesLikeJSON(t, &Track{UserId: "u", Event: "e", Properties: map[string]interface{}{"v": v, "w": 1}})
	}
}

func assertEncodesLikeJSON(t *testing.T, m interface{}) {
	t.Helper()
	want, wantErr := json.Marshal(m)
	got, err := encodeMessage(m)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("error %v, encoding/json says %v", err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%s\nencoding/json\n%s", got, want)
	}
}

func randomMap(rng *rand.Rand, depth int) map[string]interface{} {
	n := rng.IntN(6)
	if n == 0 && rng.IntN(2) == 0 {
		return nil
	}
	m := make(map[string]interface{}, n)
	for range n {
		m[randomString(rng)] = randomValue(rng, depth+1)
	}
	return m
}

func randomValue(rng *rand.Rand, depth int) interface{} {
	switch k := rng.IntN(9); {
	case k == 0:
		return nil
	case k == 1:
		return randomString(rng)
	case k == 2:
		return rng.IntN(2) == 0
	case k == 3:
		return math.Float64frombits(rng.Uint64()) // NaN or Inf now and then: the fallback
	case k == 4:
		return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(50)-25))
	case k == 5:
		return rng.Int64() >> rng.IntN(64)
	case k == 6 && depth < 4:
		return randomMap(rng, depth)
	case k == 7 && depth < 4:
		list := make([]interface{}, rng.IntN(4))
		for i := range list {
			list[i] = randomValue(rng, depth+1)
		}
		return list
	default:
		return trickyNumbers[rng.IntN(len(trickyNumbers))]
	}
}

func randomString(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return trickyStrings[rng.IntN(len(trickyStrings))]
	}
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteRune(rune(rng.IntN(0x3000)))
	}
	return b.String()
}
