package log

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// disk is a storage with a fixed amount of free space, shared by every file
// written through it, that can also be told to fail fsyncs or truncations.
// A write that needs more room than is left writes what fits and fails with
// ENOSPC, as write(2) does on a full filesystem.
type disk struct {
	mu        sync.Mutex
	free      int64
	syncErr   error
	truncErr  error
	writes    int // WriteAt calls that failed
	allocated int // Allocate calls that succeeded
}

func (d *disk) size(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil {
		panic(err)
	}
	return fi.Size()
}

func (d *disk) WriteAt(f *os.File, p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	grow := max(0, off+int64(len(p))-d.size(f))
	if grow <= d.free {
		n, err := f.WriteAt(p, off)
		d.free -= grow
		return n, err
	}
	fit := int64(len(p)) - (grow - d.free)
	n, err := f.WriteAt(p[:max(fit, 0)], off)
	d.free = 0
	d.writes++
	if err == nil {
		err = &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return n, err
}

func (d *disk) Truncate(f *os.File, size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.truncErr != nil {
		return d.truncErr
	}
	d.free += max(0, d.size(f)-size)
	return f.Truncate(size)
}

func (d *disk) Sync(f *os.File) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.syncErr != nil {
		return d.syncErr
	}
	return f.Sync()
}

func (d *disk) Allocate(f *os.File, off, n int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	grow := max(0, off+n-d.size(f))
	if grow > d.free {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: syscall.ENOSPC}
	}
	d.free -= grow
	d.allocated++
	return f.Truncate(off + n)
}

func (d *disk) set(f func(d *disk)) {
	d.mu.Lock()
	f(d)
	d.mu.Unlock()
}

