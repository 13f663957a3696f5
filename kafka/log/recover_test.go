package log

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// writeLog writes a log of `segments` segments of `perSeg` messages of
// `size` bytes each into dir and closes it cleanly.
func writeLog(t *testing.T, dir string, segments, perSeg, size int) Config {
	t.Helper()
	cfg := testConfig()
	cfg.FileSize = int64(perSeg * message.SizeV0(size))
	l, err := Open(dir, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range segments * perSeg {
		mustAppend(t, l, makeSet(i, 1, size))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func lastSegmentPath(t *testing.T, dir string) string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.kafka"))
	if len(names) == 0 {
		t.Fatal("no segment files")
	}
	return names[len(names)-1] // zero-padded names sort by offset
}

// Corruption tests in the style of pebble's record package: damage the tail
// of the last segment in one precise way, recover, and check that exactly
// the good prefix is kept (paper §3.3).
func TestRecoveryTruncatesAtFirstBadMessage(t *testing.T) {
	const segments, perSeg, size = 3, 10, 30
	msgLen := message.SizeV0(size) // 39
	total := segments * perSeg
	segLen := int64(perSeg * msgLen)
	lastStart := int64(segments-1) * segLen

	cases := []struct {
		name   string
		damage func(b []byte) []byte // gets the last segment's bytes
		keep   int                   // whole messages of the last segment that survive
	}{
		{"intact", func(b []byte) []byte { return b }, perSeg},
		{"tail mid-length", func(b []byte) []byte { return b[:9*msgLen+2] }, 9},
		{"tail mid-header", func(b []byte) []byte { return b[:9*msgLen+7] }, 9},
		{"tail mid-payload", func(b []byte) []byte { return b[:9*msgLen+20] }, 9},
		{"flipped payload byte", func(b []byte) []byte { b[4*msgLen+15] ^= 0x01; return b }, 4},
		{"flipped crc byte", func(b []byte) []byte { b[6*msgLen+6] ^= 0x80; return b }, 6},
		{"zero length", func(b []byte) []byte { binary.BigEndian.PutUint32(b[5*msgLen:], 0); return b }, 5},
		{"length 4", func(b []byte) []byte { binary.BigEndian.PutUint32(b[5*msgLen:], 4); return b }, 5},
		{"huge length", func(b []byte) []byte { binary.BigEndian.PutUint32(b[3*msgLen:], 0x7fffffff); return b }, 3},
		{"negative length", func(b []byte) []byte { binary.BigEndian.PutUint32(b[3*msgLen:], 0xffffffff); return b }, 3},
		{"bad magic", func(b []byte) []byte { b[2*msgLen+4] = 9; return b }, 2},
		{"garbage appended", func(b []byte) []byte { return append(b, 0, 0, 0, 50, 0, 1, 2) }, perSeg},
		{"zeroed tail (preallocated)", func(b []byte) []byte { return append(b, make([]byte, 100)...) }, perSeg},
		{"first message bad", func(b []byte) []byte { b[10] ^= 0xff; return b }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeLog(t, dir, segments, perSeg, size)
			path := lastSegmentPath(t, dir)
			b, err := os.ReadFile(path)
			if err != nil || int64(len(b)) != segLen {
				t.Fatalf("last segment %s: %v, %d bytes, want %d", path, err, len(b), segLen)
			}
			if err := os.WriteFile(path, c.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}

			l := openLog(t, dir, cfg, true)
			wantEnd := lastStart + int64(c.keep*msgLen)
			if l.LogEndOffset() != wantEnd || l.FlushedEnd() != wantEnd {
				t.Fatalf("after recovery LEO %d HWM %d, want %d", l.LogEndOffset(), l.FlushedEnd(), wantEnd)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != int64(c.keep*msgLen) {
				t.Fatalf("last segment holds %d bytes on disk (%v), want %d", fi.Size(), err, c.keep*msgLen)
			}
			kept := (segments-1)*perSeg + c.keep
			checkMessages(t, readAll(t, l, 0, 1000), 0, 0, kept, size)
			// The log goes on from the truncation point.
			if off := mustAppend(t, l, makeSet(total, 1, size)); off != wantEnd {
				t.Fatalf("append after recovery at %d, want %d", off, wantEnd)
			}
			mustFlush(t, l)
			msgs := readAll(t, l, 0, 1000)
			if len(msgs) != kept+1 || msgs[kept].payload != string(payload(total, size)) {
				t.Fatalf("after appending: %d messages, want %d ending with message %d", len(msgs), kept+1, total)
			}
		})
	}
}

func TestOpenWithoutRecoveryKeepsBytes(t *testing.T) {
	dir := t.TempDir()
	cfg := writeLog(t, dir, 1, 5, 30)
	path := lastSegmentPath(t, dir)
	b, _ := os.ReadFile(path)
	b[20] ^= 0xff
	os.WriteFile(path, b, 0o644)
	l := openLog(t, dir, cfg, false)
	if l.LogEndOffset() != int64(len(b)) {
		t.Fatalf("LEO %d, want %d: without recovery nothing is truncated", l.LogEndOffset(), len(b))
	}
}

func TestOnlyLastSegmentIsRecovered(t *testing.T) {
	dir := t.TempDir()
	cfg := writeLog(t, dir, 2, 5, 30)
	first := filepath.Join(dir, segmentFileName(0))
	b, _ := os.ReadFile(first)
	b[20] ^= 0xff // damage in a closed segment: left for consumers' CRC checks
	os.WriteFile(first, b, 0o644)
	l := openLog(t, dir, cfg, true)
	if l.LogEndOffset() != 2*int64(len(b)) {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), 2*len(b))
	}
}

