package stream

// The click-through-rate pipeline of §1 as stages of this package (the `kafka stream-ctr` command runs it):
//
//	impressions ─┐ Repartition by impression id          CTRJoin (window, grace)        CTRRates
//	             ├──────────────────────────► <p>-events ─────────────────► <p>-by-item ────────► output
//	clicks ──────┘   (a stage reads one topic: both          decided impressions,         "<item> <clicked>
//	                  streams meet in one, §6's join key)    keyed by item (repartition)   <impressions> <rate>"
//
// Lines on the intermediate topics:
//
//	<p>-events   the events as published (CTREvent lines), and "tick <key> imp|click <ms>" lines
//	<p>-by-item  <item> <impression id> <1 clicked | 0 not> <impression ms> <join partition>/<n>
//	output       <item> <clicked> <impressions> <rate, 6 decimals>      (one line per decided impression)
//
// n numbers the decisions of one join task from 1: it is part of the join's checkpointed state, so a join task
// restored from its checkpoint numbers the decisions it makes again as it did the first time.
//
// A tick says no event of its kind (impressions or clicks) older than its time is still to come in its
// partition (a generator's end of input); the ticks of both kinds decide the windows of the last impressions. TickKeys gives one key per partition, so that a tick
// published with it through the key-hash partitioner reaches that partition, and is repartitioned to the same
// partition number of a topic with as many partitions.
//
// Guarantees: each stage's state (the join's pending events, the rates' counts) is exactly-once, checkpointed
// with its offset; each intermediate topic and the output are at-least-once. The copies that at-least-once
// makes are removed where they meet state: the join ignores an impression already pending (a copy of one
// already decided is late), and CTRRates keeps, for each join partition and item, the highest decision number
// it has counted — the decisions of one join partition and item reach it in their order (one key, one
// partition, §3.3), and a restored join task publishes again only numbers after its checkpoint's, so a number
// not above the highest is a copy. Its state is a few numbers per item and partition, not one entry per
// impression. The last line of each item in the output is the exact rate, the same as an uninterrupted run's.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// Tick is the kind of a tick line.
const Tick = "tick"

// TickKeys returns, for each partition index i of a topic with n partitions, a key that the producer's
// key-hash partitioner sends to partition i.
func TickKeys(n int) [][]byte {
	out := make([][]byte, n)
	found := 0
	for j := 0; found < n; j++ {
		k := []byte("tick-" + strconv.Itoa(j))
		i := producer.DefaultPartitioner{}.Partition(k, n)
		if out[i] == nil {
			out[i] = k
			found++
		}
	}
	return out
}

// TickLine is the tick line for the events of kind (Impression or Click), key and ms.
func TickLine(kind string, key []byte, ms int64) []byte {
	b := append([]byte(Tick+" "), key...)
	b = append(b, ' ')
	b = append(b, kind...)
	b = append(b, ' ')
	return strconv.AppendInt(b, ms, 10)
}

// CTRKey and CTRTime are the Key and Time functions of the impressions, clicks and <p>-events stages: the
// impression id (field 1) and the event time (field 3).
var (
	CTRKey  = KeyField(' ', 1)
	CTRTime = TimeField(' ', 3)
	// DecisionKey and DecisionTime read <p>-by-item lines: the item (field 0), the impression's time (field 3).
	DecisionKey  = KeyField(' ', 0)
	DecisionTime = TimeField(' ', 3)
)

// CTRJoinConfig describes the join stage.
type CTRJoinConfig struct {
	Window, Grace time.Duration
	Output        string // the by-item topic
}

// CTRJoin checks cfg and returns the factory of the join's processor: impressions are the join's left side,
// clicks its right side (WindowJoin), ticks advance both; every decided impression is published to
// cfg.Output keyed by its item.
func CTRJoin(cfg CTRJoinConfig) (ProcessorFactory, error) {
	if _, err := NewWindowJoin(cfg.Window, cfg.Grace, nil); err != nil {
		return nil, err
	}
	if err := topic.Validate(cfg.Output); err != nil {
		return nil, fmt.Errorf("%w: join output topic: %w", ErrBadConfig, err)
	}
	return func(_, partition string) (Processor, error) {
		p := &ctrJoin{out: cfg.Output, src: partition}
		p.j, _ = NewWindowJoin(cfg.Window, cfg.Grace, p.decided)
		return p, nil
	}, nil
}

type ctrJoin struct {
	j   *WindowJoin
	out string
	src string   // the task's partition: with the decision's number, what makes a decision unique
	c   *Context // during Process
	err error
	buf []byte
}

