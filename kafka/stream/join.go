package stream

// The stream–stream join within a window, the join technique of the paper's §6 ("a library of helpful stream
// utilities, such as different windowing functions or join techniques") for the use its §1 gives first:
// click-through rates, which need the impressions that were not clicked as well as the clicks. One side, the left
// (impressions), is the outer side: every left event comes out exactly once, matched with the first right event
// (click) of its key whose time falls in [left time, left time + window), or unmatched when the window has
// closed without one. A right event that matched nothing is counted, not dropped silently.
//
// A join is local to one task only if both inputs are partitioned on the join key: §6, "semantically
// partitioning messages on the join key during publishing", is what makes every impression and every click of one impression id reach
// the same partition number of their two topics (the producer's key-hash partitioner, kafka/producer), and so the
// same task. JoinCopartitioned checks the two topics' partition lists agree.
//
// Time is event time, in milliseconds, taken from the events. The two inputs are read independently, so one
// can run ahead of the other; the join's stream time is therefore the lesser of the two sides' latest times,
// and its watermark that minus the grace period. An event older than the watermark is late: it is counted per
// side (JoinStats) and has no effect. A left event is decided when the watermark reaches its window's end (no
// right event still to come can fall in its window); a right event waiting for its left is given up when the
// watermark passes it (no left event still to come can be at or before it). Flush decides everything pending, at
// the end of a bounded input.

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Errors of the window join.
var (
	// ErrJoinWindow: a join window of zero or negative length, or a negative grace period.
	ErrJoinWindow = errors.New("stream: bad join window")
	// ErrJoinState: a checkpointed join state that does not decode.
	ErrJoinState = errors.New("stream: bad join state")
)

// JoinResult is one decided left event: the left event and, if one came in its window, the first right
// event of its key that did.
type JoinResult struct {
	Key       string
	LeftTime  int64 // ms
	Left      []byte
	Matched   bool
	RightTime int64 // ms; 0 when not matched
	Right     []byte
	// Matches counts the right events that fell in the window (the first is Right; a double click makes 2).
	Matches int
}

// JoinStats counts what the join saw and did.
type JoinStats struct {
	Left, Right         int64 // events taken in (not late)
	LateLeft, LateRight int64 // events older than the watermark: counted and ignored
	Matched, Unmatched  int64 // left events decided with and without a right event in their window
	ExtraRight          int64 // right events beyond the first in one left event's window
	OrphanRight         int64 // right events given up without a left event whose window held them
	// DuplicateLeft: left events of a key and time already pending (an input published twice, at-least-once),
	// ignored. A copy that comes after its original was decided is older than the watermark: counted as late.
	DuplicateLeft int64
	PendingLeft   int // left events not yet decided
	PendingRight  int // right events still waiting for a left event
}

// WindowJoin is the state of one task's stream–stream join. It is not safe for concurrent use: a task owns it.
type WindowJoin struct {
	window, grace int64 // ms
	emit          func(JoinResult)

	leftMax, rightMax int64 // latest event time seen on each side; math.MinInt64 before the first
	watermark         int64

	left  map[string][]*joinLeft // key → pending left events, oldest first
	right map[string][]*joinRight
	lq    leftQueue  // pending left events by window end
	rq    rightQueue // pending right events by time
	seq   uint64     // arrival order, to break ties deterministically
	stats JoinStats
}

// joinEvent is what a pending event of either side holds: its key, time, value, arrival number and place
// in its side's queue.
type joinEvent struct {
	key       string
	t         int64
	val       []byte
	seq       uint64
	heapIndex int
}

func (e *joinEvent) event() *joinEvent { return e }

type joinLeft struct {
	joinEvent
	matched  bool
	rightT   int64
	rightVal []byte
	matches  int
}

type joinRight struct {
	joinEvent
}

// NewWindowJoin returns an empty join whose right events match a left event of the same key at most window
// after it (and not before it), waiting grace for late events; emit receives every decided left event, in
// the order of their windows' ends.
func NewWindowJoin(window, grace time.Duration, emit func(JoinResult)) (*WindowJoin, error) {
	if window <= 0 || window%time.Millisecond != 0 {
		return nil, fmt.Errorf("%w: window %v (want a positive whole number of milliseconds)", ErrJoinWindow, window)
	}
	if grace < 0 || grace%time.Millisecond != 0 {
		return nil, fmt.Errorf("%w: grace %v (want zero or a positive whole number of milliseconds)", ErrJoinWindow, grace)
	}
	if emit == nil {
		emit = func(JoinResult) {}
	}
	return &WindowJoin{window: window.Milliseconds(), grace: grace.Milliseconds(), emit: emit,
		leftMax: math.MinInt64, rightMax: math.MinInt64, watermark: math.MinInt64,
		left: map[string][]*joinLeft{}, right: map[string][]*joinRight{}}, nil
}

