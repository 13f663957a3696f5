package stream

import (
	"fmt"
	"math"
)

// aggKind lets the counting path skip the function call.
type aggKind uint8

const (
	aggCount aggKind = iota + 1
	aggSum
	aggMin
	aggMax
	aggFold
)

// Aggregation folds the messages of one key in one window into an int64: Count, Sum, Min, Max, or a user's
// Fold. A result is published per key and window with the final value when the window closes.
type Aggregation struct {
	name  string
	kind  aggKind
	init  int64
	value ValueFunc                // nil for Count
	add   func(acc, v int64) int64 // Fold's
	merge func(a, b int64) int64   // Fold's: two sessions joined by a message between them; nil: none
}

// Count counts messages.
func Count() Aggregation { return Aggregation{name: "count", kind: aggCount} }

// Sum adds v of every message.
func Sum(v ValueFunc) Aggregation { return Aggregation{name: "sum", kind: aggSum, value: v} }

// Min keeps the smallest v.
func Min(v ValueFunc) Aggregation {
	return Aggregation{name: "min", kind: aggMin, value: v, init: math.MaxInt64}
}

// Max keeps the largest v.
func Max(v ValueFunc) Aggregation {
	return Aggregation{name: "max", kind: aggMax, value: v, init: math.MinInt64}
}

// Fold is a user's aggregation: a key's value in a new window starts at init and each message's v is folded
// in with add. merge joins the values of two session windows that a message has bridged; it may be nil when
// the aggregation is not used with session windows (NewWindowed refuses that pairing then). add and merge
// must be deterministic: a restored task folds the same messages again and must reach the same value.
func Fold(name string, init int64, v ValueFunc, add, merge func(acc, v int64) int64) Aggregation {
	return Aggregation{name: name, kind: aggFold, init: init, value: v, add: add, merge: merge}
}

// Name is the aggregation's name ("count", "sum", "min", "max" or Fold's).
func (a Aggregation) Name() string { return a.name }

func (a Aggregation) valid(w Window) error {
	switch {
	case a.kind == 0:
		return fmt.Errorf("%w: no aggregation (use Count, Sum, Min, Max or Fold)", ErrBadConfig)
	case a.kind != aggCount && a.value == nil:
		return fmt.Errorf("%w: aggregation %q has no ValueFunc", ErrBadConfig, a.name)
	case a.kind == aggFold && a.add == nil:
		return fmt.Errorf("%w: aggregation %q has no add function", ErrBadConfig, a.name)
	case a.kind == aggFold && a.merge == nil && w.kind == KindSession:
		return fmt.Errorf("%w: aggregation %q has no merge function, which session windows need", ErrBadConfig, a.name)
	}
	return nil
}

// apply folds v into acc.
func (a *Aggregation) apply(acc, v int64) int64 {
	switch a.kind {
	case aggCount:
		return acc + 1
	case aggSum:
		return acc + v
	case aggMin:
		return min(acc, v)
	case aggMax:
		return max(acc, v)
	}
	return a.add(acc, v)
}

// join merges two sessions' values.
func (a *Aggregation) join(x, y int64) int64 {
	switch a.kind {
	case aggCount, aggSum:
		return x + y
	case aggMin:
		return min(x, y)
	case aggMax:
		return max(x, y)
	}
	return a.merge(x, y)
}
