package log

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

func TestAppendThenReadBack(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(), false)
	const size = 200
	var offsets []int64
	for b := 0; b < 10; b++ {
		offsets = append(offsets, mustAppend(t, l, makeSet(b*7, 7, size)))
	}
	mustFlush(t, l)
	// §3.1: ids increase but are not consecutive; the next is offset+length.
	for b, off := range offsets {
		if want := int64(b * 7 * message.SizeV0(size)); off != want {
			t.Fatalf("set %d appended at offset %d, want %d", b, off, want)
		}
	}
	if want := int64(70 * message.SizeV0(size)); l.LogEndOffset() != want || l.FlushedEnd() != want || l.Size() != want {
		t.Fatalf("LEO %d HWM %d Size %d, want all %d", l.LogEndOffset(), l.FlushedEnd(), l.Size(), want)
	}
	for _, fetch := range []int{209, 1000, 1 << 20} {
		checkMessages(t, readAll(t, l, 0, fetch), 0, 0, 70, size)
	}
	// Rewind (§3.1 "stateless broker"): start again from message 30.
	from := int64(30 * message.SizeV0(size))
	checkMessages(t, readAll(t, l, from, 500), from, 30, 40, size)
}

func TestOnlyFlushedBytesAreVisible(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(), false)
	set := makeSet(0, 5, 100)
	mustAppend(t, l, set)
	if l.LogEndOffset() != int64(len(set)) || l.FlushedEnd() != 0 {
		t.Fatalf("before flush: LEO %d HWM %d, want %d and 0", l.LogEndOffset(), l.FlushedEnd(), len(set))
	}
	// §3.1: messages are only exposed to consumers after they are flushed.
	if b, err := l.ReadBytes(0, 1000); err != nil || len(b) != 0 {
		t.Fatalf("ReadBytes(0) before flush = %d bytes, %v; want 0 bytes, nil", len(b), err)
	}
	if _, err := l.ReadBytes(10, 1000); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("ReadBytes(10) before flush: err %v, want ErrOffsetOutOfRange", err)
	}
	if got := l.Offsets(-1, 10); len(got) != 1 || got[0] != 0 {
		t.Fatalf("Offsets(latest) before flush = %v, want [0]", got)
	}
	mustFlush(t, l)
	if l.FlushedEnd() != int64(len(set)) {
		t.Fatalf("HWM after flush %d, want %d", l.FlushedEnd(), len(set))
	}
	if b, err := l.ReadBytes(0, 1000); err != nil || string(b) != string(set) {
		t.Fatalf("ReadBytes(0) after flush = %d bytes, %v; want the %d appended bytes", len(b), err, len(set))
	}
}

func TestFlushAfterIntervalMessages(t *testing.T) {
	cfg := testConfig()
	cfg.FlushInterval = 10
	l := openLog(t, t.TempDir(), cfg, false)
	mustAppend(t, l, makeSet(0, 9, 50))
	time.Sleep(20 * time.Millisecond)
	if l.FlushedEnd() != 0 {
		t.Fatalf("HWM %d after 9 of 10 messages, want 0 (no flush yet)", l.FlushedEnd())
	}
	mustAppend(t, l, makeSet(9, 1, 50))
	waitFor(t, "background flush after 10 messages", func() bool { return l.FlushedEnd() == l.LogEndOffset() })
}

// §3.1 "after a configurable number of messages": the flush points are the
// multiples of log.flush.interval, as in 0.7, even when the background flush
// runs late and covers more messages than the interval. Here the flusher is
// held while 5 more messages arrive, so its flush covers 15; the 20th
// message must still start a flush (no timer runs for a lone Log).
func TestFlushPointsStayAtMultiplesOfTheInterval(t *testing.T) {
	cfg := testConfig()
	cfg.FlushInterval = 10
	l := openLog(t, t.TempDir(), cfg, false)
	l.flushMu.Lock() // the flusher, once woken, waits here
	mustAppend(t, l, makeSet(0, 10, 50))
	mustAppend(t, l, makeSet(10, 5, 50))
	l.flushMu.Unlock()
	waitFor(t, "the late flush covering 15 messages", func() bool { return l.FlushedEnd() == l.LogEndOffset() })
	mustAppend(t, l, makeSet(15, 5, 50))
	waitFor(t, "a flush at the 20th message", func() bool { return l.FlushedEnd() == l.LogEndOffset() })
}

