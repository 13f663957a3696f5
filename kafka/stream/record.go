package stream

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/kafkarepro/kafkarepro/kafka/audit"
)

// Record is one input message as a task's processors see it. Key and Value alias the fetched bytes: they are
// valid during Process only (copy what is kept; the window state keeps its keys interned).
type Record struct {
	Topic      string
	Partition  string // the registry's name "<brokerid>-<partition>" (docs/PROTOCOL.md §5)
	Offset     int64  // the message's byte offset in its partition (§3.1)
	NextOffset int64  // where to resume after it: what a checkpoint records
	Time       int64  // event time, milliseconds since 1970 UTC
	Key        []byte // the key KeyFunc found
	Value      []byte // the payload (inside the audit envelope for a Stage with Envelope set)
}

// KeyFunc finds the key of a message in its payload (Record.Value). The result may alias the payload. An
// error means the message has no usable key: the task counts it as skipped, with the error as its reason.
type KeyFunc func(payload []byte) ([]byte, error)

// TimeFunc finds the event time of a message in its payload, in milliseconds since 1970 UTC. An error means
// the message has no usable time: a counted skip, as for KeyFunc.
type TimeFunc func(payload []byte) (int64, error)

// ValueFunc finds the number a Sum, Min, Max or Fold aggregates (the record's key and time are set). An
// error is a counted skip.
type ValueFunc func(r *Record) (int64, error)

// Field returns the i-th field (from 0) of p split at sep, without allocating; ok is false when p has fewer
// fields.
func Field(p []byte, sep byte, i int) (field []byte, ok bool) {
	for ; i > 0; i-- {
		j := bytes.IndexByte(p, sep)
		if j < 0 {
			return nil, false
		}
		p = p[j+1:]
	}
	if j := bytes.IndexByte(p, sep); j >= 0 {
		p = p[:j]
	}
	return p, true
}

// KeyField is the KeyFunc "field i of the payload split at sep"; a missing or empty field is an error (a
// counted skip).
func KeyField(sep byte, i int) KeyFunc {
	return func(p []byte) ([]byte, error) {
		f, ok := Field(p, sep, i)
		if !ok || len(f) == 0 {
			return nil, fmt.Errorf("%w: key: no field %d (separator %q) in %q", ErrSkip, i, sep, clip(p))
		}
		return f, nil
	}
}

// TimeField is the TimeFunc "field i of the payload split at sep, a decimal number of milliseconds since
// 1970"; a missing field or one that is not a number is an error (a counted skip).
func TimeField(sep byte, i int) TimeFunc {
	return func(p []byte) (int64, error) {
		f, ok := Field(p, sep, i)
		if !ok {
			return 0, fmt.Errorf("%w: time: no field %d (separator %q) in %q", ErrSkip, i, sep, clip(p))
		}
		ms, ok := parseInt(f)
		if !ok {
			return 0, fmt.Errorf("%w: time: field %d is %q, not milliseconds", ErrSkip, i, clip(f))
		}
		return ms, nil
	}
}

// ValueField is the ValueFunc "field i of the value split at sep, a decimal integer".
func ValueField(sep byte, i int) ValueFunc {
	return func(r *Record) (int64, error) {
		f, ok := Field(r.Value, sep, i)
		if !ok {
			return 0, fmt.Errorf("%w: value: no field %d (separator %q) in %q", ErrSkip, i, sep, clip(r.Value))
		}
		v, ok := parseInt(f)
		if !ok {
			return 0, fmt.Errorf("%w: value: field %d is %q, not an integer", ErrSkip, i, clip(f))
		}
		return v, nil
	}
}

// AuditTime is the TimeFunc of audited messages: the time in the audit envelope (package audit) the
// producer wrote when it made the message (§4: "each message carries the timestamp ... when they are
// generated"). A payload that is not an envelope is an error (a counted skip).
func AuditTime(p []byte) (int64, error) {
	ms, _, err := audit.EnvelopeTime(p)
	if err != nil {
		return 0, fmt.Errorf("%w: time: %v", ErrSkip, err)
	}
	return ms, nil
}

// parseInt parses a decimal int64 (an optional '-') without allocating.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<63-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if !neg && v > 1<<63-1 {
		return 0, false
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// clip shortens what an error quotes.
func clip(p []byte) []byte {
	if len(p) > 64 {
		return p[:64]
	}
	return p
}

// quoteKey is a key as an error or log line shows it.
func quoteKey(k []byte) string { return strconv.Quote(string(clip(k))) }
