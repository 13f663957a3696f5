package stream

import (
	"bytes"
	"fmt"
	"strconv"
)

// ResultKind tells a window's final value from an update.
type ResultKind byte

// Result kinds, the first word of a result line.
const (
	// Final: the window has closed (stream time passed its end plus the grace period); its value will not
	// change. After a crash it may be published again, with the same value (at-least-once).
	Final ResultKind = 'F'
	// Update: the value so far of a window still open (WindowedConfig.Updates).
	Update ResultKind = 'U'
)

// Result is one published aggregate: the value of one key in one window [Start, End) (ms since 1970; a
// session's End is its last message's time + 1).
//
// On the output topic a result is one text line, readable with any consumer:
//
//	F 1733050260000 1733050320000 42 page-7
//	^ ^             ^             ^  ^
//	| start ms      end ms        |  key: the rest of the line, as is
//	kind: F final, U update       value (int64, decimal)
type Result struct {
	Kind       ResultKind
	Start, End int64
	Value      int64
	Key        []byte
}

// AppendResult appends r's line (without a newline) to dst.
func AppendResult(dst []byte, r Result) []byte {
	dst = append(dst, byte(r.Kind), ' ')
	dst = strconv.AppendInt(dst, r.Start, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, r.End, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, r.Value, 10)
	dst = append(dst, ' ')
	return append(dst, r.Key...)
}

// ParseResult reads a result line; Key aliases b.
func ParseResult(b []byte) (Result, error) {
	var r Result
	bad := func(why string) (Result, error) {
		return Result{}, fmt.Errorf("%w: %q: %s", ErrBadResult, clip(b), why)
	}
	if len(b) < 2 || (b[0] != byte(Final) && b[0] != byte(Update)) || b[1] != ' ' {
		return bad("no kind F or U")
	}
	r.Kind = ResultKind(b[0])
	rest := b[2:]
	for i, p := range [...]*int64{&r.Start, &r.End, &r.Value} {
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			return bad(fmt.Sprintf("%d numbers, want 3 and a key", i))
		}
		v, ok := parseInt(rest[:j])
		if !ok {
			return bad(fmt.Sprintf("%q is not a number", rest[:j]))
		}
		*p = v
		rest = rest[j+1:]
	}
	if r.End <= r.Start {
		return bad("end before start")
	}
	r.Key = rest
	return r, nil
}
