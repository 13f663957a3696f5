package stomp

import "errors"

// Sentinel errors, wrapped with context.
var (
	ErrMalformed     = errors.New("stomp: malformed frame")
	ErrBadEscape     = errors.New("stomp: undefined escape sequence in header")
	ErrFrameTooLarge = errors.New("stomp: frame too large")
	ErrServer        = errors.New("stomp: ERROR frame from server")
	ErrClosed        = errors.New("stomp: connection closed")
)
