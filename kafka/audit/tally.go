package audit

import (
	"fmt"
	"sort"
	"time"
)

// Tally checks one topic: it adds up the monitoring events (what was
// produced) and the messages found (what arrived), per window, and reports
// what is missing and what arrived more than once.
type Tally struct {
	Topic    string
	windowMs int64
	events   map[eventKey]bool
	produced map[int64]int64
	seen     map[msgKey]bool
	distinct map[int64]int64
	dups     map[int64]int64
	// NotAudited counts messages of the topic without an envelope;
	// BadEvents the messages of the audit topic that are not events (both
	// are reported, neither stops the check).
	NotAudited, BadEvents int64
}

type eventKey struct {
	producer string
	event    uint64
}

type msgKey struct {
	producer uint32
	seq      uint32
}

// NewTally starts the check of topic.
func NewTally(topic string) *Tally {
	return &Tally{Topic: topic, events: map[eventKey]bool{}, produced: map[int64]int64{},
		seen: map[msgKey]bool{}, distinct: map[int64]int64{}, dups: map[int64]int64{}}
}

// AddEvent adds one message of the audit topic. Events of other topics are
// skipped, events already seen ignored. It returns ErrNotEvent for a message
// that is not an event (counted in BadEvents) and an error when the events
// disagree on the window length.
func (t *Tally) AddEvent(p []byte) error {
	e, err := ParseEvent(p)
	if err != nil {
		t.BadEvents++
		return err
	}
	if e.Topic != t.Topic {
		return nil
	}
	if t.windowMs == 0 {
		t.windowMs = e.WindowMs
	} else if e.WindowMs != t.windowMs {
		return fmt.Errorf("audit: events of %s use windows of %d ms and of %d ms", t.Topic, t.windowMs, e.WindowMs)
	}
	k := eventKey{e.Producer, e.Event}
	if t.events[k] {
		return nil
	}
	t.events[k] = true
	t.produced[e.Window] += e.Count
	return nil
}

// WindowMs is the window length the events use (0 before the first event).
func (t *Tally) WindowMs() int64 { return t.windowMs }

// AddMessage adds one message of the topic (its payload). The window length
// must be known: add the events first.
func (t *Tally) AddMessage(p []byte) {
	e, err := OpenEnvelope(p)
	if err != nil || t.windowMs == 0 {
		t.NotAudited++
		return
	}
	w := WindowOf(e.Time, time.Duration(t.windowMs)*time.Millisecond)
	k := msgKey{e.Producer, e.Seq}
	if t.seen[k] {
		t.dups[w]++
		return
	}
	t.seen[k] = true
	t.distinct[w]++
}

// Row is one window of the report.
type Row struct {
	Window     time.Time
	Produced   int64 // by the monitoring events
	Consumed   int64 // distinct messages found
	Missing    int64 // produced − consumed, when positive
	Duplicated int64 // messages found more than once, counting each extra copy
}

// Rows is the report, one row per window, oldest first.
func (t *Tally) Rows() []Row {
	ws := map[int64]bool{}
	for w := range t.produced {
		ws[w] = true
	}
	for w := range t.distinct {
		ws[w] = true
	}
	var out []Row
	for w := range ws {
		r := Row{Window: time.UnixMilli(w).UTC(), Produced: t.produced[w], Consumed: t.distinct[w], Duplicated: t.dups[w]}
		if r.Produced > r.Consumed {
			r.Missing = r.Produced - r.Consumed
		}
		out = append(out, r)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Window.Before(out[b].Window) })
	return out
}
