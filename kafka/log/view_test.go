package log

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// numbered is a test view: each message as its logical offset (8 bytes) and
// its payload's last byte (payload's letter), 9 bytes a message, so that view position p holds
// the message of logical offset (p-mark's position)/9 after the mark's.
func numbered(dst []byte, m message.Message, n int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	p := m.Payload()
	return append(dst, p[len(p)-1])
}

// viewOf reads the view ReadView gives for n up to limit: the logical
// offsets it encodes, in order, or nil when there is no view.
func viewOf(t *testing.T, l *Log, n, limit int64) []int64 {
	t.Helper()
	c, first, end, ok := l.ReadView(n, limit)
	if !ok {
		return nil
	}
	defer c.Release()
	b := make([]byte, c.Len)
	if _, err := c.ReadAt(b); err != nil {
		t.Fatalf("ReadView(%d, %d): read %d bytes: %v", n, limit, c.Len, err)
	}
	if len(b)%9 != 0 {
		t.Fatalf("ReadView(%d, %d): %d bytes, not whole 9-byte records", n, limit, len(b))
	}
	var got []int64
	for p := 0; p < len(b); p += 9 {
		got = append(got, int64(binary.BigEndian.Uint64(b[p:])))
	}
	if got[0] != first || first > n {
		t.Fatalf("ReadView(%d, %d) starts at logical %d, says %d", n, limit, got[0], first)
	}
	for i := range got {
		if got[i] != first+int64(i) {
			t.Fatalf("ReadView(%d, %d): record %d is logical %d, want %d", n, limit, i, got[i], first+int64(i))
		}
	}
	if end != got[len(got)-1]+1 {
		t.Fatalf("ReadView(%d, %d) says it ends before logical %d, its last record is %d", n, limit, end, got[len(got)-1])
	}
	return got
}

func appendView(t *testing.T, l *Log, set []byte) int64 {
	t.Helper()
	off, err := l.AppendView(set, numbered)
	if err != nil {
		t.Fatalf("AppendView(%d bytes): %v", len(set), err)
	}
	return off
}

// The view covers what was appended with an encoding and flushed, from the
// mark at or before the message asked to the last flushed set; nothing past
// the limit given.
func TestViewFollowsTheLog(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(), false)
	// 1,000 messages of 200 bytes (209 in the log), in sets of 10, 9 view
	// bytes each: a mark at the first message at least 4,096 view bytes
	// after the last (455 messages are 4,095 bytes, 456 are 4,104), so at 0,
	// 456 and 912, inside sets.
	for i := 0; i < 1000; i += 10 {
		appendView(t, l, makeSet(i, 10, 200))
	}
	if got := viewOf(t, l, 0, l.FlushedEnd()); got != nil {
		t.Fatalf("view before a flush: %d messages, want none (not flushed, not readable)", len(got))
	}
	mustFlush(t, l)
	got := viewOf(t, l, 500, l.FlushedEnd())
	if len(got) != 1000-456 || got[0] != 456 {
		t.Fatalf("view for 500: logical %d.. (%d), want 456..999", got[0], len(got))
	}
	// A limit in the middle: the view stops at the last mark at or below it.
	if got := viewOf(t, l, 500, 209*950); got[len(got)-1] != 911 {
		t.Errorf("view for 500 below byte %d ends at logical %d, want 911 (the mark at 912)", 209*950, got[len(got)-1])
	}
	if got := viewOf(t, l, 930, 209*950); got != nil {
		t.Errorf("view for 930 below byte %d: %d messages, want none (its mark is past the limit)", 209*950, len(got))
	}
	if got := viewOf(t, l, 1000, l.FlushedEnd()); got != nil {
		t.Errorf("view at the logical end: %d messages, want none", len(got))
	}
}

// An Append without an encoding ends the view: what came before stays
// readable, what follows is read from the log. A compressed wrapper has no
// view either.
func TestViewEndsAtAnAppendWithoutEncoding(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(), false)
	appendView(t, l, makeSet(0, 10, 200))
	mustAppend(t, l, makeSet(10, 1, 200))
	appendView(t, l, makeSet(11, 10, 200))
	mustFlush(t, l)
	if got := viewOf(t, l, 5, l.FlushedEnd()); len(got) != 10 {
		t.Errorf("view for 5: %d messages, want 10 (0..9, the sets before the plain Append)", len(got))
	}
	if got := viewOf(t, l, 12, l.FlushedEnd()); got != nil {
		t.Errorf("view for 12, after the plain Append: %d messages, want none", len(got))
	}

	l2 := openLog(t, t.TempDir(), testConfig(), false)
	w, err := message.AppendCompressed(nil, message.CodecGzip, makeSet(0, 5, 200))
	if err != nil {
		t.Fatal(err)
	}
	appendView(t, l2, w)
	appendView(t, l2, makeSet(5, 5, 200))
	mustFlush(t, l2)
	if got := viewOf(t, l2, 3, l2.FlushedEnd()); got != nil {
		t.Errorf("view inside a gzip wrapper: %d messages, want none", len(got))
	}
	// A view starts with the first append that has an encoding.
	if got := viewOf(t, l2, 6, l2.FlushedEnd()); len(got) != 5 || got[0] != 5 {
		t.Errorf("view for 6 after the wrapper: %v, want 5..9", got)
	}
}

