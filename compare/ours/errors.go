package ours

import "errors"

// Errors of the adapter.
var (
	ErrNotFlushed = errors.New("ours: broker did not expose every message")
	ErrBadSpec    = errors.New("ours: bad test spec")
)