// Window is the join's window.
func (j *WindowJoin) Window() time.Duration { return time.Duration(j.window) * time.Millisecond }

// Watermark is the time before which events are late (math.MinInt64 until both sides have had an event).
func (j *WindowJoin) Watermark() int64 { return j.watermark }

// Stats returns the counters.
func (j *WindowJoin) Stats() JoinStats {
	s := j.stats
	s.PendingLeft, s.PendingRight = j.lq.Len(), j.rq.Len()
	return s
}

// Left takes a left event (an impression) of key at time t (ms). val is copied. It reports whether the event
// was taken (false: late, counted in LateLeft, or a copy of a pending one, counted in DuplicateLeft).
func (j *WindowJoin) Left(key []byte, t int64, val []byte) bool {
	if t < j.watermark {
		j.stats.LateLeft++
		return false
	}
	for _, o := range j.left[string(key)] {
		if o.t == t {
			j.stats.DuplicateLeft++
			return false
		}
	}
	j.stats.Left++
	j.seq++
	l := &joinLeft{joinEvent: joinEvent{key: string(key), t: t, val: joinClone(val), seq: j.seq, heapIndex: -1}}
	// Right events already waiting: those in l's window match it, the earliest first.
	if rs := j.right[l.key]; len(rs) > 0 {
		var in []*joinRight
		kept := rs[:0]
		for _, r := range rs {
			if r.t >= l.t && r.t < l.t+j.window {
				in = append(in, r)
				continue
			}
			kept = append(kept, r)
		}
		j.setRight(l.key, kept)
		slices.SortStableFunc(in, func(a, b *joinRight) int { return cmp.Compare(a.t, b.t) })
		for _, r := range in {
			j.match(l, r)
		}
	}
	j.left[l.key] = append(j.left[l.key], l)
	heap.Push(&j.lq, l)
	if t > j.leftMax {
		j.leftMax = t
		j.advance()
	}
	return true
}

// Right takes a right event (a click) of key at time t (ms). val is copied. It reports whether the event was
// taken (false: late, counted in LateRight).
func (j *WindowJoin) Right(key []byte, t int64, val []byte) bool {
	if t < j.watermark {
		j.stats.LateRight++
		return false
	}
	j.stats.Right++
	j.seq++
	r := &joinRight{joinEvent{key: string(key), t: t, val: joinClone(val), seq: j.seq, heapIndex: -1}}
	// The earliest pending left event whose window holds t (lefts of one key are kept in arrival order;
	// take the one with the smallest time).
	var best *joinLeft
	for _, l := range j.left[r.key] {
		if t >= l.t && t < l.t+j.window && (best == nil || l.t < best.t) {
			best = l
		}
	}
	if best != nil {
		j.match(best, r)
	} else {
		j.right[r.key] = append(j.right[r.key], r)
		heap.Push(&j.rq, r)
	}
	if t > j.rightMax {
		j.rightMax = t
		j.advance()
	}
	return true
}

// AdvanceLeft and AdvanceRight move one side's time to at least t, as if it had had an event at t: what a
// tick says ("no event of this side older than t is still to come"), which decides the windows of the last
// events of a finished input once both sides have said it.
func (j *WindowJoin) AdvanceLeft(t int64) {
	j.leftMax = max(j.leftMax, t)
	j.advance()
}

// AdvanceRight is AdvanceLeft for the right side.
func (j *WindowJoin) AdvanceRight(t int64) {
	j.rightMax = max(j.rightMax, t)
	j.advance()
}

// match records r in l's window.
func (j *WindowJoin) match(l *joinLeft, r *joinRight) {
	if r.heapIndex >= 0 && r.heapIndex < j.rq.Len() && j.rq[r.heapIndex] == r {
		heap.Remove(&j.rq, r.heapIndex)
	}
	l.matches++
	if !l.matched {
		l.matched, l.rightT, l.rightVal = true, r.t, r.val
		return
	}
	j.stats.ExtraRight++
}

