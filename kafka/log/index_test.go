package log

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// logicalOf walks the log from Locate(n)'s answer to the message holding
// logical offset n, the way a 0.8 fetch does, and returns that message's
// byte offset and the logical offset of its first (inner) message.
func logicalOf(t *testing.T, l *Log, n int64) (byteOff, first int64) {
	t.Helper()
	off, at, err := l.Locate(n)
	if err != nil {
		t.Fatalf("Locate(%d): %v", n, err)
	}
	b, err := l.ReadBytes(off, 1<<20)
	if err != nil {
		t.Fatalf("ReadBytes(%d): %v", off, err)
	}
	it := message.NewIterator(b, off)
	for it.Next() {
		count := int64(1)
		if c := it.Message().Codec(); c != message.CodecNone {
			k, err := message.InnerCount(it.Message())
			if err != nil {
				t.Fatal(err)
			}
			count = int64(k)
		}
		if n < at+count {
			return it.Offset(), at
		}
		at += count
	}
	t.Fatalf("logical offset %d not found from byte %d (logical %d)", n, off, at)
	return 0, 0
}

// A plain 200-byte magic-0 message is 209 bytes: the n-th (from 0) starts at
// byte 209·n and is logical offset n. A gzip wrapper of five messages takes
// five logical offsets and one byte offset.
func TestLogicalOffsetsCountMessages(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.FileSize = 10_000 // segments of 48 messages (48·209 = 10,032 ≥ 10,000)
	l := openLog(t, dir, cfg, false)
	for i := 0; i < 100; i++ {
		mustAppend(t, l, makeSet(i, 1, 200))
	}
	wrapper, err := message.Compress(message.CodecGzip, makeSet(100, 5, 200))
	if err != nil {
		t.Fatal(err)
	}
	wrapperAt := mustAppend(t, l, wrapper)
	mustAppend(t, l, makeSet(105, 3, 200))
	mustFlush(t, l)

	check := func(l *Log) {
		t.Helper()
		if got := l.LogicalEnd(); got != 108 {
			t.Fatalf("LogicalEnd = %d, want 100 plain + 5 inner + 3 plain = 108", got)
		}
		for _, n := range []int64{0, 1, 47, 48, 49, 99} {
			if off, first := logicalOf(t, l, n); off != 209*n || first != n {
				t.Errorf("logical %d at byte %d (first %d), want byte 209·%d = %d", n, off, first, n, 209*n)
			}
			if got, err := l.LogicalAt(209 * n); err != nil || got != n {
				t.Errorf("LogicalAt(%d) = %d, %v; want %d", 209*n, got, err, n)
			}
		}
		for n := int64(100); n < 105; n++ {
			if off, first := logicalOf(t, l, n); off != wrapperAt || first != 100 {
				t.Errorf("logical %d at byte %d (first %d), want the wrapper at %d holding 100..104", n, off, first, wrapperAt)
			}
		}
		after := wrapperAt + int64(len(wrapper))
		if off, _ := logicalOf(t, l, 105); off != after {
			t.Errorf("logical 105 at byte %d, want just after the wrapper, %d", off, after)
		}
		if got, _ := l.LogicalAt(after + 209); got != 106 {
			t.Errorf("LogicalAt(after wrapper + 209) = %d, want 106", got)
		}
		if _, _, err := l.Locate(109); err == nil {
			t.Error("Locate(109) past the logical end 108: no error")
		}
	}
	check(l)
	l.Close()

	// Reopened: from the index files.
	check(openLog(t, dir, cfg, false))

	// Reopened without them: rebuilt from the segments.
	idx, _ := filepath.Glob(filepath.Join(dir, "*"+indexExt))
	if len(idx) < 3 {
		t.Fatalf("%d index files, want one per segment (≥ 3)", len(idx))
	}
	for _, p := range idx {
		os.Remove(p)
	}
	check(openLog(t, dir, cfg, true))
}