// waitFor polls cond for up to 10 seconds; it is not a speed assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestAppendRefusesInvalidSetsWhole(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, testConfig(), false)
	good := makeSet(0, 3, 40)
	mustAppend(t, l, good)

	badCRC := makeSet(3, 3, 40)
	badCRC[len(badCRC)-1] ^= 0xff // last message's payload
	badMagic := makeSet(3, 3, 40)
	badMagic[message.SizeV0(40)+message.LengthSize] = 7 // second message's magic
	partial := makeSet(3, 3, 40)
	partial = partial[:len(partial)-5]
	shortN := append(makeSet(3, 1, 40), 0, 0, 0, 2, 0, 0)

	for name, set := range map[string][]byte{"bad CRC": badCRC, "bad magic": badMagic, "partial tail": partial, "short length": shortN} {
		if _, err := l.Append(set); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%s: Append err %v, want ErrInvalidMessage", name, err)
		}
	}
	if l.LogEndOffset() != int64(len(good)) {
		t.Fatalf("LEO %d after refused sets, want %d", l.LogEndOffset(), len(good))
	}
	mustFlush(t, l)
	fi, err := os.Stat(filepath.Join(dir, segmentFileName(0)))
	if err != nil || fi.Size() != int64(len(good)) {
		t.Fatalf("segment file: %v, size %d; want %d bytes", err, fi.Size(), len(good))
	}
	if off, err := l.Append(nil); err != nil || off != int64(len(good)) {
		t.Fatalf("Append(empty) = %d, %v; want %d, nil", off, err, len(good))
	}
}

func TestRollAtFileSizeAndTiling(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.FileSize = 1000
	l := openLog(t, dir, cfg, false)
	const size, perSet, sets = 100, 3, 40
	setLen := int64(perSet * message.SizeV0(size))
	for b := 0; b < sets; b++ {
		mustAppend(t, l, makeSet(b*perSet, perSet, size))
	}
	mustFlush(t, l)
	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("%d segments for %d bytes with FileSize 1000, want many", len(segs), sets*setLen)
	}
	for i, s := range segs {
		if filepath.Base(s.Path) != segmentFileName(s.Start) || len(filepath.Base(s.Path)) != 26 {
			t.Errorf("segment %d at %d is named %s", i, s.Start, filepath.Base(s.Path))
		}
		if i+1 < len(segs) {
			if s.Start+s.Size != segs[i+1].Start {
				t.Errorf("segments %d and %d do not tile: %d+%d != %d", i, i+1, s.Start, s.Size, segs[i+1].Start)
			}
			// Rolled once it reached FileSize, and a set never spans two files.
			if s.Size < cfg.FileSize || s.Size >= cfg.FileSize+setLen || s.Size%setLen != 0 {
				t.Errorf("closed segment %d holds %d bytes; want whole sets, at least %d and less than %d", i, s.Size, cfg.FileSize, cfg.FileSize+setLen)
			}
		}
		if fi, err := os.Stat(s.Path); err != nil || fi.Size() != s.Size {
			t.Errorf("segment file %s: %v; size on disk differs from %d", s.Path, err, s.Size)
		}
	}
	checkMessages(t, readAll(t, l, 0, 700), 0, 0, sets*perSet, size)

	// Reopen: the same segments are found and tile.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, cfg, false)
	if got := len(l2.Segments()); got != len(segs) {
		t.Fatalf("reopened log has %d segments, want %d", got, len(segs))
	}
	checkMessages(t, readAll(t, l2, 0, 4096), 0, 0, sets*perSet, size)
	if off := mustAppend(t, l2, makeSet(999, 1, size)); off != int64(sets)*setLen {
		t.Fatalf("append after reopen at %d, want %d", off, int64(sets)*setLen)
	}
}

func TestReadBinarySearchAcrossManySegments(t *testing.T) {
	cfg := testConfig()
	cfg.FileSize = 300
	l := openLog(t, t.TempDir(), cfg, false)
	const n = 400
	starts := make([]int64, n)
	for i := range n {
		size := 20 + i%50
		starts[i] = mustAppend(t, l, message.AppendV0(nil, payload(i, size)))
	}
	mustFlush(t, l)
	segs := l.Segments()
	if len(segs) < 50 {
		t.Fatalf("only %d segments", len(segs))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		i := rng.IntN(n)
		c, err := l.Read(starts[i], 1<<20)
		if err != nil {
			t.Fatalf("Read(%d): %v", starts[i], err)
		}
		// The chunk lies inside one segment and starts with message i.
		var seg SegmentInfo
		for _, s := range segs {
			if s.Start <= starts[i] {
				seg = s
			}
		}
		if c.Pos != starts[i]-seg.Start || c.Pos+c.Len != seg.Size || c.File.Name() != seg.Path {
			t.Fatalf("Read(%d) = %s pos %d len %d, want %s pos %d len %d",
				starts[i], c.File.Name(), c.Pos, c.Len, seg.Path, starts[i]-seg.Start, seg.Size-(starts[i]-seg.Start))
		}
		b := make([]byte, c.Len)
		if _, err := c.ReadAt(b); err != nil {
			t.Fatal(err)
		}
		c.Release()
		it := message.NewIterator(b, starts[i])
		if !it.Next() || string(it.Message().Payload()) != string(payload(i, 20+i%50)) {
			t.Fatalf("Read(%d) does not start with message %d", starts[i], i)
		}
	}
}

