package brokertest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Logger is a logger for the code under test: warnings and errors go to the
// test's log (t.Log: shown when the test fails or runs with -v), the rest
// is dropped. Lines logged after the test has ended are dropped too, so a
// goroutine that outlives the test cannot make it panic.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(bytes.TrimSuffix(p, []byte("\n"))))
	}
	return len(p), nil
}

// LogBuffer collects what a logger writes, for a test that checks the lines
// logged (slog.New(slog.NewTextHandler(&buf, nil))). It is safe for the
// goroutines that log.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
