package analytics

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