// Retention deletes the oldest segments; the numbers of the messages left
// do not move, also across a restart (the base is in the index file).
func TestLogicalOffsetsKeptThroughRetention(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.FileSize = 10_000
	cfg.RetentionSize = 15_000
	l := openLog(t, dir, cfg, false)
	for i := 0; i < 150; i++ {
		mustAppend(t, l, makeSet(i, 1, 200))
	}
	mustFlush(t, l)
	if n, err := l.DeleteOldSegments(time.Now()); err != nil || n == 0 {
		t.Fatalf("DeleteOldSegments = %d, %v; want some deleted", n, err)
	}
	start := l.LogicalStart()
	if start == 0 || start%48 != 0 {
		t.Fatalf("LogicalStart = %d after retention, want a multiple of 48 messages per segment", start)
	}
	l.Close()
	l = openLog(t, dir, cfg, true)
	if got := l.LogicalStart(); got != start {
		t.Errorf("LogicalStart after reopening = %d, want %d", got, start)
	}
	if got := l.LogicalEnd(); got != 150 {
		t.Errorf("LogicalEnd after reopening = %d, want 150", got)
	}
	if off, _ := logicalOf(t, l, 149); off != 209*149 {
		t.Errorf("logical 149 at byte %d, want %d", off, 209*149)
	}
	if _, _, err := l.Locate(start - 1); err == nil {
		t.Errorf("Locate(%d), before the first message held: no error", start-1)
	}
}

// A follower's truncation cuts the index with the log, and recovery's cut of
// a torn tail drops the entries past it.
func TestLogicalOffsetsCutWithTheLog(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.FileSize = 10_000
	l := openLog(t, dir, cfg, false)
	for i := 0; i < 120; i += 10 {
		mustAppend(t, l, makeSet(i, 10, 200))
	}
	mustFlush(t, l)
	if err := l.TruncateTo(209 * 70); err != nil {
		t.Fatal(err)
	}
	if got := l.LogicalEnd(); got != 70 {
		t.Fatalf("LogicalEnd after TruncateTo(209·70) = %d, want 70", got)
	}
	if off := mustAppend(t, l, makeSet(70, 1, 200)); off != 209*70 {
		t.Fatalf("append after truncation at %d", off)
	}
	if got := l.LogicalEnd(); got != 71 {
		t.Fatalf("LogicalEnd = %d, want 71", got)
	}
	mustFlush(t, l)
	l.Close()

	// Tear the last message: recovery cuts it, and its number goes with it.
	segs, _ := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
	last := segs[len(segs)-1]
	fi, _ := os.Stat(last)
	if err := os.Truncate(last, fi.Size()-10); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg, true)
	if got := l.LogicalEnd(); got != 70 {
		t.Errorf("LogicalEnd after recovery cut the torn message = %d, want 70", got)
	}
	if got, err := l.LogicalAt(l.LogEndOffset()); err != nil || got != 70 {
		t.Errorf("LogicalAt(log end) = %d, %v; want 70", got, err)
	}
}

// A wrapper appended as the active segment rolls is counted by its messages, not as one.
func TestLogicalOffsetsWrapperAfterRoll(t *testing.T) {
	cfg := testConfig()
	cfg.FileSize = 1000
	l := openLog(t, t.TempDir(), cfg, false)
	for i := 0; i < 5; i++ {
		mustAppend(t, l, makeSet(i, 1, 200)) // 5 × 209 = 1045 bytes: the next append rolls
	}
	wrapper, err := message.Compress(message.CodecGzip, makeSet(5, 4, 200))
	if err != nil {
		t.Fatal(err)
	}
	at := mustAppend(t, l, wrapper)
	if at != 5*209 || len(l.Segments()) != 2 {
		t.Fatalf("the wrapper went to %d in %d segments; want 1045, the start of a second segment", at, len(l.Segments()))
	}
	if got := l.LogicalEnd(); got != 9 {
		t.Errorf("LogicalEnd = %d, want 5 plain + 4 in the wrapper = 9", got)
	}
	mustAppend(t, l, makeSet(9, 1, 200))
	mustFlush(t, l)
	if off, first := logicalOf(t, l, 9); off != at+int64(len(wrapper)) || first != 9 {
		t.Errorf("logical 9 at byte %d (first %d), want just after the wrapper, %d", off, first, at+int64(len(wrapper)))
	}
}

// LogicalAt at the end of a large last set (1,000 messages, whose only index
// entry is at its start), at its start and inside it. This checks the
// answers; that the end is answered without reading the set is seen in the
// broker's CPU per fetch (docs/PERFORMANCE.md), not here.
func TestLogicalAtTheEndOfALargeSet(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(), false)
	mustAppend(t, l, makeSet(0, 5, 200))
	mustAppend(t, l, makeSet(5, 1000, 200))
	mustFlush(t, l)
	for _, c := range []struct{ b, want int64 }{{209 * 1005, 1005}, {209 * 5, 5}, {209 * 600, 600}} {
		if got, err := l.LogicalAt(c.b); err != nil || got != c.want {
			t.Errorf("LogicalAt(%d) = %d, %v; want %d", c.b, got, err, c.want)
		}
	}
}