// openOnDisk opens a log in dir writing through d, probing without delay.
func openOnDisk(t *testing.T, dir string, cfg Config, d *disk) *Log {
	t.Helper()
	l, err := open(dir, cfg, false, nil, d)
	if err != nil {
		t.Fatal(err)
	}
	l.retryEvery = 0
	t.Cleanup(func() { l.Close() })
	return l
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestFullDiskLeavesLogAsBefore fills the disk under each of the two write
// paths (a set of at least writeBufferSize goes straight to the file; a
// smaller one is buffered and fails when the buffer is written out) and
// checks that the refused append left the file, the end offset and the
// readable messages exactly as before; that every later append is refused,
// even one that would fit in the buffer, until space returns; and that the
// partition then holds no hole: the messages read back are those accepted
// before the failure followed by those appended after healing.
func TestFullDiskLeavesLogAsBefore(t *testing.T) {
	const size = 1000
	msgLen := int64(message.SizeV0(size))
	for _, c := range []struct {
		name   string
		perSet int // messages per set
	}{
		{"direct write", 100},  // 100 KiB sets, written straight to the file
		{"buffered write", 10}, // 10 KiB sets; writing out the buffer of six fails
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d := &disk{free: 1 << 30}
			l := openOnDisk(t, dir, testConfig(), d)
			next := 0 // the next message number to produce
			var accepted []int
			appendSet := func() error {
				_, err := l.Append(makeSet(next, c.perSet, size))
				if err == nil {
					for i := range c.perSet {
						accepted = append(accepted, next+i)
					}
				}
				next += c.perSet
				return err
			}
			for range 20 {
				if err := appendSet(); err != nil {
					t.Fatal(err)
				}
			}
			mustFlush(t, l)
			seg := lastSegmentPath(t, dir)
			before := fileSize(t, seg)
			leo, hwm := l.LogEndOffset(), l.FlushedEnd()

			// Room for a bit more than half a set: the next write stops short.
			d.set(func(d *disk) { d.free = int64(c.perSet) * msgLen / 2 })
			var err error
			for err == nil {
				err = appendSet()
			}
			if !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append on a full disk: err %v, want ErrStorage wrapping ENOSPC", err)
			}
			t.Logf("refused: %v", err)
			failedAt := next - c.perSet
			onDisk := fileSize(t, seg)
			if c.perSet == 100 { // nothing was buffered: the file is as before
				if onDisk != before || l.LogEndOffset() != leo {
					t.Fatalf("after the failed write: file %d bytes, LEO %d; want %d and %d as before", onDisk, l.LogEndOffset(), before, leo)
				}
			}
			if onDisk != l.written || onDisk%msgLen != 0 {
				t.Fatalf("after the failed write the file holds %d bytes, the log has written %d (want equal, a whole number of %d-byte messages)", onDisk, l.written, msgLen)
			}

			// A small set that would fit in the buffer is refused too: a
			// stored set after a refused one would be a hole.
			if _, err := l.Append(makeSet(next, 1, 10)); !errors.Is(err, ErrStorage) {
				t.Fatalf("small append while failed: err %v, want ErrStorage", err)
			}
			next++
			if err := l.Flush(); !errors.Is(err, ErrStorage) {
				t.Fatalf("flush while failed: %v, want ErrStorage", err)
			}
			if l.FlushedEnd() != hwm {
				t.Fatalf("HWM moved from %d to %d while failed", hwm, l.FlushedEnd())
			}
			// Reads go on.
			checkMessages(t, readAll(t, l, 0, 64<<10), 0, 0, int(l.FlushedEnd()/msgLen), size)

			// Space comes back: the next append's probe heals the partition.
			d.set(func(d *disk) { d.free = 1 << 30 })
			resumed := next
			for range 5 {
				if err := appendSet(); err != nil {
					t.Fatalf("append after space returned: %v", err)
				}
			}
			mustFlush(t, l)
			if fileSize(t, seg) != l.LogEndOffset() {
				t.Fatalf("file %d bytes, LEO %d", fileSize(t, seg), l.LogEndOffset())
			}
			// No hole: a prefix of what was produced before the failure,
			// then everything produced since space returned.
			var got []int
			for _, m := range readAll(t, l, 0, 64<<10) {
				got = append(got, messageNumber(t, m.payload))
			}
			if !slices.Equal(got, accepted) {
				t.Fatalf("read %d messages, accepted %d", len(got), len(accepted))
			}
			for i, n := range got {
				if n >= failedAt && n < resumed {
					t.Fatalf("message %d (at index %d) was produced while the disk was full but is stored", n, i)
				}
				if i > 0 && n < resumed && n != got[i-1]+1 {
					t.Fatalf("hole before message %d: previous is %d", n, got[i-1])
				}
			}
			t.Logf("%d messages stored, %d..%d refused, %d probes", len(got), failedAt, resumed-1, d.allocated)
		})
	}
}

func messageNumber(t *testing.T, p string) int {
	t.Helper()
	var n int
	for i := 1; i < len(p) && p[i] != ':'; i++ {
		n = n*10 + int(p[i]-'0')
	}
	return n
}

// TestProbeNeedsRoomForTheFailedWrite: the few bytes a failed write gives
// back by being undone do not heal the partition; the probe wants room for
// the whole write that failed (at least minProbeBytes), and runs at most
// once per retry interval.
func TestProbeNeedsRoomForTheFailedWrite(t *testing.T) {
	d := &disk{free: 100 << 10}
	l := openOnDisk(t, t.TempDir(), testConfig(), d)
	big := makeSet(0, 300, 1000) // ~300 KiB
	if _, err := l.Append(big); !errors.Is(err, ErrStorage) {
		t.Fatalf("first append: %v, want ErrStorage", err)
	}
	// The undo gave the 100 KiB back; a 1 KiB set would fit, but is refused.
	if _, err := l.Append(makeSet(300, 1, 1000)); !errors.Is(err, ErrStorage) {
		t.Fatalf("small append with 100 KiB free: %v, want ErrStorage", err)
	}
	d.set(func(d *disk) { d.free = minProbeBytes - 1 })
	if _, err := l.Append(makeSet(301, 1, 1000)); !errors.Is(err, ErrStorage) {
		t.Fatalf("append with 1 MiB - 1 free: %v, want ErrStorage", err)
	}
	d.set(func(d *disk) { d.free = minProbeBytes + probeBlock })
	l.mu.Lock()
	l.retryEvery = time.Hour
	l.failed.nextProbe = time.Now().Add(time.Hour)
	l.mu.Unlock()
	if _, err := l.Append(makeSet(302, 1, 1000)); !errors.Is(err, ErrStorage) {
		t.Fatalf("append before the next probe is due: %v, want ErrStorage", err)
	}
	l.mu.Lock()
	l.failed.nextProbe = time.Time{}
	refused := l.failed.refused
	l.mu.Unlock()
	if refused != 4 {
		t.Fatalf("refused count %d, want 4", refused)
	}
	if _, err := l.Append(makeSet(303, 1, 1000)); err != nil {
		t.Fatalf("append once the probe finds 1 MiB: %v", err)
	}
	if l.LogEndOffset() != int64(message.SizeV0(1000)) {
		t.Fatalf("LEO %d, want one message", l.LogEndOffset())
	}
}

