package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

func openReplicaLog(t *testing.T, cfg Config) *Log {
	t.Helper()
	l, err := Open(t.TempDir(), cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// A follower reads the leader past its flushed end, a consumer of a
// replicated partition stops at the limit it is given, and offsets between
// the limit and the log end are empty reads, not errors.
func TestReadUpToReadsPastTheFlushedEnd(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlushInterval, cfg.FlushIntervalMs = 0, 0 // nothing flushes by itself
	l := openReplicaLog(t, cfg)
	set := message.AppendV0(message.AppendV0(nil, []byte("one")), []byte("two"))
	if _, err := l.Append(set); err != nil {
		t.Fatal(err)
	}
	if got := l.FlushedEnd(); got != 0 {
		t.Fatalf("flushed end %d before any flush", got)
	}
	c, err := l.ReadUpTo(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, c.Len)
	c.ReadAt(b)
	c.Release()
	if !bytes.Equal(b, set) {
		t.Fatalf("ReadUpTo(log end) = %q, want the unflushed set %q", b, set)
	}
	first := int64(message.SizeV0(3))
	c, err = l.ReadUpTo(0, 1<<20, first)
	if err != nil || c.Len != first {
		t.Fatalf("ReadUpTo(first message's end) = %d bytes, %v; want %d", c.Len, err, first)
	}
	c.Release()
	if c, err := l.ReadUpTo(l.LogEndOffset(), 100, first); err != nil || c.Len != 0 {
		t.Fatalf("offset past the limit: %d bytes, %v; want an empty read", c.Len, err)
	}
	if _, err := l.ReadUpTo(l.LogEndOffset()+1, 100, first); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("offset past the log end: %v, want ErrOffsetOutOfRange", err)
	}
	// Read, the paper's rule, still shows nothing unflushed.
	if _, err := l.Read(first, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read past the flushed end: %v, want ErrOffsetOutOfRange", err)
	}
	if got := l.OffsetsUpTo(-1, 1, first); len(got) != 1 || got[0] != first {
		t.Fatalf("OffsetsUpTo latest = %v, want [%d]", got, first)
	}
}

// TruncateTo cuts a tail that spans segments; appends then go on at the
// truncation point, so the next message has the offset the leader gave it.
func TestTruncateToAcrossSegments(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FileSize = 100
	l := openReplicaLog(t, cfg)
	msg := message.AppendV0(nil, bytes.Repeat([]byte{'a'}, 41)) // 50 bytes
	var offs []int64
	for range 6 {
		o, err := l.Append(msg)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, o)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(l.Segments()); n != 3 {
		t.Fatalf("%d segments, want 3 of two messages each", n)
	}
	if err := l.TruncateTo(offs[2]); err != nil { // the start of the second segment
		t.Fatal(err)
	}
	if l.LogEndOffset() != offs[2] || l.FlushedEnd() != offs[2] || len(l.Segments()) != 1 {
		t.Fatalf("after truncating to %d: log end %d, flushed end %d, %d segments", offs[2], l.LogEndOffset(), l.FlushedEnd(), len(l.Segments()))
	}
	if o, err := l.Append(msg); err != nil || o != offs[2] {
		t.Fatalf("append after truncation at %d, %v; want %d", o, err, offs[2])
	}
	if err := l.TruncateTo(offs[1]); err != nil { // inside a segment, buffer and file
		t.Fatal(err)
	}
	if l.LogEndOffset() != offs[1] {
		t.Fatalf("log end %d, want %d", l.LogEndOffset(), offs[1])
	}
	if err := l.TruncateTo(offs[5]); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("truncate past the end: %v, want ErrOffsetOutOfRange", err)
	}
	l.Close()
	again, err := Open(l.Dir(), cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.LogEndOffset() != offs[1] {
		t.Fatalf("reopened at %d, want %d", again.LogEndOffset(), offs[1])
	}
}

// A follower's fetched bytes go in in one pass (AppendReplicaPrefix): every
// CRC checked, the whole good messages appended and in the file at once
// (after what the write buffer held, in order), a partial tail left for the
// next fetch, a corrupt message refused with everything after it.
func TestAppendReplicaPrefix(t *testing.T) {
	const size = 20 // each message 9 + 20 bytes
	l := openReplicaLog(t, DefaultConfig())
	mustAppend(t, l, makeSet(0, 1, size)) // buffered: 29 bytes not in the file yet
	fetched := append(makeSet(1, 3, size), makeSet(4, 1, size)[:10]...)
	off, valid, err := l.AppendReplicaPrefix(fetched)
	if err != nil || off != 29 || valid != 3*29 {
		t.Fatalf("AppendReplicaPrefix: offset %d, valid %d, %v; want 29, 87, nil", off, valid, err)
	}
	fi, err := os.Stat(filepath.Join(l.Dir(), segmentFileName(0)))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 4*29 || l.LogEndOffset() != 4*29 {
		t.Fatalf("file %d bytes, log end %d; want both 116 (4 messages, none left in the buffer)", fi.Size(), l.LogEndOffset())
	}
	bad := makeSet(6, 1, size)
	bad[len(bad)-1] ^= 1
	fetched = append(append(makeSet(4, 2, size), bad...), makeSet(7, 1, size)...)
	off, valid, err = l.AppendReplicaPrefix(fetched)
	if !errors.Is(err, ErrInvalidMessage) || !errors.Is(err, message.ErrChecksum) || off != 4*29 || valid != 2*29 {
		t.Fatalf("AppendReplicaPrefix with a bad CRC third: offset %d, valid %d, %v; want 116, 58, a checksum error", off, valid, err)
	}
	mustFlush(t, l)
	checkMessages(t, readAll(t, l, 0, 1<<20), 0, 0, 6, size)
}

// WriteOutTo puts the bytes before end in the segment file (so they survive
// the process dying, docs/PROTOCOL.md §10), and leaves bytes appended after
// an end the file already holds in the write buffer: an acks=-1 answer does
// not cost a write of its own once a follower fetch wrote its set out.
func TestWriteOutToWritesOnlyWhatIsNotInTheFile(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlushInterval, cfg.FlushIntervalMs = 0, 0
	l := openReplicaLog(t, cfg)
	fileSize := func() int64 {
		t.Helper()
		segs := *l.segs.Load()
		fi, err := segs[len(segs)-1].file.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	first := message.AppendV0(nil, []byte("first"))
	if _, err := l.Append(first); err != nil {
		t.Fatal(err)
	}
	end := int64(len(first))
	if got := fileSize(); got != 0 {
		t.Fatalf("file holds %d bytes before any write out", got)
	}
	if err := l.WriteOutTo(end); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(); got != end {
		t.Fatalf("after WriteOutTo(%d) the file holds %d bytes", end, got)
	}
	second := message.AppendV0(nil, []byte("second"))
	if _, err := l.Append(second); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteOutTo(end); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(); got != end {
		t.Fatalf("WriteOutTo(%d) of bytes already in the file wrote the later set: the file holds %d bytes", end, got)
	}
	if err := l.WriteOutTo(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(); got != l.LogEndOffset() {
		t.Fatalf("after WriteOutTo(log end %d) the file holds %d bytes", l.LogEndOffset(), got)
	}
}
