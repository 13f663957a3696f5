package message

import "errors"

// Sentinel errors. Errors returned by this package wrap one of them with the
// offset and sizes involved; test with errors.Is.
var (
	// ErrCorrupt: a message's structure is impossible (N too small for its magic).
	ErrCorrupt = errors.New("message: corrupt message")
	// ErrBadMagic: a magic byte other than 0 or 1.
	ErrBadMagic = errors.New("message: unknown magic")
	// ErrChecksum: the stored CRC does not match the payload.
	ErrChecksum = errors.New("message: CRC mismatch")
	// ErrTruncated: a set ends in the middle of a message where whole
	// messages were required.
	ErrTruncated = errors.New("message: truncated message")
	// ErrUnsupportedCodec: codec bits 3, which no Kafka version defines.
	ErrUnsupportedCodec = errors.New("message: unsupported compression codec")
)

// Errors of compressed wrappers (compress.go, snappy.go, deep.go).
var (
	// ErrBadPayload: a wrapper's compressed payload does not decode.
	ErrBadPayload = errors.New("message: compressed payload does not decode")
	// ErrTooLarge: a wrapper would inflate beyond MaxDecompressedSize.
	ErrTooLarge = errors.New("message: compressed payload inflates beyond the limit")
	// ErrNestedWrapper: a compressed wrapper holds another compressed wrapper.
	ErrNestedWrapper = errors.New("message: compressed wrapper inside a compressed wrapper")
	// ErrNotWrapper: Decompress was given a magic-0 message.
	ErrNotWrapper = errors.New("message: not a wrapper")
)
