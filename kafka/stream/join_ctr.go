package stream

// The click-through workload of the paper's §1 (click-through rates, which count the impressions that were not
// clicked as well as the clicks) as events, a generator with rates known in advance, and the exact
// count of clicked impressions per item that the join's results feed.
//
// An event is one line of text, so `kafka console-consumer` shows it as it is:
//
//	imp <impression id> <item> <event time, ms since 1970>
//	click <impression id> <item> <event time, ms>
//
// Both topics are published with the impression id as the key (the producer's key-hash partitioner), so an
// impression and its clicks are in the same partition number of their topics (§6: semantic partitioning on the
// join key at publish time).

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
)

// ErrCTREvent: a payload that is not an impression or click line.
var ErrCTREvent = errors.New("stream: bad click-through event")

// Kinds of click-through events.
const (
	Impression = "imp"
	Click      = "click"
)

// CTREvent is one impression or click.
type CTREvent struct {
	Kind string // Impression or Click
	ID   string // the impression's id: the join key
	Item string
	Time int64 // ms since 1970
}

// Append appends the event's line (without a newline) to b.
func (e CTREvent) Append(b []byte) []byte {
	b = append(b, e.Kind...)
	b = append(b, ' ')
	b = append(b, e.ID...)
	b = append(b, ' ')
	b = append(b, e.Item...)
	b = append(b, ' ')
	return strconv.AppendInt(b, e.Time, 10)
}

func (e CTREvent) String() string { return string(e.Append(nil)) }

// ParseCTREvent parses an event line; a trailing newline is allowed.
func ParseCTREvent(p []byte) (CTREvent, error) {
	f := bytes.Fields(p)
	if len(f) != 4 || (string(f[0]) != Impression && string(f[0]) != Click) {
		return CTREvent{}, fmt.Errorf("%w: %q (want \"imp|click <id> <item> <ms>\")", ErrCTREvent, ctrClip(p))
	}
	t, err := strconv.ParseInt(string(f[3]), 10, 64)
	if err != nil {
		return CTREvent{}, fmt.Errorf("%w: %q: time %q is not an integer of milliseconds", ErrCTREvent, ctrClip(p), f[3])
	}
	return CTREvent{Kind: string(f[0]), ID: string(f[1]), Item: string(f[2]), Time: t}, nil
}

func ctrClip(p []byte) []byte {
	if len(p) > 80 {
		return p[:80]
	}
	return p
}

// Rate is a click-through rate kept as its two counts, so that it is exact: Clicked of Impressions were
// clicked within the window.
type Rate struct {
	Clicked, Impressions int64
}

// Rat is the rate as an exact fraction (0 when there were no impressions).
func (r Rate) Rat() *big.Rat {
	if r.Impressions == 0 {
		return new(big.Rat)
	}
	return big.NewRat(r.Clicked, r.Impressions)
}

// Decimal is the rate rounded half up to digits decimal places, computed in integers.
func (r Rate) Decimal(digits int) string { return r.Rat().FloatString(digits) }

func (r Rate) String() string {
	return fmt.Sprintf("%d/%d = %s", r.Clicked, r.Impressions, r.Decimal(6))
}

// CTRCounter counts, per item, the decided impressions and the clicked ones. An impression counted twice (an
// input replayed after a restart: at-least-once delivery, §3.3) is counted once, since the counter remembers
// the ids it has seen; a second decision for the same id that disagrees is counted in Conflicts.
type CTRCounter struct {
	seen      map[string]ctrSeen // impression id → its item and outcome
	items     map[string]*Rate
	Dups      int64 // decisions seen again, ignored
	Conflicts int64 // decisions seen again with the other outcome, ignored
}

// NewCTRCounter returns an empty counter.
func NewCTRCounter() *CTRCounter {
	return &CTRCounter{seen: map[string]ctrSeen{}, items: map[string]*Rate{}}
}

// Add counts one decided impression of item; it reports false for an id already counted.
func (c *CTRCounter) Add(item, id string, clicked bool) bool {
	if was, ok := c.seen[id]; ok {
		c.Dups++
		if was.clicked != clicked || was.item != item {
			c.Conflicts++
		}
		return false
	}
	c.seen[id] = ctrSeen{item: item, clicked: clicked}
	r := c.items[item]
	if r == nil {
		r = &Rate{}
		c.items[item] = r
	}
	r.Impressions++
	if clicked {
		r.Clicked++
	}
	return true
}

type ctrSeen struct {
	item    string
	clicked bool
}

// Rates returns a copy of the per-item rates.
func (c *CTRCounter) Rates() map[string]Rate {
	out := make(map[string]Rate, len(c.items))
	for k, r := range c.items {
		out[k] = *r
	}
	return out
}

// ItemRate is one item of a generated workload: of every Per impressions of it, exactly Clicked get a click
// inside the window.
type ItemRate struct {
	Item         string
	Clicked, Per int
}

