package hotpath

import (
	"errors"
	"testing"
)

// open opens p in a temporary folder and closes it when the test ends.
func open(tb testing.TB, p Path) Op {
	tb.Helper()
	op, err := p.Open(tb.TempDir())
	if err != nil {
		tb.Fatalf("open %s: %v", p.Name, err)
	}
	tb.Cleanup(func() {
		if err := op.Close(); err != nil {
			tb.Errorf("close %s: %v", p.Name, err)
		}
	})
	return op
}

// TestAllocs: the hot paths allocate nothing in the steady state, neither
// per message nor per operation (a request, a fetch, a batch). See
// measureAllocs for what one-off allocations it lets pass.
func TestAllocs(t *testing.T) {
	for _, p := range Paths() {
		t.Run(p.Name, func(t *testing.T) {
			perOp, ops, err := measureAllocs(p, open(t, p))
			if err != nil {
				t.Fatal(err)
			}
			if perOp != 0 {
				t.Errorf("hot path %s allocates %.4g times per message (%.4g per operation of %d messages, over %d operations), want 0",
					p.Name, perOp/float64(p.Messages), perOp, p.Messages, ops)
			}
		})
	}
}

// measureAllocs counts the allocations of op with testing.AllocsPerRun,
// every goroutine's, the broker's included. One run is as many Do calls as
// make 1,000 messages (at least one), then Settle, so that what a broker does
// with the requests is inside the run that sent them; there are 100 runs.
// It returns the allocations per operation and the operations run. One
// allocation per message or per operation shows as at least one per run;
// fewer than 100 one-off allocations over all runs (a buffer growing once,
// a timer) round down to zero, as AllocsPerRun rounds.
func measureAllocs(p Path, op Op) (perOp float64, ops int, err error) {
	const runs = 100
	perRun := max(1, 1000/p.Messages)
	var failed error
	allocs := testing.AllocsPerRun(runs, func() {
		for range perRun {
			if err := op.Do(); err != nil && failed == nil {
				failed = err
			}
		}
		if err := op.Settle(); err != nil && failed == nil {
			failed = err
		}
	})
	return allocs / float64(perRun), (runs + 1) * perRun, failed
}

// The measurement sees an allocation of one per batch of 50 messages, and
// one made by another goroutine (a broker's).
func TestMeasureAllocsSeesAllocations(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   Op
	}{{"per batch", &allocating{}}, {"in another goroutine", newAllocatingServer()}} {
		p := Path{Name: "test/" + tc.name, Messages: 50}
		perOp, _, err := measureAllocs(p, tc.op)
		tc.op.Close()
		if err != nil || perOp < 0.99 {
			t.Errorf("%s: measured %v allocations per operation (%v), want at least 1", tc.name, perOp, err)
		}
	}
}

var escape []byte

// allocating allocates once per Do.
type allocating struct{ inMemory }

func (*allocating) Do() error { escape = make([]byte, 64); return nil }

// allocatingServer makes another goroutine allocate once per Do, and waits
// for it.
type allocatingServer struct {
	inMemory
	req, done chan struct{}
}

func newAllocatingServer() *allocatingServer {
	s := &allocatingServer{req: make(chan struct{}), done: make(chan struct{})}
	go func() {
		for range s.req {
			escape = make([]byte, 64)
			s.done <- struct{}{}
		}
	}()
	return s
}

func (s *allocatingServer) Do() error    { s.req <- struct{}{}; <-s.done; return nil }
func (s *allocatingServer) Close() error { close(s.req); return nil }

func TestLookup(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Paths() {
		if seen[p.Name] {
			t.Errorf("two paths named %s", p.Name)
		}
		seen[p.Name] = true
		got, err := Lookup(p.Name)
		if err != nil || got.Name != p.Name {
			t.Errorf("Lookup(%q) = %q, %v", p.Name, got.Name, err)
		}
		if p.Messages <= 0 || p.Bytes < int64(p.Messages*wire) {
			t.Errorf("%s: %d messages in %d bytes, want at least %d bytes", p.Name, p.Messages, p.Bytes, p.Messages*wire)
		}
	}
	if _, err := Lookup("log/append-batch2"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Lookup of an unknown path: %v, want ErrUnknown", err)
	}
}