func TestReadBounds(t *testing.T) {
	cfg := testConfig()
	cfg.FileSize = 500
	l := openLog(t, t.TempDir(), cfg, false)
	for b := range 4 {
		mustAppend(t, l, makeSet(b*2, 2, 150)) // 318-byte sets, two per 636-byte segment
	}
	mustFlush(t, l)
	hwm := l.FlushedEnd()
	cases := []struct {
		offset  int64
		max     int
		wantLen int64
		wantErr error
	}{
		{0, 100, 100, nil},     // cut at maxSize, mid-message
		{0, 10000, 636, nil},   // cut at the segment's end
		{636, 10000, 636, nil}, // the second segment
		{700, 10000, 572, nil}, // inside a segment (not a message boundary: the consumer's problem)
		{1272, 10000, 0, nil},  // == HWM: empty
		{0, 0, 0, nil},         // maxSize 0
		{hwm + 1, 10, 0, ErrOffsetOutOfRange},
		{-1, 10, 0, ErrOffsetOutOfRange},
		{0, -1, 0, ErrInvalidFetchSize},
	}
	if hwm != 1272 {
		t.Fatalf("HWM %d, want 1272", hwm)
	}
	for _, c := range cases {
		ch, err := l.Read(c.offset, c.max)
		if !errors.Is(err, c.wantErr) || (err == nil && ch.Len != c.wantLen) {
			t.Errorf("Read(%d, %d) = len %d, err %v; want len %d, err %v", c.offset, c.max, ch.Len, err, c.wantLen, c.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), l.Dir()) {
			t.Errorf("error %q does not name the log", err)
		}
		// InRange, which the broker asks before Read, agrees with Read on
		// which offsets are out of range.
		if in := l.InRange(c.offset); in == errors.Is(err, ErrOffsetOutOfRange) {
			t.Errorf("InRange(%d) = %v, but Read's error is %v", c.offset, in, err)
		}
		ch.Release()
	}
}

func TestCloseThenUse(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(), false)
	mustAppend(t, l, makeSet(0, 2, 10))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.FlushedEnd() != l.LogEndOffset() {
		t.Fatalf("Close did not flush: HWM %d LEO %d", l.FlushedEnd(), l.LogEndOffset())
	}
	if _, err := l.Append(makeSet(2, 1, 10)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := l.Read(0, 10); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRollFlushesOldSegment(t *testing.T) {
	cfg := testConfig()
	cfg.FileSize = 100
	l := openLog(t, t.TempDir(), cfg, false)
	mustAppend(t, l, makeSet(0, 2, 30)) // 78 bytes
	mustAppend(t, l, makeSet(2, 2, 30)) // 156: reached FileSize
	if l.FlushedEnd() != 0 {
		t.Fatalf("HWM %d before any flush or roll, want 0", l.FlushedEnd())
	}
	mustAppend(t, l, makeSet(4, 2, 30)) // rolls first
	if l.FlushedEnd() != 156 || l.LogEndOffset() != 234 {
		t.Fatalf("after the roll HWM %d LEO %d; want 156 (old segment fsynced) and 234", l.FlushedEnd(), l.LogEndOffset())
	}
	checkMessages(t, readAll(t, l, 0, 1000), 0, 0, 4, 30)
}

func TestLargeAndSmallSetsMix(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(), false)
	const size = 1000
	big := makeSet(1, 150, size) // larger than the write buffer: written directly
	if len(big) < writeBufferSize {
		t.Fatalf("big set is only %d bytes", len(big))
	}
	mustAppend(t, l, makeSet(0, 1, size))
	mustAppend(t, l, big)
	mustAppend(t, l, makeSet(151, 70, size)) // fills the buffer past its size
	mustAppend(t, l, makeSet(221, 1, size))
	mustFlush(t, l)
	checkMessages(t, readAll(t, l, 0, 5000), 0, 0, 222, size)
}
