// Package audit is the paper's §4 audit: "each message carries the timestamp
// and the server name when they are generated. We instrument each producer
// such that it periodically generates a monitoring event, which records the
// number of messages published by that producer for each topic within a
// fixed time window. The producer publishes the monitoring events to Kafka in
// a separate topic. The consumers can then count the number of messages that
// they have received from a given topic and validate those counts with the
// monitoring events to validate the correctness of data."
//
// # The envelope
//
// An audited message's payload is an envelope around the application's
// bytes (big-endian):
//
//	+------+---------+----------+----------+--------+--------+--------+-------------+
//	| 0xA7 | version | time     | producer | seq    | host n | host   | application |
//	| 1 B  | 1 B = 1 | int64 ms | uint32   | uint32 | int16  | n B    | the rest    |
//	+------+---------+----------+----------+--------+--------+--------+-------------+
//	 0      1         2          10         14       18       20       20+n
//
// time is when the message was made (milliseconds since 1970, UTC) and
// decides its window; host names the machine that made it. producer is a
// random id chosen by each audited producer when it starts and seq counts
// its messages from 0, so a checker can tell a message seen twice (at-least-
// once delivery, a mirror restarted) from two messages: it counts missing and
// duplicated messages separately, not only a difference of totals.
//
// # Monitoring events
//
// Every publish interval, and when it closes, an audited producer sends to
// the audit topic (default "audit") one event per (topic, window) it
// produced to since its last event, as one JSON object per message:
//
//	{"type":"produced","host":"web-7","producer":"8c1f03aa","event":12,
//	 "topic":"clicks","window":1733050260000,"window_ms":60000,"count":5012}
//
// window is the window's start in ms and a multiple of window_ms; count is
// the number of messages of that window this producer published since its
// previous event for it, so a window's total is the sum over events. event
// numbers each producer's events from 0: a checker ignores an event it has
// already seen (the audit topic may itself be mirrored, and mirrored twice).
package audit

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Envelope layout.
const (
	envelopeMagic   = 0xA7
	envelopeVersion = 1
	envelopeFixed   = 1 + 1 + 8 + 4 + 4 + 2
	// MaxHost is the longest host name an envelope carries.
	MaxHost = 255
)

// Errors of the package, wrapped with the input that failed.
var (
	// ErrNotEnvelope: a payload that is not an audit envelope.
	ErrNotEnvelope = errors.New("audit: not an audit envelope")
	// ErrNotEvent: a message of the audit topic that is not a monitoring event.
	ErrNotEvent = errors.New("audit: not a monitoring event")
	// ErrBadConfig: an audit setting out of range.
	ErrBadConfig = errors.New("audit: bad configuration")
)

// Envelope is an audited message's header and the application's bytes.
type Envelope struct {
	Time     time.Time
	Host     string
	Producer uint32
	Seq      uint32
	Payload  []byte // a view into the message
}

// AppendEnvelope appends e (its Payload after the header) to dst.
func AppendEnvelope(dst []byte, e Envelope) []byte {
	host := e.Host
	if len(host) > MaxHost {
		host = host[:MaxHost]
	}
	dst = append(dst, envelopeMagic, envelopeVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.Time.UnixMilli()))
	dst = binary.BigEndian.AppendUint32(dst, e.Producer)
	dst = binary.BigEndian.AppendUint32(dst, e.Seq)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(host)))
	dst = append(dst, host...)
	return append(dst, e.Payload...)
}

