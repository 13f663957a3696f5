// Package topic holds the one rule for topic names, shared by every part of
// the system that turns a name into something else: the log (a directory
// "<log.dir>/<topic>-<partition>", docs/PROTOCOL.md §3), the ZooKeeper registry (a node
// "/brokers/topics/<topic>", docs/PROTOCOL.md §5) and the clients (which would otherwise
// send requests the broker silently drops).
//
// A name becomes a path, so it is checked before any path is built from it:
// 1 to MaxLength bytes of letters, digits, '.', '_' and '-', and neither "."
// nor "..". With no '/' allowed, "../x" cannot leave the log directory.
package topic

import (
	"fmt"
)

// MaxLength bounds a name so that "<topic>-<partition>" (a partition number
// of up to 10 digits) still fits in a 255-byte file name.
const MaxLength = 255 - 1 - 10

// Validate reports whether name may be used as a topic.
func Validate(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalid)
	case len(name) > MaxLength:
		return fmt.Errorf("%w: %d bytes long, the limit is %d", ErrInvalid, len(name), MaxLength)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalid, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return fmt.Errorf("%w: %q has the character %q at byte %d (allowed: letters, digits, '.', '_', '-')",
				ErrInvalid, name, c, i)
		}
	}
	return nil
}