// TestFailedFsyncNeedsRestart: after an fsync error the unflushed bytes'
// fate is unknown, so the partition refuses appends even once fsync works
// again, its Close fails, the clean-shutdown record leaves it out, and the
// next start scans it, while the healthy partition is trusted.
func TestFailedFsyncNeedsRestart(t *testing.T) {
	dir := t.TempDir()
	d := &disk{free: 1 << 30}
	m, err := openManager(dir, testConfig(), d)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := m.GetOrCreate("good", 0)
	bad, _ := m.GetOrCreate("bad", 0)
	mustAppend(t, good, makeSet(0, 3, 10))
	mustAppend(t, bad, makeSet(0, 3, 10))
	mustFlush(t, good)
	d.set(func(d *disk) { d.syncErr = &os.PathError{Op: "fsync", Path: "bad", Err: syscall.EIO} })
	if err := bad.Flush(); !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("flush with a failing fsync: %v, want ErrStorage wrapping EIO", err)
	}
	if bad.FlushedEnd() != 0 {
		t.Fatalf("HWM %d after a failed fsync, want 0", bad.FlushedEnd())
	}
	d.set(func(d *disk) { d.syncErr = nil })
	if _, err := bad.Append(makeSet(3, 1, 10)); !errors.Is(err, ErrStorage) {
		t.Fatalf("append after fsync works again: %v, want ErrStorage (until restart)", err)
	}
	if err := m.Close(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Close: %v, want ErrStorage", err)
	}
	records, present, err := readMarker(filepath.Join(dir, CleanShutdownFile))
	if err != nil || !present {
		t.Fatalf("marker: present %v, %v", present, err)
	}
	if _, ok := records["bad-0"]; ok || len(records) != 1 || records["good-0"] != (segmentRecord{0, 3 * 19}) {
		t.Fatalf("marker records %v, want only good-0 {0 57}", records)
	}
	m2 := newManager(t, dir, testConfig())
	l, _ := m2.Get("bad", 0)
	checkMessages(t, readAll(t, l, 0, 1000), 0, 0, 3, 10)
}