// OpenEnvelope reads the envelope of an audited message's payload.
func OpenEnvelope(p []byte) (Envelope, error) {
	if len(p) < envelopeFixed || p[0] != envelopeMagic {
		return Envelope{}, fmt.Errorf("%w: %d bytes starting %x", ErrNotEnvelope, len(p), p[:min(len(p), 4)])
	}
	if p[1] != envelopeVersion {
		return Envelope{}, fmt.Errorf("%w: version %d, we read version %d", ErrNotEnvelope, p[1], envelopeVersion)
	}
	n := int(binary.BigEndian.Uint16(p[18:]))
	if n > MaxHost || envelopeFixed+n > len(p) || !utf8.Valid(p[20:20+n]) {
		return Envelope{}, fmt.Errorf("%w: host of %d bytes in a %d-byte payload", ErrNotEnvelope, n, len(p))
	}
	return Envelope{
		Time:     time.UnixMilli(int64(binary.BigEndian.Uint64(p[2:]))).UTC(),
		Producer: binary.BigEndian.Uint32(p[10:]),
		Seq:      binary.BigEndian.Uint32(p[14:]),
		Host:     string(p[20 : 20+n]),
		Payload:  p[20+n:],
	}, nil
}

// Event is one monitoring event.
type Event struct {
	Type     string `json:"type"` // "produced"
	Host     string `json:"host"`
	Producer string `json:"producer"` // the producer id in hex, as in the envelope
	Event    uint64 `json:"event"`
	Topic    string `json:"topic"`
	Window   int64  `json:"window"`    // the window's start, ms since 1970
	WindowMs int64  `json:"window_ms"` // its length
	Count    int64  `json:"count"`
}

// Marshal encodes the event as its JSON line.
func (e Event) Marshal() []byte {
	b, _ := json.Marshal(e)
	return b
}

// ParseEvent decodes and checks a message of the audit topic.
func ParseEvent(p []byte) (Event, error) {
	var e Event
	d := json.NewDecoder(bytes.NewReader(p))
	d.DisallowUnknownFields()
	if err := d.Decode(&e); err != nil {
		return Event{}, fmt.Errorf("%w: %q: %v", ErrNotEvent, clip(p), err)
	}
	switch {
	case e.Type != "produced":
		return Event{}, fmt.Errorf("%w: type %q in %q", ErrNotEvent, e.Type, clip(p))
	case e.Topic == "" || e.Producer == "":
		return Event{}, fmt.Errorf("%w: no topic or producer in %q", ErrNotEvent, clip(p))
	case e.WindowMs <= 0 || e.Window%e.WindowMs != 0:
		return Event{}, fmt.Errorf("%w: window %d is not a multiple of window_ms %d in %q", ErrNotEvent, e.Window, e.WindowMs, clip(p))
	case e.Count < 0:
		return Event{}, fmt.Errorf("%w: count %d in %q", ErrNotEvent, e.Count, clip(p))
	}
	return e, nil
}

func clip(p []byte) []byte {
	if len(p) > 80 {
		return p[:80]
	}
	return p
}

// WindowOf is the start of the window of length w that holds t, in ms.
func WindowOf(t time.Time, w time.Duration) int64 {
	ms, wm := t.UnixMilli(), w.Milliseconds()
	return ms - ((ms%wm)+wm)%wm
}

// EnvelopeTime reads only the time of an audited message's envelope, in ms since 1970, and the application's
// bytes after the header, without allocating (kafka/stream takes event time from it for every message).
func EnvelopeTime(p []byte) (ms int64, payload []byte, err error) {
	if len(p) < envelopeFixed || p[0] != envelopeMagic {
		return 0, nil, fmt.Errorf("%w: %d bytes starting %x", ErrNotEnvelope, len(p), p[:min(len(p), 4)])
	}
	if p[1] != envelopeVersion {
		return 0, nil, fmt.Errorf("%w: version %d, we read version %d", ErrNotEnvelope, p[1], envelopeVersion)
	}
	n := int(binary.BigEndian.Uint16(p[18:]))
	if n > MaxHost || envelopeFixed+n > len(p) {
		return 0, nil, fmt.Errorf("%w: host of %d bytes in a %d-byte payload", ErrNotEnvelope, n, len(p))
	}
	return int64(binary.BigEndian.Uint64(p[2:])), p[20+n:], nil
}