// CTRWorkload generates impressions and clicks whose click-through rate per item is known exactly. Each item
// is shown Per×Rounds times, Step ms apart in event time across all items; of each round of Per impressions of
// an item, Clicked chosen at random get a click at a random delay inside the window. To make the join earn its
// result, the generator also makes
//
//   - late clicks: some unclicked impressions get a click at or after their window's end, which must count as a
//     non-click;
//   - double clicks: some clicked impressions get a second click inside the window, which must not count twice;
//   - disorder: each topic is published in event-time order disturbed by up to Disorder ms.
type CTRWorkload struct {
	Items    []ItemRate
	Rounds   int
	Start    int64 // ms of the first impression
	Step     int64 // ms between impressions
	Window   int64 // ms: the join window
	Disorder int64 // ms; a join's grace must be at least this for no event to be late
	Seed     uint64
}

// DefaultCTRWorkload is the workload of the README's example: five items with rates 1/3, 3/7, 0/5, 4/4 and
// 2/9, impressions every 50 ms, a 10 s window.
func DefaultCTRWorkload(rounds int) CTRWorkload {
	return CTRWorkload{
		Items: []ItemRate{{"item-a", 1, 3}, {"item-b", 3, 7}, {"item-c", 0, 5}, {"item-d", 4, 4},
			{"item-e", 2, 9}},
		Rounds: rounds, Start: 1733050800000, Step: 50, Window: 10_000, Disorder: 2_000, Seed: 14,
	}
}

// Validate checks the workload's parameters.
func (w CTRWorkload) Validate() error {
	switch {
	case len(w.Items) == 0:
		return fmt.Errorf("%w: workload without items", ErrCTREvent)
	case w.Rounds <= 0:
		return fmt.Errorf("%w: %d rounds", ErrCTREvent, w.Rounds)
	case w.Step <= 0 || w.Window <= 1 || w.Disorder < 0:
		return fmt.Errorf("%w: step %d ms, window %d ms, disorder %d ms (want step > 0, window > 1, disorder >= 0)",
			ErrCTREvent, w.Step, w.Window, w.Disorder)
	}
	for _, it := range w.Items {
		if it.Item == "" || bytes.ContainsAny([]byte(it.Item), " \t\n") || it.Per <= 0 || it.Clicked < 0 || it.Clicked > it.Per {
			return fmt.Errorf("%w: item %q with %d clicked of %d", ErrCTREvent, it.Item, it.Clicked, it.Per)
		}
	}
	return nil
}

// Expected is the exact rate of every item.
func (w CTRWorkload) Expected() map[string]Rate {
	out := map[string]Rate{}
	for _, it := range w.Items {
		out[it.Item] = Rate{Clicked: int64(it.Clicked * w.Rounds), Impressions: int64(it.Per * w.Rounds)}
	}
	return out
}

// Generate returns the impressions and the clicks, each in the order to publish them.
func (w CTRWorkload) Generate() (imps, clicks []CTREvent, err error) {
	if err := w.Validate(); err != nil {
		return nil, nil, err
	}
	rng := rand.New(rand.NewPCG(w.Seed, 0x14))
	t := w.Start
	n := 0
	for range w.Rounds {
		for _, it := range w.Items {
			clicked := rng.Perm(it.Per)[:it.Clicked]
			isClicked := make([]bool, it.Per)
			for _, k := range clicked {
				isClicked[k] = true
			}
			for k := range it.Per {
				id := "i" + strconv.Itoa(n)
				n++
				imps = append(imps, CTREvent{Kind: Impression, ID: id, Item: it.Item, Time: t})
				switch {
				case isClicked[k]:
					d := rng.Int64N(w.Window)
					clicks = append(clicks, CTREvent{Kind: Click, ID: id, Item: it.Item, Time: t + d})
					if rng.IntN(4) == 0 { // a double click, still in the window
						d2 := d + rng.Int64N(w.Window-d)
						clicks = append(clicks, CTREvent{Kind: Click, ID: id, Item: it.Item, Time: t + d2})
					}
				case rng.IntN(3) == 0: // a click too late: the impression stays a non-click
					clicks = append(clicks, CTREvent{Kind: Click, ID: id, Item: it.Item,
						Time: t + w.Window + rng.Int64N(w.Window)})
				}
				t += w.Step
			}
		}
	}
	ctrDisorder(imps, w.Disorder, rng)
	ctrDisorder(clicks, w.Disorder, rng)
	return imps, clicks, nil
}

// disorder sorts events by time plus a random delay in [0, d]: an event comes out at most d ms of event time
// after a later one.
func ctrDisorder(ev []CTREvent, d int64, rng *rand.Rand) {
	type keyed struct {
		at int64
		e  CTREvent
	}
	k := make([]keyed, len(ev))
	for i, e := range ev {
		k[i] = keyed{e.Time + rng.Int64N(d+1), e}
	}
	slices.SortStableFunc(k, func(a, b keyed) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	for i := range k {
		ev[i] = k[i].e
	}
}
