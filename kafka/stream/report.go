package stream

import (
	"encoding/binary"
	"fmt"
)

// MaxReasons is how many skip reasons a Report keeps: the first ones, each with the offset of its message.
// Every skip is counted; only the examples are bounded.
const MaxReasons = 8

// Report says what a task did with its input, so that nothing it did not count is silent. Its counters are
// part of the task's checkpoint, so they are exact across crashes (as the state is).
type Report struct {
	Read        int64 // messages read from the input partition
	SkippedKey  int64 // no key could be extracted: not processed
	SkippedTime int64 // no event time could be extracted: not processed
	Skipped     int64 // refused by a processor (a value that could not be extracted, ErrSkip)
	// Late: messages later than every window they belong to plus the grace period; not aggregated.
	Late int64
	// LatePartial: hopping windows only, messages too late for some of their windows, aggregated in the rest.
	LatePartial int64
	Emitted     int64    // results published (final and update)
	Reasons     []string // the first MaxReasons skip reasons, "offset N: why"
}

// Skips is every message read but not processed.
func (r Report) Skips() int64 { return r.SkippedKey + r.SkippedTime + r.Skipped }

func (r Report) String() string {
	return fmt.Sprintf("read %d, skipped %d (key %d, time %d, other %d), late %d (partly %d), emitted %d",
		r.Read, r.Skips(), r.SkippedKey, r.SkippedTime, r.Skipped, r.Late, r.LatePartial, r.Emitted)
}

// Add adds o's counters to r (reports of several tasks), keeping reasons up to MaxReasons.
func (r *Report) Add(o Report) {
	r.Read += o.Read
	r.SkippedKey += o.SkippedKey
	r.SkippedTime += o.SkippedTime
	r.Skipped += o.Skipped
	r.Late += o.Late
	r.LatePartial += o.LatePartial
	r.Emitted += o.Emitted
	for _, s := range o.Reasons {
		if len(r.Reasons) < MaxReasons {
			r.Reasons = append(r.Reasons, s)
		}
	}
}

func (r *Report) reason(offset int64, err error) {
	if len(r.Reasons) < MaxReasons {
		r.Reasons = append(r.Reasons, fmt.Sprintf("offset %d: %v", offset, err))
	}
}

func (r *Report) appendTo(b []byte) []byte {
	for _, v := range [...]int64{r.Read, r.SkippedKey, r.SkippedTime, r.Skipped, r.Late, r.LatePartial, r.Emitted} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Reasons)))
	for _, s := range r.Reasons {
		b = appendBytes(b, []byte(s))
	}
	return b
}

func (r *Report) decode(d *decoder) {
	for _, p := range [...]*int64{&r.Read, &r.SkippedKey, &r.SkippedTime, &r.Skipped, &r.Late, &r.LatePartial, &r.Emitted} {
		*p = d.varint()
	}
	n := d.count(MaxReasons)
	r.Reasons = nil
	for range n {
		r.Reasons = append(r.Reasons, string(d.bytes()))
	}
}
