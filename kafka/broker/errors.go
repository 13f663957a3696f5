package broker

import "errors"

// ErrConfig is wrapped by every configuration error, together with the key,
// the value and the file it came from.
var ErrConfig = errors.New("broker: bad configuration")

// errMemoryClosed: a request was not read because the broker is shutting
// down while it waited for the request memory budget (memory.go).
var errMemoryClosed = errors.New("broker: shutting down, request not read")

// errAnswererClosed: an acks=-1 produce was not queued for its answer, or
// the answers queued before a request were not all written, because the
// connection or the broker is ending (ackedanswers.go).
var errAnswererClosed = errors.New("broker: connection ending, acks=-1 answers not written")

// errBodyTooSlow: a request body over 64 KiB did not keep arriving at
// request.min.bytes.per.sec; the connection is closed.
var errBodyTooSlow = errors.New("broker: request body arriving too slowly")