func (p *ctrJoin) Process(c *Context, r *Record) error {
	e, err := ParseCTREvent(r.Value)
	if err != nil {
		if f := bytes.Fields(r.Value); len(f) == 4 && string(f[0]) == Tick {
			p.c = c
			switch string(f[2]) {
			case Impression:
				p.j.AdvanceLeft(r.Time)
			case Click:
				p.j.AdvanceRight(r.Time)
			default:
				p.c = nil
				return fmt.Errorf("%w: tick %q of kind %q (want imp or click)", ErrSkip, ctrClip(r.Value), f[2])
			}
			return p.flushErr()
		}
		return fmt.Errorf("%w: %v", ErrSkip, err)
	}
	p.c = c
	late := p.j.stats.LateLeft + p.j.stats.LateRight
	if e.Kind == Impression {
		p.j.Left([]byte(e.ID), e.Time, []byte(e.Item))
	} else {
		p.j.Right([]byte(e.ID), e.Time, []byte(e.Item))
	}
	if p.j.stats.LateLeft+p.j.stats.LateRight > late {
		c.Report.Late++
	}
	return p.flushErr()
}

func (p *ctrJoin) flushErr() error {
	err := p.err
	p.err, p.c = nil, nil
	return err
}

// decided publishes one decided impression.
func (p *ctrJoin) decided(r JoinResult) {
	if p.err != nil || p.c == nil {
		return
	}
	b := append(p.buf[:0], r.Left...)
	b = append(b, ' ')
	b = append(b, r.Key...)
	if r.Matched {
		b = append(b, " 1 "...)
	} else {
		b = append(b, " 0 "...)
	}
	b = strconv.AppendInt(b, r.LeftTime, 10)
	b = append(b, ' ')
	b = append(b, p.src...)
	b = append(b, '/')
	b = strconv.AppendInt(b, p.j.stats.Matched+p.j.stats.Unmatched, 10) // this decision's number, from 1
	p.buf = b
	if err := p.c.Out.Emit(p.out, r.Left, b); err != nil {
		p.err = fmt.Errorf("stream: publishing a decided impression to %q: %w", p.out, err)
		return
	}
	p.c.Report.Emitted++
}

func (p *ctrJoin) AppendState(dst []byte) ([]byte, error) { return p.j.AppendState(dst), nil }

func (p *ctrJoin) RestoreState(b []byte) error {
	if len(b) == 0 {
		p.j, _ = NewWindowJoin(p.j.Window(), time.Duration(p.j.grace)*time.Millisecond, p.decided)
		return nil
	}
	return p.j.LoadState(b)
}

// Stats are the join's counters (late, orphan and double clicks).
func (p *ctrJoin) Stats() JoinStats { return p.j.Stats() }

// CTRRatesConfig describes the rates stage.
type CTRRatesConfig struct {
	Output string
}

// CTRRates checks cfg and returns the factory of the rates' processor: it counts each decided impression
// once per impression id (CTRCounter) and publishes the item's new rate to cfg.Output, keyed by item.
func CTRRates(cfg CTRRatesConfig) (ProcessorFactory, error) {
	if err := topic.Validate(cfg.Output); err != nil {
		return nil, fmt.Errorf("%w: output topic: %w", ErrBadConfig, err)
	}
	return func(string, string) (Processor, error) {
		return &ctrRates{out: cfg.Output, rates: map[string]*Rate{}, last: map[string]int64{}}, nil
	}, nil
}

type ctrRates struct {
	out   string
	rates map[string]*Rate
	last  map[string]int64 // "<join partition>/<item>" → the highest decision number counted
	dups  int64
	buf   []byte
}

// Dups is how many decisions the rates stage recognised as copies and ignored.
func (p *ctrRates) Dups() int64 { return p.dups }

// Decision is one <p>-by-item line.
type Decision struct {
	Item, ID string
	Clicked  bool
	Time     int64  // the impression's, ms
	Source   string // the join task's partition
	N        int64  // the decision's number in that task, from 1
}

// ParseDecision reads a <p>-by-item line.
func ParseDecision(b []byte) (Decision, error) {
	f := bytes.Fields(b)
	if len(f) != 5 || (string(f[2]) != "0" && string(f[2]) != "1") {
		return Decision{}, fmt.Errorf("%w: %q is not \"<item> <id> <0|1> <ms> <partition>/<n>\"", ErrSkip, ctrClip(b))
	}
	ms, ok := parseInt(f[3])
	if !ok {
		return Decision{}, fmt.Errorf("%w: %q: time %q", ErrSkip, ctrClip(b), f[3])
	}
	i := bytes.LastIndexByte(f[4], '/')
	var n int64
	if i > 0 {
		n, ok = parseInt(f[4][i+1:])
	}
	if i <= 0 || !ok || n < 1 {
		return Decision{}, fmt.Errorf("%w: %q: %q is not <partition>/<n>", ErrSkip, ctrClip(b), f[4])
	}
	return Decision{Item: string(f[0]), ID: string(f[1]), Clicked: f[2][0] == '1', Time: ms,
		Source: string(f[4][:i]), N: n}, nil
}

