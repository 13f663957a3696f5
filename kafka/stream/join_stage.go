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
//	<p>-by-item  <item> <impression id> <1 clicked | 0 not> <impression ms>
//	output       <item> <clicked> <impressions> <rate, 6 decimals>      (one line per decided impression)
//
// A tick says no event of its kind (impressions or clicks) older than its time is still to come in its
// partition (a generator's end of input); the ticks of both kinds decide the windows of the last impressions. TickKeys gives one key per partition, so that a tick
// published with it through the key-hash partitioner reaches that partition, and is repartitioned to the same
// partition number of a topic with as many partitions.
//
// Guarantees: each stage's state (the join's pending events, the rates' counts) is exactly-once, checkpointed
// with its offset; each intermediate topic and the output are at-least-once. CTRRates remembers the
// impression ids it has counted, so a decision published twice (a join task restarted from its checkpoint
// decides the same impressions the same way again) is counted once: the last line of each item in the output
// is the exact rate, the same as an uninterrupted run's.

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
	return func(string, string) (Processor, error) {
		p := &ctrJoin{out: cfg.Output}
		p.j, _ = NewWindowJoin(cfg.Window, cfg.Grace, p.decided)
		return p, nil
	}, nil
}

type ctrJoin struct {
	j   *WindowJoin
	out string
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
	taken := true
	if e.Kind == Impression {
		taken = p.j.Left([]byte(e.ID), e.Time, []byte(e.Item))
	} else {
		taken = p.j.Right([]byte(e.ID), e.Time, []byte(e.Item))
	}
	if !taken {
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
		return &ctrRates{out: cfg.Output, c: NewCTRCounter()}, nil
	}, nil
}

type ctrRates struct {
	out string
	c   *CTRCounter
	buf []byte
}

// ParseDecision reads a <p>-by-item line.
func ParseDecision(b []byte) (item, id string, clicked bool, ms int64, err error) {
	f := bytes.Fields(b)
	if len(f) != 4 || (string(f[2]) != "0" && string(f[2]) != "1") {
		return "", "", false, 0, fmt.Errorf("%w: %q is not \"<item> <id> <0|1> <ms>\"", ErrSkip, ctrClip(b))
	}
	ms, ok := parseInt(f[3])
	if !ok {
		return "", "", false, 0, fmt.Errorf("%w: %q: time %q", ErrSkip, ctrClip(b), f[3])
	}
	return string(f[0]), string(f[1]), f[2][0] == '1', ms, nil
}

func (p *ctrRates) Process(c *Context, r *Record) error {
	item, id, clicked, _, err := ParseDecision(r.Value)
	if err != nil {
		return err
	}
	if !p.c.Add(item, id, clicked) {
		return nil // counted already: a decision published again after a restart
	}
	rate := *p.c.items[item]
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

// The rates' checkpoint: "CR1", then the impression ids counted, each with its item and outcome, sorted by id
// (uint32 lengths, big-endian); the counts per item are rebuilt from them.
const ctrRatesMagic = "CR1"

func (p *ctrRates) AppendState(dst []byte) ([]byte, error) {
	dst = append(dst, ctrRatesMagic...)
	ids := make([]string, 0, len(p.c.seen))
	for id := range p.c.seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(ids)))
	for _, id := range ids {
		s := p.c.seen[id]
		dst = joinAppendBytes(dst, []byte(id))
		dst = joinAppendBytes(dst, []byte(s.item))
		if s.clicked {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.c.Dups))
	return binary.BigEndian.AppendUint64(dst, uint64(p.c.Conflicts)), nil
}

func (p *ctrRates) RestoreState(b []byte) error {
	c := NewCTRCounter()
	if len(b) == 0 {
		p.c = c
		return nil
	}
	d := joinDecoder{b: b}
	if string(d.take(len(ctrRatesMagic))) != ctrRatesMagic {
		return fmt.Errorf("%w: no %q header in the rates' state", ErrBadCheckpoint, ctrRatesMagic)
	}
	for n := d.u32(); d.err == nil && n > 0; n-- {
		id, item := string(d.bytes()), string(d.bytes())
		m := d.take(1)
		if d.err == nil {
			c.Add(item, id, m[0] == 1)
		}
	}
	dups, conflicts := int64(d.u64()), int64(d.u64())
	if d.err == nil && d.off != len(b) {
		d.err = fmt.Errorf("%d bytes after the state", len(b)-d.off)
	}
	if d.err != nil {
		return fmt.Errorf("%w: rates' state: %v", ErrBadCheckpoint, d.err)
	}
	c.Dups, c.Conflicts = dups, conflicts
	p.c = c
	return nil
}
