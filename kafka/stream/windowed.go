package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// WindowedConfig describes a windowed aggregation: §6's "window-based counting", per key.
type WindowedConfig struct {
	Window Window
	// Grace is how long, in event time, a window stays open after its end for messages that arrive out of
	// order (tumbling and hopping: a window [s, e) takes messages while stream time < e + Grace). For session
	// windows it is how far behind stream time a message may be. A message later than that is not aggregated:
	// it is counted in Report.Late, never dropped silently. ≥ 0, whole milliseconds.
	Grace time.Duration
	// Aggregation is Count, Sum, Min, Max or a Fold.
	Aggregation Aggregation
	// Output is the topic the results go to (Result lines), checked with kafka/topic's rule before anything
	// is produced.
	Output string
	// Updates also publishes an Update result for every message aggregated: the new value of each of its
	// windows (one message per window the message is in).
	Updates bool
}

func (c WindowedConfig) validate() error {
	if err := c.Window.valid(); err != nil {
		return err
	}
	if c.Grace < 0 || c.Grace%time.Millisecond != 0 {
		return fmt.Errorf("%w: grace period %v: must be ≥ 0 and whole milliseconds", ErrBadWindow, c.Grace)
	}
	if err := c.Aggregation.valid(c.Window); err != nil {
		return err
	}
	if err := topic.Validate(c.Output); err != nil {
		return fmt.Errorf("%w: output topic of the %s %s aggregation: %w", ErrBadConfig, c.Window, c.Aggregation.name, err)
	}
	return nil
}

// Windowed checks cfg and returns the factory of its processor, for Stage.Processors.
func Windowed(cfg WindowedConfig) (ProcessorFactory, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return func(string, string) (Processor, error) { return NewWindowed(cfg) }, nil
}

// WindowedAggregate is the Processor of a windowed aggregation. Stream time is the largest event time the
// task has seen; a window closes — its Final results are published, in window order and within a window in
// the order its keys first appeared — as soon as stream time reaches its end plus the grace period (a
// session window: passes its last message's time plus the gap plus the grace period). What it publishes
// depends only on the order of its partition's messages, so a task restored from a checkpoint publishes the
// same results, byte for byte, as one that never stopped.
//
// The counting path allocates nothing per message: a key's value is found with a map lookup on the
// message's bytes, and a key seen before is interned, so a window that reuses a closed window's memory adds
// known keys without allocating.
type WindowedAggregate struct {
	w       Window
	grace   int64
	agg     Aggregation
	out     string
	updates bool

	streamTime int64 // the largest event time seen; math.MinInt64 before any

	// tumbling and hopping windows
	wins   []*winState // open windows, by start
	free   []*winState // closed windows' memory, for reuse
	intern map[string]string

	// session windows
	sidx       map[string]int32 // key → index in skeys
	skeys      []sessKey        // keys with open sessions, in the order they first appeared
	nextExpiry int64            // the earliest end+gap+grace of an open session; math.MaxInt64 if none

	buf, kbuf []byte
}

type winState struct {
	start int64
	idx   map[string]int32 // key → index in keys and vals
	keys  []string
	vals  []int64
}

type session struct{ start, end, val int64 } // end: the last message's time

type sessKey struct {
	key string
	ss  []session // by start, disjoint by more than gap
}

// maxInterned bounds the intern table: with more distinct keys than this it starts again.
const maxInterned = 1 << 20

// NewWindowed returns a windowed aggregation's processor for one task.
func NewWindowed(cfg WindowedConfig) (*WindowedAggregate, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &WindowedAggregate{w: cfg.Window, grace: cfg.Grace.Milliseconds(), agg: cfg.Aggregation, out: cfg.Output,
		updates: cfg.Updates}
	a.reset()
	return a, nil
}

func (a *WindowedAggregate) reset() {
	a.streamTime = math.MinInt64
	for _, ws := range a.wins {
		a.recycle(ws)
	}
	a.wins = a.wins[:0]
	if a.intern == nil {
		a.intern = map[string]string{}
	}
	a.sidx = map[string]int32{}
	a.skeys = nil
	a.nextExpiry = math.MaxInt64
}