func TestSegmentGapIsAnError(t *testing.T) {
	for _, recover := range []bool{false, true} {
		dir := t.TempDir()
		cfg := writeLog(t, dir, 3, 5, 30)
		middle := filepath.Join(dir, segmentFileName(5*39))
		b, _ := os.ReadFile(middle)
		os.WriteFile(middle, b[:len(b)-39], 0o644) // one message short
		_, err := Open(dir, cfg, recover)
		if !errors.Is(err, ErrSegmentGap) {
			t.Fatalf("recover=%v: Open err %v, want ErrSegmentGap", recover, err)
		}
		if !strings.Contains(err.Error(), filepath.Base(middle)) || !strings.Contains(err.Error(), segmentFileName(10*39)) {
			t.Errorf("error %q does not name both files", err)
		}
	}
}

func TestOpenIgnoresStrayFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := writeLog(t, dir, 2, 3, 10)
	for _, name := range []string{"notes.txt", "123.kafka", "0000000000000000000x.kafka"} {
		os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644)
	}
	os.Mkdir(filepath.Join(dir, "00000000000000099999.kafka"), 0o755)
	l := openLog(t, dir, cfg, true)
	if n := len(l.Segments()); n != 2 {
		t.Fatalf("%d segments, want 2", n)
	}
	checkMessages(t, readAll(t, l, 0, 100), 0, 0, 6, 10)
}

func TestSegmentFileNames(t *testing.T) {
	if got := segmentFileName(536870912); got != "00000000000536870912.kafka" {
		t.Fatalf("segmentFileName = %s", got)
	}
	for name, want := range map[string]int64{"00000000000000000000.kafka": 0, "00000000000536870912.kafka": 536870912} {
		if got, ok := parseSegmentFileName(name); !ok || got != want {
			t.Errorf("parse %s = %d, %v", name, got, ok)
		}
	}
	for _, bad := range []string{"0.kafka", "00000000000000000000.log", "-0000000000000000001.kafka", "99999999999999999999.kafka"} {
		if _, ok := parseSegmentFileName(bad); ok {
			t.Errorf("parse %s accepted", bad)
		}
	}
}

// A magic-1 message's CRC covers its payload only, not its attributes byte
// (Kafka 0.7's format), so recovery checks that byte too: a flipped bit
// above the two codec bits, or a codec bit that turns a plain message into
// a "wrapper" that does not decompress, ends the good prefix there, as a
// CRC mismatch would (paper §3.3).
func TestRecoveryChecksMagic1Attributes(t *testing.T) {
	const n, size = 8, 30
	msgLen := message.Size(message.MagicV1, size) // 4 + 1 + 1 + 4 + 30 = 40
	wrapped, err := message.Compress(message.CodecGzip, makeSet(100, 3, size))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		damage func(b []byte)
		keep   int // bytes kept
	}{
		{"intact, a gzip wrapper last", func(b []byte) {}, n*msgLen + len(wrapped)},
		{"attributes bit above the codec", func(b []byte) { b[3*msgLen+5] ^= 0x5a }, 3 * msgLen},
		{"codec none flipped to gzip", func(b []byte) { b[5*msgLen+5] ^= 0x01 }, 5 * msgLen},
		{"codec none flipped to codec 3", func(b []byte) { b[2*msgLen+5] ^= 0x03 }, 2 * msgLen},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig()
			l := openLog(t, dir, cfg, false)
			var set []byte
			for i := range n {
				set = message.AppendV1(set, message.CodecNone, payload(i, size))
			}
			mustAppend(t, l, append(set, wrapped...))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			path := lastSegmentPath(t, dir)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c.damage(b)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			l2 := openLog(t, dir, cfg, true)
			if got := l2.LogEndOffset(); got != int64(c.keep) {
				t.Fatalf("after recovery LEO %d, want %d", got, c.keep)
			}
		})
	}
}
