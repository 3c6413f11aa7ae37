// The transaction layer (RFC 3261 §17) lives here; dialogs and event subscriptions follow.