// Process implements Processor.
func (a *WindowedAggregate) Process(c *Context, r *Record) error {
	var v int64
	if a.agg.value != nil {
		var err error
		if v, err = a.agg.value(r); err != nil {
			if !errors.Is(err, ErrSkip) {
				err = fmt.Errorf("%w: value: %w", ErrSkip, err)
			}
			return err
		}
	}
	t := r.Time
	if t > a.streamTime {
		a.streamTime = t
	}
	if a.w.kind == KindSession {
		return a.processSession(c, r.Key, t, v)
	}
	applied, late := 0, 0
	for s := a.w.lastStart(t); s > t-a.w.size; s -= a.w.advance {
		if s+a.w.size+a.grace <= a.streamTime {
			late++
			continue
		}
		ws := a.window(s)
		i, ok := ws.idx[string(r.Key)]
		if !ok {
			i = ws.add(a.internKey(r.Key), a.agg.init)
		}
		ws.vals[i] = a.agg.apply(ws.vals[i], v)
		applied++
		if a.updates {
			if err := a.emit(c, Update, s, s+a.w.size, ws.vals[i], r.Key); err != nil {
				return err
			}
		}
	}
	if applied == 0 {
		c.Report.Late++
	} else if late > 0 {
		c.Report.LatePartial++
	}
	return a.closeWindows(c)
}

// window returns the open window starting at s, making it if needed (the common case is the last one).
func (a *WindowedAggregate) window(s int64) *winState {
	i := len(a.wins)
	for i > 0 && a.wins[i-1].start > s {
		i--
	}
	if i > 0 && a.wins[i-1].start == s {
		return a.wins[i-1]
	}
	var ws *winState
	if n := len(a.free); n > 0 {
		ws, a.free = a.free[n-1], a.free[:n-1]
	} else {
		ws = &winState{idx: map[string]int32{}}
	}
	ws.start = s
	a.wins = slices.Insert(a.wins, i, ws)
	return ws
}

func (ws *winState) add(key string, init int64) int32 {
	i := int32(len(ws.keys))
	ws.idx[key] = i
	ws.keys = append(ws.keys, key)
	ws.vals = append(ws.vals, init)
	return i
}

func (a *WindowedAggregate) internKey(k []byte) string {
	if s, ok := a.intern[string(k)]; ok {
		return s
	}
	if len(a.intern) >= maxInterned {
		clear(a.intern)
	}
	s := string(k)
	a.intern[s] = s
	return s
}

func (a *WindowedAggregate) recycle(ws *winState) {
	clear(ws.idx)
	ws.keys, ws.vals = ws.keys[:0], ws.vals[:0]
	a.free = append(a.free, ws)
}

// closeWindows publishes and forgets every window that stream time has closed.
func (a *WindowedAggregate) closeWindows(c *Context) error {
	n := 0
	for n < len(a.wins) && a.wins[n].start+a.w.size+a.grace <= a.streamTime {
		ws := a.wins[n]
		for i, k := range ws.keys {
			if err := a.emit(c, Final, ws.start, ws.start+a.w.size, ws.vals[i], a.keyBytes(k)); err != nil {
				return err
			}
		}
		a.recycle(ws)
		n++
	}
	if n > 0 {
		a.wins = a.wins[:copy(a.wins, a.wins[n:])]
	}
	return nil
}

// keyBytes copies an interned key into a reused buffer (a []byte(k) handed to an Emitter would allocate).
func (a *WindowedAggregate) keyBytes(k string) []byte {
	a.kbuf = append(a.kbuf[:0], k...)
	return a.kbuf
}

func (a *WindowedAggregate) emit(c *Context, kind ResultKind, start, end, v int64, key []byte) error {
	a.buf = AppendResult(a.buf[:0], Result{Kind: kind, Start: start, End: end, Value: v, Key: key})
	if err := c.Out.Emit(a.out, key, a.buf); err != nil {
		return fmt.Errorf("stream: publishing a result to %q: %w", a.out, err)
	}
	c.Report.Emitted++
	return nil
}

// processSession adds a message of key at time t to its key's sessions, merging the sessions it bridges.
func (a *WindowedAggregate) processSession(c *Context, key []byte, t, v int64) error {
	gap := a.w.size
	if t+a.grace < a.streamTime {
		c.Report.Late++
		return a.closeSessions(c)
	}
	i, ok := a.sidx[string(key)]
	if !ok {
		k := a.internKey(key)
		i = int32(len(a.skeys))
		a.sidx[k] = i
		a.skeys = append(a.skeys, sessKey{key: k})
	}
	sk := &a.skeys[i]
	// The sessions within gap of t are consecutive: [lo, hi).
	lo := 0
	for lo < len(sk.ss) && sk.ss[lo].end+gap < t {
		lo++
	}
	hi := lo
	for hi < len(sk.ss) && sk.ss[hi].start-gap <= t {
		hi++
	}
	var m session
	if lo == hi {
		m = session{start: t, end: t, val: a.agg.apply(a.agg.init, v)}
		sk.ss = slices.Insert(sk.ss, lo, m)
	} else {
		m = sk.ss[lo]
		for _, s := range sk.ss[lo+1 : hi] {
			m.end = max(m.end, s.end)
			m.val = a.agg.join(m.val, s.val)
		}
		m.start, m.end = min(m.start, t), max(m.end, t)
		m.val = a.agg.apply(m.val, v)
		sk.ss[lo] = m
		sk.ss = slices.Delete(sk.ss, lo+1, hi)
	}
	a.nextExpiry = min(a.nextExpiry, m.end+gap+a.grace)
	if a.updates {
		if err := a.emit(c, Update, m.start, m.end+1, m.val, key); err != nil {
			return err
		}
	}
	return a.closeSessions(c)
}

