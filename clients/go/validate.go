package analytics

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The validators check the same fields in the same order as analytics-go v2,
// so a message with several problems reports the same one.

func validateIdentify(m *Identify) error {
	return requireIdentity(m.UserId, m.AnonymousId)
}

func validateTrack(m *Track) error {
	if m.Event == "" {
		return errMissingEvent
	}
	return requireIdentity(m.UserId, m.AnonymousId)
}

func validatePage(m *Page) error {
	return requireIdentity(m.UserId, m.AnonymousId)
}

func validateGroup(m *Group) error {
	if m.GroupId == "" {
		return errMissingGroupId
	}
	return requireIdentity(m.UserId, m.AnonymousId)
}

func validateAlias(m *Alias) error {
	if m.UserId == "" {
		return errMissingUserId
	}
	if m.PreviousId == "" {
		return errMissingPreviousId
	}
	return nil
}

func requireIdentity(userId, anonymousId string) error {
	if userId == "" && anonymousId == "" {
		return errMissingIdentity
	}
	return nil
}

// maxMessageIdChars is the server's limit on a messageId, in characters.
const maxMessageIdChars = 100

// validateMessage checks the fields a caller may set on Message as the
// Sluice server checks them, so that a value it would refuse is returned
// by the call instead of sinking the batch it travels in. Empty fields are
// filled in by the Client (MessageId, Timestamp) or left out (SentAt).
func validateMessage(m *Message) error {
	if m.MessageId != "" && !validMessageId(m.MessageId) {
		return errInvalidMessageId
	}
	if m.Timestamp != "" && !validTimestamp(m.Timestamp) {
		return errInvalidTimestamp
	}
	if m.SentAt != "" && !validTimestamp(m.SentAt) {
		return errInvalidSentAt
	}
	return nil
}

// validMessageId reports whether id is 1 to 100 characters (not bytes),
// none of them a control character, with no space at either end: the
// server sends it in a header of every delivery, where a control character
// is not allowed and HTTP strips surrounding spaces.
func validMessageId(id string) bool {
	if n := utf8.RuneCountInString(id); n < 1 || n > maxMessageIdChars {
		return false
	}
	if strings.HasPrefix(id, " ") || strings.HasSuffix(id, " ") {
		return false
	}
	return strings.IndexFunc(id, unicode.IsControl) < 0
}
