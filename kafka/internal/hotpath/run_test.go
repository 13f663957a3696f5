package hotpath

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestRun is what an instruction counter runs (make perf-check,
// experiments/perfcheck): with HOTPATH_RUN=<path> and HOTPATH_OPS=<n> in
// the environment it opens the path, warms it up, runs n operations and
// Settle, closes it, and prints one line
//
//	hotpath-run: path=log/append-batch50 ops=2000 messages=100000 allocs=0
//
// with the heap allocations of every goroutine during the n operations.
// HOTPATH_RUN=list prints every path instead, one line each:
//
//	hotpath-path: path=log/append-batch50 messages=50
//
// The counter runs the test binary under `valgrind --tool=callgrind` twice,
// with n and with 0, and divides the difference of the two instruction
// counts by the messages: what opening, warming up and closing cost is in
// both runs and drops out. Without HOTPATH_RUN it checks itself on every
// path with a few operations.
func TestRun(t *testing.T) {
	name := os.Getenv("HOTPATH_RUN")
	if name == "" {
		for _, p := range Paths() {
			t.Run(p.Name, func(t *testing.T) {
				if line, err := run(p, t.TempDir(), 3); err != nil {
					t.Fatal(err)
				} else {
					t.Log(line)
				}
			})
		}
		return
	}
	if name == "list" {
		for _, p := range Paths() {
			fmt.Printf("hotpath-path: path=%s messages=%d\n", p.Name, p.Messages)
		}
		return
	}
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := strconv.Atoi(os.Getenv("HOTPATH_OPS"))
	if err != nil || ops < 0 {
		t.Fatalf("HOTPATH_OPS=%q: want a count of operations (0 or more)", os.Getenv("HOTPATH_OPS"))
	}
	line, err := run(p, t.TempDir(), ops)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(line)
}

// run opens p in dir, runs as many operations as make 1,000 messages (at
// least two) to reach the steady state (connections dialled, buffers grown),
// then ops more, and reports them.
func run(p Path, dir string, ops int) (string, error) {
	op, err := p.Open(dir)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", p.Name, err)
	}
	var before, after runtime.MemStats
	err = repeat(op, max(2, 1000/p.Messages))
	if err == nil {
		runtime.ReadMemStats(&before)
		err = repeat(op, ops)
		runtime.ReadMemStats(&after)
	}
	if err = errors.Join(err, op.Close()); err != nil {
		return "", fmt.Errorf("%s: %w", p.Name, err)
	}
	return fmt.Sprintf("hotpath-run: path=%s ops=%d messages=%d allocs=%d",
		p.Name, ops, ops*p.Messages, after.Mallocs-before.Mallocs), nil
}

// repeat runs n operations and Settle.
func repeat(op Op, n int) error {
	for range n {
		if err := op.Do(); err != nil {
			return err
		}
	}
	return op.Settle()
}