func (p *ctrRates) Process(c *Context, r *Record) error {
	d, err := ParseDecision(r.Value)
	if err != nil {
		return err
	}
	k := d.Source + "/" + d.Item
	if d.N <= p.last[k] {
		p.dups++
		return nil // counted already: a decision published again after a restart
	}
	p.last[k] = d.N
	rp := p.rates[d.Item]
	if rp == nil {
		rp = &Rate{}
		p.rates[d.Item] = rp
	}
	rp.Impressions++
	if d.Clicked {
		rp.Clicked++
	}
	item, rate := d.Item, *rp
	b := AppendRateLine(p.buf[:0], item, rate)
	p.buf = b
	if err := c.Out.Emit(p.out, []byte(item), b); err != nil {
		return fmt.Errorf("stream: publishing the rate of %q to %q: %w", item, p.out, err)
	}
	c.Report.Emitted++
	return nil
}

// AppendRateLine appends an output line "<item> <clicked> <impressions> <rate, 6 decimals>".
func AppendRateLine(b []byte, item string, r Rate) []byte {
	b = append(b, item...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, r.Clicked, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, r.Impressions, 10)
	b = append(b, ' ')
	return append(b, r.Decimal(6)...)
}

// ParseRateLine reads an output line.
func ParseRateLine(b []byte) (item string, r Rate, err error) {
	f := bytes.Fields(b)
	if len(f) != 4 {
		return "", Rate{}, fmt.Errorf("%w: %q is not \"<item> <clicked> <impressions> <rate>\"", ErrCTREvent, ctrClip(b))
	}
	c, ok1 := parseInt(f[1])
	n, ok2 := parseInt(f[2])
	if !ok1 || !ok2 || c < 0 || n <= 0 || c > n {
		return "", Rate{}, fmt.Errorf("%w: %q: counts %q of %q", ErrCTREvent, ctrClip(b), f[1], f[2])
	}
	r = Rate{Clicked: c, Impressions: n}
	if string(f[3]) != r.Decimal(6) {
		return "", Rate{}, fmt.Errorf("%w: %q: rate %s, the counts make %s", ErrCTREvent, ctrClip(b), f[3], r.Decimal(6))
	}
	return string(f[0]), r, nil
}

// The rates' checkpoint (big-endian, uint32 lengths): "CR2"; the number of items, then per item its name,
// clicked and impressions (int64); the number of (join partition, item) pairs, then per pair "<partition>/<item>"
// and the highest decision number counted (int64); the copies ignored (int64). Sorted, so that equal states
// make equal bytes.
const ctrRatesMagic = "CR2"

func (p *ctrRates) AppendState(dst []byte) ([]byte, error) {
	dst = append(dst, ctrRatesMagic...)
	items := slices.Sorted(maps.Keys(p.rates))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(items)))
	for _, it := range items {
		dst = joinAppendBytes(dst, []byte(it))
		dst = binary.BigEndian.AppendUint64(dst, uint64(p.rates[it].Clicked))
		dst = binary.BigEndian.AppendUint64(dst, uint64(p.rates[it].Impressions))
	}
	keys := slices.Sorted(maps.Keys(p.last))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(keys)))
	for _, k := range keys {
		dst = joinAppendBytes(dst, []byte(k))
		dst = binary.BigEndian.AppendUint64(dst, uint64(p.last[k]))
	}
	return binary.BigEndian.AppendUint64(dst, uint64(p.dups)), nil
}

func (p *ctrRates) RestoreState(b []byte) error {
	rates, last := map[string]*Rate{}, map[string]int64{}
	if len(b) == 0 {
		p.rates, p.last, p.dups = rates, last, 0
		return nil
	}
	d := joinDecoder{b: b}
	if string(d.take(len(ctrRatesMagic))) != ctrRatesMagic {
		return fmt.Errorf("%w: no %q header in the rates' state", ErrBadCheckpoint, ctrRatesMagic)
	}
	for n := d.u32(); d.err == nil && n > 0; n-- {
		it := string(d.bytes())
		rates[it] = &Rate{Clicked: int64(d.u64()), Impressions: int64(d.u64())}
	}
	for n := d.u32(); d.err == nil && n > 0; n-- {
		k := string(d.bytes())
		last[k] = int64(d.u64())
	}
	dups := int64(d.u64())
	if d.err == nil && d.off != len(b) {
		d.err = fmt.Errorf("%d bytes after the state", len(b)-d.off)
	}
	if d.err != nil {
		return fmt.Errorf("%w: rates' state: %v", ErrBadCheckpoint, d.err)
	}
	p.rates, p.last, p.dups = rates, last, dups
	return nil
}