// advance moves the watermark to the lesser side's latest time minus grace and decides what it passed.
func (j *WindowJoin) advance() {
	if j.leftMax == math.MinInt64 || j.rightMax == math.MinInt64 {
		return
	}
	wm := min(j.leftMax, j.rightMax) - j.grace
	if wm <= j.watermark {
		return
	}
	j.watermark = wm
	j.expire(wm, false)
}

// expire decides the left events whose window ended at or before wm and gives up the right events before
// wm; all of them with all set.
func (j *WindowJoin) expire(wm int64, all bool) {
	for j.rq.Len() > 0 && (all || j.rq[0].t < wm) {
		r := heap.Pop(&j.rq).(*joinRight)
		j.stats.OrphanRight++
		j.dropRight(r)
	}
	for j.lq.Len() > 0 && (all || j.lq[0].t+j.window <= wm) {
		l := heap.Pop(&j.lq).(*joinLeft)
		j.dropLeft(l)
		if l.matched {
			j.stats.Matched++
		} else {
			j.stats.Unmatched++
		}
		j.emit(JoinResult{Key: l.key, LeftTime: l.t, Left: l.val, Matched: l.matched, RightTime: l.rightT,
			Right: l.rightVal, Matches: l.matches})
	}
}

// Flush decides every pending event as if both inputs had ended: left events without a match come out
// unmatched, waiting right events are orphans.
func (j *WindowJoin) Flush() {
	j.expire(0, true)
}

func (j *WindowJoin) dropLeft(l *joinLeft) {
	ls := j.left[l.key]
	for i, x := range ls {
		if x == l {
			ls = append(ls[:i], ls[i+1:]...)
			break
		}
	}
	if len(ls) == 0 {
		delete(j.left, l.key)
	} else {
		j.left[l.key] = ls
	}
}

func (j *WindowJoin) dropRight(r *joinRight) {
	rs := j.right[r.key]
	for i, x := range rs {
		if x == r {
			rs = append(rs[:i], rs[i+1:]...)
			break
		}
	}
	j.setRight(r.key, rs)
}

func (j *WindowJoin) setRight(key string, rs []*joinRight) {
	if len(rs) == 0 {
		delete(j.right, key)
	} else {
		j.right[key] = rs
	}
}

func joinClone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// eventQueue is a heap (container/heap) of one side's pending events by time, then arrival: the left
// side's times are window ends, the right side's event times.
type eventQueue[E interface{ event() *joinEvent }] []E

// leftQueue orders pending left events by window end, then arrival; rightQueue orders waiting right events
// by time, then arrival.
type (
	leftQueue  = eventQueue[*joinLeft]
	rightQueue = eventQueue[*joinRight]
)

func (q eventQueue[E]) Len() int { return len(q) }
func (q eventQueue[E]) Less(a, b int) bool {
	x, y := q[a].event(), q[b].event()
	if x.t != y.t {
		return x.t < y.t
	}
	return x.seq < y.seq
}
func (q eventQueue[E]) Swap(a, b int) {
	q[a], q[b] = q[b], q[a]
	q[a].event().heapIndex, q[b].event().heapIndex = a, b
}
func (q *eventQueue[E]) Push(x any) {
	e := x.(E)
	e.event().heapIndex = len(*q)
	*q = append(*q, e)
}
func (q *eventQueue[E]) Pop() any {
	o := *q
	e := o[len(o)-1]
	*q = o[:len(o)-1]
	e.event().heapIndex = -1
	return e
}

// The checkpoint of a join (AppendState, LoadState) is its pending events and counters, so that a task
// restarted from a checkpoint decides every left event exactly as the uninterrupted task would have
// (big-endian):
//
//	+-------+---------+---------+----------+-------------+---------+---------+--------+---------+
//	| "WJ2" | window  | grace   | leftMax  | rightMax    | stats   | nLeft   | lefts  | nRight  | rights
//	| 3 B   | int64   | int64   | int64    | int64       | 9×int64 | uint32  |        | uint32  |
//	+-------+---------+---------+----------+-------------+---------+---------+--------+---------+
//
// a left is key, time, value, matched (1 B), matches (uint32), right time, right value; a right is key,
// time, value; key and values are a uint32 length and the bytes. Events are written in arrival order.

const joinStateMagic = "WJ2"