// closeSessions publishes and forgets the sessions stream time has closed: those whose last message is more
// than gap + grace behind it, since no message accepted from now on can join them.
func (a *WindowedAggregate) closeSessions(c *Context) error {
	if a.streamTime <= a.nextExpiry {
		return nil
	}
	gap := a.w.size
	a.nextExpiry = math.MaxInt64
	kept := a.skeys[:0]
	for _, sk := range a.skeys {
		n := 0
		for n < len(sk.ss) && sk.ss[n].end+gap+a.grace < a.streamTime {
			s := sk.ss[n]
			if err := a.emit(c, Final, s.start, s.end+1, s.val, a.keyBytes(sk.key)); err != nil {
				return err
			}
			n++
		}
		sk.ss = sk.ss[:copy(sk.ss, sk.ss[n:])]
		if len(sk.ss) == 0 {
			delete(a.sidx, sk.key)
			continue
		}
		for _, s := range sk.ss {
			a.nextExpiry = min(a.nextExpiry, s.end+gap+a.grace)
		}
		a.sidx[sk.key] = int32(len(kept))
		kept = append(kept, sk)
	}
	clear(a.skeys[len(kept):])
	a.skeys = kept
	return nil
}

// State layout (varints, strings length-prefixed):
//
//	kind | stream time | tumbling, hopping: windows n, then per window: start, keys n, per key: key, value
//	                   | session: keys n, then per key: key, sessions n, per session: start, end, value

// AppendState implements Processor.
func (a *WindowedAggregate) AppendState(b []byte) ([]byte, error) {
	b = append(b, byte(a.w.kind))
	b = binary.AppendVarint(b, a.streamTime)
	if a.w.kind == KindSession {
		b = binary.AppendUvarint(b, uint64(len(a.skeys)))
		for _, sk := range a.skeys {
			b = appendBytes(b, []byte(sk.key))
			b = binary.AppendUvarint(b, uint64(len(sk.ss)))
			for _, s := range sk.ss {
				b = binary.AppendVarint(b, s.start)
				b = binary.AppendVarint(b, s.end)
				b = binary.AppendVarint(b, s.val)
			}
		}
		return b, nil
	}
	b = binary.AppendUvarint(b, uint64(len(a.wins)))
	for _, ws := range a.wins {
		b = binary.AppendVarint(b, ws.start)
		b = binary.AppendUvarint(b, uint64(len(ws.keys)))
		for i, k := range ws.keys {
			b = appendBytes(b, []byte(k))
			b = binary.AppendVarint(b, ws.vals[i])
		}
	}
	return b, nil
}

// RestoreState implements Processor.
func (a *WindowedAggregate) RestoreState(b []byte) error {
	a.reset()
	if len(b) == 0 {
		return nil
	}
	if WindowKind(b[0]) != a.w.kind {
		return fmt.Errorf("%w: the state of a %v window, this aggregation has %v windows", ErrBadCheckpoint, WindowKind(b[0]), a.w.kind)
	}
	d := &decoder{b: b[1:]}
	a.streamTime = d.varint()
	if a.w.kind == KindSession {
		n := d.count(math.MaxInt32)
		for range n {
			k := a.internKey(d.bytes())
			sk := sessKey{key: k}
			for range d.count(math.MaxInt32) {
				s := session{start: d.varint(), end: d.varint(), val: d.varint()}
				sk.ss = append(sk.ss, s)
				a.nextExpiry = min(a.nextExpiry, s.end+a.w.size+a.grace)
			}
			a.sidx[k] = int32(len(a.skeys))
			a.skeys = append(a.skeys, sk)
		}
	} else {
		n := d.count(math.MaxInt32)
		for range n {
			ws := a.window(d.varint())
			for range d.count(math.MaxInt32) {
				k := d.bytes()
				v := d.varint()
				if d.err != nil {
					break
				}
				ws.add(a.internKey(k), v)
			}
		}
	}
	if err := d.end(); err != nil {
		a.reset()
		return err
	}
	return nil
}