// A roll ends a segment's view and the next segment starts its own; a
// follower's truncation drops the view it cuts into, and retention deletes
// the view with its segment; on open every view is dropped.
func TestViewRollTruncateRetainReopen(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.FileSize = 10_000 // 48 messages of 209 bytes a segment
	cfg.RetentionSize = 10_000
	l := openLog(t, dir, cfg, false)
	for i := 0; i < 150; i++ {
		appendView(t, l, makeSet(i, 1, 200))
	}
	mustFlush(t, l)
	if got := viewOf(t, l, 60, l.FlushedEnd()); len(got) != 48 || got[0] != 48 {
		t.Errorf("view for 60: logical %v.., %d messages; want the second segment's 48..95", got[:1], len(got))
	}
	views, _ := filepath.Glob(filepath.Join(dir, "*"+viewExt))
	if len(views) != 4 {
		t.Errorf("%d view files, want 4 (one per segment): %v", len(views), views)
	}

	if err := l.TruncateTo(209 * 100); err != nil {
		t.Fatal(err)
	}
	if got := viewOf(t, l, 97, l.FlushedEnd()); got != nil {
		t.Errorf("view for 97 after truncation into its segment: %d messages, want none", len(got))
	}
	if got := viewOf(t, l, 50, l.FlushedEnd()); len(got) != 48 {
		t.Errorf("view for 50, in a segment the truncation left whole: %d messages, want 48", len(got))
	}
	if views, _ := filepath.Glob(filepath.Join(dir, "*"+viewExt)); len(views) != 2 {
		t.Errorf("%d view files after truncation, want 2: %v", len(views), views)
	}

	if n, err := l.DeleteOldSegments(time.Now()); err != nil || n == 0 {
		t.Fatalf("DeleteOldSegments = %d, %v; want some deleted", n, err)
	}
	if _, err := os.Stat(viewPath(filepath.Join(dir, segmentFileName(0)))); !os.IsNotExist(err) {
		t.Errorf("the first segment's view after retention deleted it: %v, want not there", err)
	}

	l.Close()
	l = openLog(t, dir, cfg, false)
	if views, _ := filepath.Glob(filepath.Join(dir, "*"+viewExt)); len(views) != 0 {
		t.Errorf("%d view files after reopening, want 0: %v", len(views), views)
	}
	if got := viewOf(t, l, 60, l.FlushedEnd()); got != nil {
		t.Errorf("view for 60 after reopening: %d messages, want none", len(got))
	}
}

// Appends with a view, flushes, rolls, retention and readers of the view at
// once for a short while (meant for -race): every read of a view holds the
// records of consecutive logical offsets from the one it says, and the
// payload byte each was made from.
func TestViewConcurrent(t *testing.T) {
	cfg := testConfig()
	cfg.FileSize = 8 << 10
	cfg.FlushInterval = 20
	cfg.RetentionSize = 32 << 10
	l := openLog(t, t.TempDir(), cfg, false)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var appended, checked atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i += 5 {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.AppendView(makeSet(i, 5, 100), numbered); err != nil {
				t.Error(err)
				return
			}
			appended.Add(5)
			if i%200 == 0 {
				l.DeleteOldSegments(time.Now())
			}
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := make([]byte, 1<<20)
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := l.LogicalStart() + appended.Load()/3
				c, first, end, ok := l.ReadView(n, l.FlushedEnd())
				if !ok {
					continue
				}
				k, err := c.ReadAt(b[:min(c.Len, int64(len(b)))])
				c.Release()
				if err != nil {
					t.Errorf("ReadView(%d): read: %v", n, err)
					return
				}
				for p := 0; p+9 <= k; p += 9 {
					got, want := int64(binary.BigEndian.Uint64(b[p:])), first+int64(p/9)
					if letter := byte('a' + want%26); got != want || b[p+8] != letter || want >= end {
						t.Errorf("ReadView(%d) from %d: record %d is logical %d, payload %c; want %d, %c, below %d",
							n, first, p/9, got, b[p+8], want, letter, end)
						return
					}
				}
				checked.Add(1)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if checked.Load() == 0 {
		t.Fatalf("no view read in 0.5 s (%d messages appended)", appended.Load())
	}
	t.Logf("%d messages appended, %d view reads checked", appended.Load(), checked.Load())
}
