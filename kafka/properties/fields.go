package properties

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrValue: a property's value does not parse as its field's type.
var ErrValue = errors.New("properties: bad value")

// A Field sets one configuration field from a property's value (already
// trimmed of surrounding whitespace). A configuration describes itself as a
// map from its 0.7 property names to Fields bound to its own fields:
//
//	func (c *Config) fields() map[string]properties.Field {
//		return map[string]properties.Field{
//			"batch.size": properties.Int(&c.BatchSize),
//			"queue.time": properties.Millis(&c.QueueTime),
//		}
//	}
type Field func(value string) error

// Int sets *p from a decimal integer.
func Int(p *int) Field {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%w: not an integer", ErrValue)
		}
		*p = n
		return nil
	}
}

// Int64 sets *p from a decimal integer.
func Int64(p *int64) Field {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: not an integer", ErrValue)
		}
		*p = n
		return nil
	}
}

// Bool sets *p from true or false (as strconv.ParseBool reads them).
func Bool(p *bool) Field {
	return func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: not true or false", ErrValue)
		}
		*p = b
		return nil
	}
}

// String sets *p to the value as it is.
func String(p *string) Field {
	return func(v string) error { *p = v; return nil }
}

// Millis sets *p from a whole number of milliseconds (0.7's "….ms" names).
func Millis(p *time.Duration) Field {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%w: not a whole number of milliseconds", ErrValue)
		}
		*p = time.Duration(n) * time.Millisecond
		return nil
	}
}

// Set applies one property to fields: known says whether the name is one of
// theirs (0.7 ignored unknown names, and so do the callers, each in its own
// way); err says why the value was refused. Surrounding whitespace is
// trimmed first.
func Set(fields map[string]Field, key, value string) (known bool, err error) {
	f, ok := fields[key]
	if !ok {
		return false, nil
	}
	return true, f(strings.TrimSpace(value))
}

// Nearest is the name in fields closest to key by edit distance, when it is
// close enough to be a slip ("broker.idd", "log.dir.s"): at most 2 edits, and
// fewer than a third of key's length. "" when none is.
func Nearest(fields map[string]Field, key string) string {
	best, bestD := "", 3
	for name := range fields {
		d := editDistance(key, name)
		if d < bestD || d == bestD && best != "" && name < best {
			best, bestD = name, d
		}
	}
	if best == "" || bestD > 2 || 3*bestD >= len(key) {
		return ""
	}
	return best
}

// editDistance is Levenshtein's distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ParseList reads "key=value[,key=value...]", the form command-line flags
// take settings in (perf --set, producer-perf --producer-props, reproduce
// --latency-baseline); blanks around each pair are dropped. An empty list
// is nil.
func ParseList(list string) (map[string]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for kv := range strings.SplitSeq(list, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: %q is not key=value", ErrValue, kv)
		}
		m[k] = v
	}
	return m, nil
}
