package log

import (
	"os"
	"slices"
	"sync"
	"testing"
)

// writes is the real storage, noting the size of every write the log makes.
type writes struct {
	osStorage
	mu    sync.Mutex
	sizes []int
}

func (w *writes) WriteAt(f *os.File, p []byte, off int64) (int, error) {
	w.mu.Lock()
	w.sizes = append(w.sizes, len(p))
	w.mu.Unlock()
	return f.WriteAt(p, off)
}

func (w *writes) take() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.sizes
	w.sizes = nil
	return s
}

// openWrites opens a log in a temporary folder that writes through a
// writes, closed when the test ends.
func openWrites(t *testing.T, cfg Config) (*Log, *writes) {
	t.Helper()
	w := &writes{}
	l, err := open(t.TempDir(), cfg, false, nil, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, w
}

// A batch of 50 messages of 200 bytes: 50 × (4 + 1 + 4 + 200) = 10,450 bytes.
const batch50 = 50 * (4 + 1 + 4 + 200)

// A log's 64 KiB buffer grows to 1 MiB at the first append that finds it
// full, and the log's bytes then reach the file in writes of up to 1 MiB:
// 200 sets of 10,450 bytes are written as 6 sets (62,700 bytes, the 7th
// does not fit in 65,536), then 100 (1,045,000 of 1,048,576), then the 94
// left at the flush (982,300). A set of at least 64 KiB still goes straight
// to the file, after what the buffer holds. Every message reads back in
// order.
func TestWriteBufferGrowsWhenFull(t *testing.T) {
	l, w := openWrites(t, testConfig())
	if len(makeSet(0, 50, 200)) != batch50 {
		t.Fatalf("a set of 50 messages of 200 bytes is %d bytes, want %d", len(makeSet(0, 50, 200)), batch50)
	}
	for i := range 200 {
		mustAppend(t, l, makeSet(i*50, 50, 200))
	}
	mustFlush(t, l)
	if got, want := w.take(), []int{6 * batch50, 100 * batch50, 94 * batch50}; !slices.Equal(got, want) {
		t.Fatalf("writes of %v bytes, want %v", got, want)
	}
	if cap(l.buf) != grownWriteBufferSize {
		t.Fatalf("write buffer of %d bytes after the appends, want %d", cap(l.buf), grownWriteBufferSize)
	}

	mustAppend(t, l, makeSet(10000, 2, 200))   // 418 bytes, buffered
	mustAppend(t, l, makeSet(10002, 400, 200)) // 83,600 bytes: straight to the file, after the 418
	mustAppend(t, l, makeSet(10402, 1, 200))   // buffered again
	mustFlush(t, l)
	if got, want := w.take(), []int{2 * 209, 400 * 209, 209}; !slices.Equal(got, want) {
		t.Fatalf("writes of %v bytes, want %v", got, want)
	}
	msgs := readAll(t, l, 0, 1<<20)
	checkMessages(t, msgs[:10000], 0, 0, 10000, 200)
	checkMessages(t, msgs[10000:], 10000*209, 10000, 403, 200)
}

// With log.grown.buffers.max=0 a log opened on its own keeps 64 KiB too,
// and writes 6 sets at a time.
func TestWriteBufferGrowthOff(t *testing.T) {
	cfg := testConfig()
	cfg.GrownWriteBuffers = 0
	l, w := openWrites(t, cfg)
	for i := range 20 {
		mustAppend(t, l, makeSet(i*50, 50, 200))
	}
	if cap(l.buf) != writeBufferSize {
		t.Fatalf("write buffer of %d bytes with log.grown.buffers.max=0, want %d", cap(l.buf), writeBufferSize)
	}
	if got, want := w.take(), []int{6 * batch50, 6 * batch50, 6 * batch50}; !slices.Equal(got, want) {
		t.Fatalf("writes of %v bytes, want %v", got, want)
	}
}

// A log that never fills its buffer between flushes keeps 64 KiB.
func TestWriteBufferStaysSmallWhenFlushedFirst(t *testing.T) {
	l, w := openWrites(t, testConfig())
	for i := range 50 {
		mustAppend(t, l, makeSet(i*50, 50, 200))
		if i%5 == 4 {
			mustFlush(t, l) // 5 sets, 52,250 bytes: less than 64 KiB
		}
	}
	if cap(l.buf) != writeBufferSize {
		t.Fatalf("write buffer of %d bytes, want %d", cap(l.buf), writeBufferSize)
	}
	for _, n := range w.take() {
		if n != 5*batch50 {
			t.Fatalf("a write of %d bytes, want every write %d", n, 5*batch50)
		}
	}
}

// The Manager grants at most log.grown.buffers.max grown buffers: with
// one, the first partition to fill its buffer grows it, the second keeps
// 64 KiB and loses nothing, and Close hands the grown one back.
func TestWriteBufferBoundedByManager(t *testing.T) {
	w := &writes{}
	cfg := testConfig()
	cfg.GrownWriteBuffers = 1 // log.grown.buffers.max=1
	m, err := openManager(t.TempDir(), cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*Log
	for p := range 2 {
		m.cfg.NumPartitions = 2
		l, err := m.GetOrCreate("grow", p)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	for _, l := range logs {
		for i := range 20 {
			mustAppend(t, l, makeSet(i*50, 50, 200))
		}
		mustFlush(t, l)
	}
	if held, refused := m.WriteBufferStats(); held != 1 || refused == 0 {
		t.Fatalf("grown write buffers held %d, refused %d; want 1 and at least 1", held, refused)
	}
	if cap(logs[0].buf) != grownWriteBufferSize || cap(logs[1].buf) != writeBufferSize {
		t.Fatalf("write buffers of %d and %d bytes, want %d and %d", cap(logs[0].buf), cap(logs[1].buf), grownWriteBufferSize, writeBufferSize)
	}
	for _, l := range logs {
		checkMessages(t, readAll(t, l, 0, 1<<20), 0, 0, 1000, 200)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if held, _ := m.WriteBufferStats(); held != 0 {
		t.Fatalf("grown write buffers held %d after Close, want 0", held)
	}
}