// TestCleanRestartDropsBytesPastTheRecordedEnd is the first failure of a full disk:
// a failed write whose undo also failed left part of a set (whole, valid
// messages among it) past the log's end. The marker records the real end,
// so the clean restart scans the segment and cuts it there, instead of
// taking the file's size as the log's.
func TestCleanRestartDropsBytesPastTheRecordedEnd(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	d := &disk{free: 1 << 30}
	m, err := openManager(dir, cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := m.GetOrCreate("t", 0)
	first := makeSet(0, 10, 100)
	mustAppend(t, l, first)
	mustFlush(t, l)
	big := makeSet(10, 1000, 100) // 109 KiB: the direct path
	d.set(func(d *disk) {
		d.free = int64(len(big)) / 2
		d.truncErr = errors.New("truncate refused")
	})
	if _, err := l.Append(big); !errors.Is(err, ErrStorage) {
		t.Fatalf("append: %v", err)
	}
	seg := filepath.Join(dir, "t-0", segmentFileName(0))
	if fileSize(t, seg) != int64(len(first)+len(big)/2) {
		t.Fatalf("file %d bytes, want the partial write left behind (%d)", fileSize(t, seg), len(first)+len(big)/2)
	}
	// The disk comes back; the heal probe's truncation puts the file right,
	// which is the common case. Make it stay wrong to test the restart.
	d.set(func(d *disk) { d.free = 1 << 30 })
	if err := m.Close(); err == nil {
		t.Fatal("Close succeeded although truncation fails")
	}
	// Pretend the close had succeeded, as it would have had the undo
	// failed without leaving the partition failed: the record says 10
	// messages, the file holds more, among them whole valid ones.
	if err := writeMarker(filepath.Join(dir, CleanShutdownFile), map[string]segmentRecord{"t-0": {0, int64(len(first))}}); err != nil {
		t.Fatal(err)
	}
	m2 := newManager(t, dir, cfg)
	l2, _ := m2.Get("t", 0)
	if l2.LogEndOffset() != int64(len(first)) || fileSize(t, seg) != int64(len(first)) {
		t.Fatalf("after the clean restart: LEO %d, file %d bytes; want both %d", l2.LogEndOffset(), fileSize(t, seg), len(first))
	}
	checkMessages(t, readAll(t, l2, 0, 1000), 0, 0, 10, 100)
	off := mustAppend(t, l2, makeSet(2000, 1, 100))
	mustFlush(t, l2)
	if off != int64(len(first)) {
		t.Fatalf("new message at %d, want %d", off, len(first))
	}
}

// TestRetentionRunsWhileFailed: deleting old segments is how a full disk
// gets space back, so a failed partition still applies retention.
func TestRetentionRunsWhileFailed(t *testing.T) {
	cfg := testConfig()
	cfg.FileSize = 1000
	cfg.RetentionSize = 1500
	d := &disk{free: 1 << 30}
	l := openOnDisk(t, t.TempDir(), cfg, d)
	for i := range 40 {
		mustAppend(t, l, makeSet(i, 1, 90))
	}
	mustFlush(t, l)
	d.set(func(d *disk) { d.free = 0 })
	if _, err := l.Append(makeSet(40, 1000, 90)); !errors.Is(err, ErrStorage) {
		t.Fatalf("append: %v", err)
	}
	n, err := l.DeleteOldSegments(time.Now())
	if err != nil || n == 0 {
		t.Fatalf("DeleteOldSegments while failed: %d deleted, %v", n, err)
	}
}

// TestFailedPartitionExposesWhatItsFilesHold: sets written to the file
// before the failure are still fsynced and made readable while the
// partition is failed; only the buffer waits for the partition to heal.
func TestFailedPartitionExposesWhatItsFilesHold(t *testing.T) {
	d := &disk{free: 1 << 30}
	l := openOnDisk(t, t.TempDir(), testConfig(), d)
	direct := makeSet(0, 100, 1000) // written straight to the file
	mustAppend(t, l, direct)
	small := makeSet(100, 1, 1000) // buffered
	mustAppend(t, l, small)
	d.set(func(d *disk) { d.free = 0 })
	if _, err := l.Append(makeSet(101, 100, 1000)); !errors.Is(err, ErrStorage) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrStorage) {
		t.Fatalf("flush while failed: %v, want ErrStorage", err)
	}
	if l.FlushedEnd() != int64(len(direct)) {
		t.Fatalf("HWM %d while failed, want %d: the set in the file", l.FlushedEnd(), len(direct))
	}
	checkMessages(t, readAll(t, l, 0, 1<<20), 0, 0, 100, 1000)
	d.set(func(d *disk) { d.free = 1 << 30 })
	mustFlush(t, l)
	checkMessages(t, readAll(t, l, 0, 1<<20), 0, 0, 101, 1000)
}
