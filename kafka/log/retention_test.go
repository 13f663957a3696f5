package log

import (
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// fourSegments builds a flushed log of 4 segments of 5 messages of 30 bytes
// (195 bytes each), with file mtimes 400, 300, 200 and 100 hours ago.
func fourSegments(t *testing.T, cfg Config) (*Log, time.Time) {
	t.Helper()
	cfg.FileSize = 5 * 39
	l := openLog(t, t.TempDir(), cfg, false)
	for i := range 20 {
		mustAppend(t, l, makeSet(i, 1, 30))
	}
	mustFlush(t, l)
	now := time.Now()
	for i, s := range l.Segments() {
		mt := now.Add(-time.Duration(400-100*i) * time.Hour)
		if err := os.Chtimes(s.Path, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return l, now
}

func segmentStarts(l *Log) []int64 {
	var out []int64
	for _, s := range l.Segments() {
		out = append(out, s.Start)
	}
	return out
}

func TestRetentionByTimeDeletesOldPrefix(t *testing.T) {
	cfg := testConfig()
	cfg.RetentionHours = 250
	l, now := fourSegments(t, cfg)
	paths := l.Segments()
	n, err := l.DeleteOldSegments(now)
	if err != nil || n != 2 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 2 (the 400h and 300h old ones)", n, err)
	}
	if got := segmentStarts(l); !slices.Equal(got, []int64{390, 585}) {
		t.Fatalf("segments left start at %v, want [390 585]", got)
	}
	for _, s := range paths[:2] {
		if _, err := os.Stat(s.Path); !os.IsNotExist(err) {
			t.Errorf("%s still exists (%v)", s.Path, err)
		}
	}
	if _, err := l.ReadBytes(0, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("read of a deleted offset: %v, want ErrOffsetOutOfRange", err)
	}
	checkMessages(t, readAll(t, l, 390, 100), 390, 10, 10, 30)
	if l.Size() != 390 || l.LogEndOffset() != 780 {
		t.Errorf("Size %d LEO %d, want 390 and 780", l.Size(), l.LogEndOffset())
	}
}

func TestRetentionDeletesOnlyAPrefix(t *testing.T) {
	cfg := testConfig()
	cfg.RetentionHours = 250
	l, now := fourSegments(t, cfg)
	// Make the first segment young: nothing after it may go either.
	os.Chtimes(l.Segments()[0].Path, now, now)
	if n, err := l.DeleteOldSegments(now); err != nil || n != 0 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 0", n, err)
	}
}

func TestRetentionOfEverythingKeepsEndOffset(t *testing.T) {
	cfg := testConfig()
	cfg.RetentionHours = 50
	l, now := fourSegments(t, cfg)
	// Two more messages roll a fifth segment.
	mustAppend(t, l, makeSet(20, 2, 30))
	mustFlush(t, l)
	end := l.LogEndOffset()
	for _, s := range l.Segments() { // the flush touched the last file
		old := now.Add(-60 * time.Hour)
		os.Chtimes(s.Path, old, old)
	}
	n, err := l.DeleteOldSegments(now)
	if err != nil || n != 5 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 5", n, err)
	}
	segs := l.Segments()
	if len(segs) != 1 || segs[0].Start != end || segs[0].Size != 0 {
		t.Fatalf("segments after deleting all: %+v, want one empty at %d", segs, end)
	}
	if l.LogEndOffset() != end || l.FlushedEnd() != end {
		t.Fatalf("LEO %d HWM %d, want both %d: the end offset never moves backwards", l.LogEndOffset(), l.FlushedEnd(), end)
	}
	if off := mustAppend(t, l, makeSet(22, 1, 30)); off != end {
		t.Fatalf("next append at %d, want %d", off, end)
	}
	mustFlush(t, l)
	checkMessages(t, readAll(t, l, end, 100), end, 22, 1, 30)

	// An old but empty active segment is kept (and touched), not replaced.
	l2 := openLog(t, t.TempDir(), cfg, false)
	old := now.Add(-100 * time.Hour)
	os.Chtimes(l2.Segments()[0].Path, old, old)
	if n, err := l2.DeleteOldSegments(now); n != 0 || err != nil {
		t.Fatalf("empty log: DeleteOldSegments = %d, %v; want 0, nil", n, err)
	}
	if mt := l2.Segments()[0].ModTime; now.Sub(mt) > time.Hour {
		t.Errorf("empty active segment not touched: mtime %v", mt)
	}
}

func TestRetentionBySize(t *testing.T) {
	cfg := testConfig()
	cfg.RetentionSize = 400 // of 780 bytes in 195-byte segments
	l, now := fourSegments(t, cfg)
	n, err := l.DeleteOldSegments(now)
	// Kafka 0.7: delete while what remains is at least the limit: 780→585→390.
	if err != nil || n != 1 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 1", n, err)
	}
	if l.Size() != 585 || l.LogEndOffset() != 780 {
		t.Fatalf("Size %d LEO %d, want 585 and 780", l.Size(), l.LogEndOffset())
	}
	cfg.RetentionSize = 195
	l.cfg = cfg
	if n, _ := l.DeleteOldSegments(now); n != 2 || l.Size() != 195 {
		t.Fatalf("with 195: deleted %d, size %d; want 2 and 195", n, l.Size())
	}
}

func TestChunkPinsDeletedSegment(t *testing.T) {
	cfg := testConfig()
	cfg.RetentionHours = 250
	l, now := fourSegments(t, cfg)
	c, err := l.Read(0, 1000)
	if err != nil || c.Len != 195 {
		t.Fatalf("Read(0) = len %d, %v", c.Len, err)
	}
	if n, _ := l.DeleteOldSegments(now); n != 2 {
		t.Fatalf("deleted %d, want 2", n)
	}
	b := make([]byte, c.Len)
	if _, err := c.ReadAt(b); err != nil {
		t.Fatalf("reading a Chunk of a deleted segment: %v", err)
	}
	if _, _, err := message.Validate(b); err != nil {
		t.Fatalf("chunk bytes: %v", err)
	}
	c.Release()
	if _, err := c.File.ReadAt(b[:1], 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("after the last Release the file should be closed, ReadAt err %v", err)
	}
}

func TestOffsets(t *testing.T) {
	l, now := fourSegments(t, testConfig())
	ms := func(hoursAgo int) int64 { return now.Add(-time.Duration(hoursAgo) * time.Hour).UnixMilli() }
	cases := []struct {
		t    int64
		max  int
		want []int64
	}{
		{-1, 10, []int64{780, 585, 390, 195, 0}},
		{-1, 1, []int64{780}},
		{-2, 10, []int64{0}},
		{-2, 1, []int64{0}},
		{ms(250), 10, []int64{195, 0}}, // segments modified 400h and 300h ago
		{ms(250), 1, []int64{195}},     // at most max
		{ms(500), 10, []int64{}},       // nothing that old
		{ms(0) + 60000, 10, []int64{780, 585, 390, 195, 0}},
		{-1, 0, []int64{}},
	}
	for _, c := range cases {
		if got := l.Offsets(c.t, c.max); !slices.Equal(got, c.want) {
			t.Errorf("Offsets(%d, %d) = %v, want %v", c.t, c.max, got, c.want)
		}
	}
	// Unflushed bytes are not offered as "latest".
	mustAppend(t, l, makeSet(20, 1, 30))
	if got := l.Offsets(-1, 1); !slices.Equal(got, []int64{780}) {
		t.Errorf("Offsets(latest) with unflushed data = %v, want [780]", got)
	}
}
