package analytics

import "time"

// Message holds the fields common to every message. It is embedded in
// Identify, Track, Page, Group, Alias and Batch.
//
// Type is set by the Client method that queues the message. MessageId (a
// random UUID v4) and Timestamp (the time of the call) are filled in only
// when they are empty, so a caller's values are kept; pass a Timestamp to
// import historical data. A caller's values must be what the server
// accepts, or the call returns an error: a MessageId of 1 to 100
// characters with no control character and no space at either end, and a
// Timestamp in ISO 8601 (such as 2009-11-10T23:00:00Z, with an optional
// fraction and offset, UTC when the offset is absent; seconds may be left
// out, and a date alone means midnight UTC). SentAt is normally
// left empty: the Client sets it on the batch.
type Message struct {
	Type      string `json:"type,omitempty"`
	MessageId string `json:"messageId,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
	SentAt    string `json:"sentAt,omitempty"`
}

// Batch is the JSON body of a POST /v1/batch request: the messages, the
// batch-level context (DefaultContext) and the embedded Message, whose
// MessageId and SentAt identify the request. The Client builds batches
// itself; the type is kept for compatibility with analytics-go v2.
type Batch struct {
	Context  map[string]interface{} `json:"context,omitempty"`
	Messages []interface{}          `json:"batch"`
	Message
}

// Identify ties a user to their traits. UserId or AnonymousId is required.
// Context and Integrations are passed through unchanged; Integrations maps
// destination names to booleans to turn destinations on or off.
type Identify struct {
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	Traits       map[string]interface{} `json:"traits,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	UserId       string                 `json:"userId,omitempty"`
	Message
}

// Group associates a user with a group. GroupId, and UserId or AnonymousId,
// are required. Context and Integrations are passed through unchanged.
type Group struct {
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	Traits       map[string]interface{} `json:"traits,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	UserId       string                 `json:"userId,omitempty"`
	GroupId      string                 `json:"groupId"`
	Message
}

// Track records an action a user performed. Event, and UserId or
// AnonymousId, are required. Context and Integrations are passed through
// unchanged.
type Track struct {
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	Properties   map[string]interface{} `json:"properties,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	UserId       string                 `json:"userId,omitempty"`
	Event        string                 `json:"event"`
	Message
}

// Page records a page view. UserId or AnonymousId is required. Traits holds
// the page's properties (recognised keys: url, title, referrer, path) and,
// as in analytics-go v2, is serialized under the JSON key "properties".
// Context and Integrations are passed through unchanged.
type Page struct {
	Context      map[string]interface{} `json:"context,omitempty"`
	Integrations map[string]interface{} `json:"integrations,omitempty"`
	Traits       map[string]interface{} `json:"properties,omitempty"`
	AnonymousId  string                 `json:"anonymousId,omitempty"`
	UserId       string                 `json:"userId,omitempty"`
	Category     string                 `json:"category,omitempty"`
	Name         string                 `json:"name,omitempty"`
	Message
}

// Alias merges two user identities: PreviousId becomes UserId. Both are
// required.
type Alias struct {
	PreviousId string `json:"previousId"`
	UserId     string `json:"userId"`
	Message
}

// fill sets the type, and the id and timestamp when they are empty.
func (m *Message) fill(typ string, id func() string, now func() time.Time) {
	m.Type = typ
	if m.MessageId == "" {
		m.MessageId = id()
	}
	if m.Timestamp == "" {
		m.Timestamp = formatTime(now())
	}
}