// AppendState appends the join's checkpoint to b.
func (j *WindowJoin) AppendState(b []byte) []byte {
	b = append(b, joinStateMagic...)
	for _, v := range []int64{j.window, j.grace, j.leftMax, j.rightMax, j.stats.Left, j.stats.Right,
		j.stats.LateLeft, j.stats.LateRight, j.stats.Matched, j.stats.Unmatched, j.stats.ExtraRight, j.stats.OrphanRight,
		j.stats.DuplicateLeft} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	ls := append(leftQueue(nil), j.lq...)
	joinSortBySeq(ls, func(l *joinLeft) uint64 { return l.seq })
	b = binary.BigEndian.AppendUint32(b, uint32(len(ls)))
	for _, l := range ls {
		b = joinAppendBytes(b, []byte(l.key))
		b = binary.BigEndian.AppendUint64(b, uint64(l.t))
		b = joinAppendBytes(b, l.val)
		if l.matched {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(l.matches))
		b = binary.BigEndian.AppendUint64(b, uint64(l.rightT))
		b = joinAppendBytes(b, l.rightVal)
	}
	rs := append(rightQueue(nil), j.rq...)
	joinSortBySeq(rs, func(r *joinRight) uint64 { return r.seq })
	b = binary.BigEndian.AppendUint32(b, uint32(len(rs)))
	for _, r := range rs {
		b = joinAppendBytes(b, []byte(r.key))
		b = binary.BigEndian.AppendUint64(b, uint64(r.t))
		b = joinAppendBytes(b, r.val)
	}
	return b
}

// LoadState replaces the join's state with a checkpoint made by AppendState of a join with the same window
// and grace.
func (j *WindowJoin) LoadState(b []byte) error {
	d := joinDecoder{b: b}
	if string(d.take(len(joinStateMagic))) != joinStateMagic {
		return fmt.Errorf("%w: no %q header in %d bytes", ErrJoinState, joinStateMagic, len(b))
	}
	var v [13]int64
	for i := range v {
		v[i] = int64(d.u64())
	}
	if d.err == nil && (v[0] != j.window || v[1] != j.grace) {
		return fmt.Errorf("%w: checkpoint of a %d ms window with %d ms grace, this join has %d ms and %d ms",
			ErrJoinState, v[0], v[1], j.window, j.grace)
	}
	fresh, _ := NewWindowJoin(j.Window(), time.Duration(j.grace)*time.Millisecond, j.emit)
	fresh.leftMax, fresh.rightMax = v[2], v[3]
	fresh.stats = JoinStats{Left: v[4], Right: v[5], LateLeft: v[6], LateRight: v[7], Matched: v[8],
		Unmatched: v[9], ExtraRight: v[10], OrphanRight: v[11], DuplicateLeft: v[12]}
	for n := d.u32(); d.err == nil && n > 0; n-- {
		fresh.seq++
		l := &joinLeft{joinEvent: joinEvent{key: string(d.bytes()), t: int64(d.u64()), seq: fresh.seq}}
		l.val = d.bytes()
		if m := d.take(1); m != nil {
			l.matched = m[0] == 1
		}
		l.matches = int(d.u32())
		l.rightT = int64(d.u64())
		l.rightVal = d.bytes()
		fresh.left[l.key] = append(fresh.left[l.key], l)
		heap.Push(&fresh.lq, l)
	}
	for n := d.u32(); d.err == nil && n > 0; n-- {
		fresh.seq++
		r := &joinRight{joinEvent{key: string(d.bytes()), t: int64(d.u64()), seq: fresh.seq}}
		r.val = d.bytes()
		fresh.right[r.key] = append(fresh.right[r.key], r)
		heap.Push(&fresh.rq, r)
	}
	if d.err == nil && d.off != len(b) {
		d.err = fmt.Errorf("%d bytes after the state", len(b)-d.off)
	}
	if d.err != nil {
		return fmt.Errorf("%w: %v", ErrJoinState, d.err)
	}
	fresh.advance() // sets the watermark; nothing is due, the checkpointed join had decided it
	*j = *fresh
	return nil
}

func joinSortBySeq[T any](s []T, seq func(T) uint64) {
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(seq(a), seq(b)) })
}

func joinAppendBytes(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// joinDecoder reads a checkpoint; the first problem sticks in err.
type joinDecoder struct {
	b   []byte
	off int
	err error
}

func (d *joinDecoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b)-d.off < n {
		d.err = fmt.Errorf("truncated at byte %d (want %d more of %d)", d.off, n, len(d.b))
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *joinDecoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (d *joinDecoder) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (d *joinDecoder) bytes() []byte {
	n := d.u32()
	if p := d.take(int(n)); p != nil {
		return joinClone(p)
	}
	return nil
}
