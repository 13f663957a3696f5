package producer

import (
	"slices"
	"sync"
	"sync/atomic"
)

// maxCachedTopics is how many validated topic names a producer remembers.
const maxCachedTopics = 8

// topicCache remembers the topic names that passed ValidateTopic, so that a
// steady stream of sends checks its name once and afterwards finds it with
// a string comparison: no lock, no atomic read-modify-write, nothing
// allocated. The list is replaced, never changed, when a name is added (under
// mu); a reader loads it with one atomic load. Past maxCachedTopics names a
// new name is validated on every send, still without allocating.
type topicCache struct {
	names atomic.Pointer[[]string]
	mu    sync.Mutex
}

// check returns nil for a name that passed validation, or the validation
// error.
func (tc *topicCache) check(name string) error {
	if p := tc.names.Load(); p != nil {
		for _, n := range *p {
			if n == name {
				return nil
			}
		}
	}
	if err := ValidateTopic(name); err != nil {
		return err
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var cur []string
	if p := tc.names.Load(); p != nil {
		cur = *p
	}
	if len(cur) < maxCachedTopics && !slices.Contains(cur, name) {
		next := append(slices.Clip(cur), name) // a new array: readers may hold cur
		tc.names.Store(&next)
	}
	return nil
}
