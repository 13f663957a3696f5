package log

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// writeBufferSize is the user-space buffer in front of the active segment,
// as a log starts (a busy log's grows, writebuffer.go). Small appends (one
// 200-byte message) are copied here and reach the file in one write per
// buffer-full, not one system call per message; a set at least this large
// is written straight to the file.
const writeBufferSize = 64 << 10

// Log is one partition: a sorted list of segments, of which only the last
// one is appended to. Append, Flush and DeleteOldSegments may be called
// from any goroutine; Read and the offset getters never take the append
// lock, so consumers are not slowed down by producers.
type Log struct {
	dir string
	cfg Config
	log *slog.Logger // cfg.logger()
	st  storage      // how the append path writes, truncates and syncs files

	retryEvery time.Duration // storageRetryInterval, shorter in tests

	// mu serializes appends, rolls and deletions, and guards the fields
	// below it. Readers do not take it.
	mu       sync.Mutex
	buf      []byte        // bytes of the active segment not yet written to its file
	bufGrown bool          // buf is grownWriteBufferSize, counted in bufs (writebuffer.go)
	bufs     *writeBuffers // the Manager's grown buffers; nil for a log opened on its own
	written  int64         // bytes of the active segment already in its file
	appended int64         // messages appended since the log was opened
	lend     int64         // logical end: the 0.8 offset the next message gets (index.go)
	nextIdx  int64         // the log offset from which an append adds an index entry (index.go)
	inner    []int         // appendChecked's inner and counted for indexLocked, when nextIdx is -1
	counted  bool
	viewing  bool     // the active segment has a view that appends extend or end (view.go)
	failed   *failure // non-nil while a storage error keeps appends out (failure.go)

	segs    atomic.Pointer[[]*segment] // sorted by start; replaced, never modified
	leo     atomic.Int64               // log end offset: everything appended
	flushed atomic.Int64               // the flushed end (FlushedEnd): everything fsynced
	closed  atomic.Bool

	flushMu sync.Mutex    // one flush at a time
	toSync  []*segment    // scratch for flush, guarded by flushMu
	syncs   FsyncStats    // guarded by flushMu
	flushCh chan struct{} // wakes the flusher goroutine; capacity 1
	done    chan struct{}
	wg      sync.WaitGroup
}

// Open loads (or creates) the partition log in dir. With recover set, the
// last segment is first scanned and truncated after its last whole message
// with a matching CRC (paper §3.3); use it after an unclean shutdown. Every
// byte found on disk counts as flushed. Open starts a flusher goroutine;
// Close stops it.
func Open(dir string, cfg Config, recover bool) (*Log, error) {
	return open(dir, cfg, recover, nil, osStorage{})
}

// open is Open with the Manager's clean-shutdown check: with expect set
// (and recover not), the last segment is scanned only if its start or size
// differ from what the clean shutdown recorded (see loadSegments). st is
// osStorage{} except in tests.
func open(dir string, cfg Config, recover bool, expect *segmentRecord, st storage) (*Log, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	lg := cfg.logger()
	segs, err := loadSegments(dir, recover, expect, lg)
	if err != nil {
		return nil, err
	}
	lend, err := indexSegments(segs)
	if err != nil {
		for _, s := range segs {
			s.file.Close()
		}
		return nil, err
	}
	l := &Log{
		dir:        dir,
		cfg:        cfg,
		log:        lg,
		st:         st,
		retryEvery: storageRetryInterval,
		buf:        make([]byte, 0, writeBufferSize),
		flushCh:    make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	last := segs[len(segs)-1]
	l.written = last.size.Load()
	l.segs.Store(&segs)
	l.leo.Store(last.end())
	l.lend = lend
	l.nextIdx = last.start + last.idx.lastPos + indexInterval
	l.flushed.Store(last.end())
	l.wg.Add(1)
	go l.flushLoop()
	return l, nil
}

// Dir is the partition's directory.
func (l *Log) Dir() string { return l.dir }

// Append validates every message of set and appends the whole set to the
// active segment, returning the offset of its first message. A set with a
// bad CRC, a bad magic or a partial tail, or with a compressed wrapper that
// does not unpack (message.Unpack: a payload that does not decode or inflates
// past the limit, an inner set that is not whole, valid messages), is
// refused whole (ErrInvalidMessage wrapping the cause), so the log never
// holds a message a consumer would reject, nor one at which recovery would
// cut the log short (recover.go). An empty set appends nothing. The bytes
// become readable only once flushed (see FlushedEnd). A storage error leaves the log as it was and
// is ErrStorage wrapping the cause; so is every append while the partition
// stays failed (failure.go).
// An Append to a segment with a view (view.go) ends the view.
func (l *Log) Append(set []byte) (offset int64, err error) {
	return l.appendSet(set, nil)
}

// appendSet is Append, and AppendView with enc.
func (l *Log) appendSet(set []byte, enc ViewEncoder) (offset int64, err error) {
	// §3.3: every message carries a CRC; check them all before writing any.
	var inner []int
	count, err := message.ValidateWholeDeepInto(set, &inner)
	if err != nil {
		return 0, fmt.Errorf("%w: %d-byte set refused whole: %w", ErrInvalidMessage, len(set), err)
	}
	return l.appendChecked(set, count, inner, true, false, enc)
}

// appendValidated is Append after validation: count is the number of
// messages of set.
func (l *Log) appendValidated(set []byte, count int) (offset int64, err error) {
	return l.appendChecked(set, count, nil, false, false, nil)
}

// appendChecked is appendValidated; with counted, inner is the number of
// messages in each wrapper of set, in order, as the validation counted them
// (without, the index counts them, index.go); through writes set to the file at
// once, straight from the caller's slice, instead of copying it into the
// write buffer (AppendReplicaPrefix); enc, if not nil, adds the set to the
// segment's view (view.go).
func (l *Log) appendChecked(set []byte, count int, inner []int, counted, through bool, enc ViewEncoder) (offset int64, err error) {
	if len(set) == 0 {
		return l.leo.Load(), nil
	}

	l.mu.Lock()
	if !counted || len(inner) > 0 {
		// Not a set of plain messages counted by its validation: the
		// index walks it (indexLocked).
		l.inner, l.counted, l.nextIdx = inner, counted, -1
	}
	offset, due, err := l.appendLocked(set, count, through)
	if err == nil && (enc != nil || l.viewing) {
		l.viewAppendLocked(set, offset, count, len(inner) > 0, enc)
	}
	if err != nil && l.nextIdx < 0 { // not appended: the next set must not take its counts
		l.inner, l.counted, l.nextIdx = nil, true, 0
	}
	if err != nil && l.failed != nil {
		l.failed.refused++
	}
	l.mu.Unlock()

	if due {
		// §3.1: flush after a number of messages. The fsync runs on the
		// flusher goroutine, so this producer does not wait for the disk.
		l.signalFlush()
	}
	return offset, err
}

// appendLocked is Append after validation, under l.mu. due reports that a
// flush should be signalled. through writes set to the file now, after
// whatever the buffer holds, without copying it into the buffer. A storage error leaves the log as it was
// before the call (writeAt undoes a partial write) and fails the partition:
// until a probe write succeeds, appends get ErrStorage (failure.go).
func (l *Log) appendLocked(set []byte, count int, through bool) (offset int64, due bool, err error) {
	if l.closed.Load() {
		return 0, false, fmt.Errorf("%w: append to %s", ErrClosed, l.dir)
	}
	if l.failed != nil { // a healthy partition does not call healLocked
		if err := l.healLocked(false); err != nil {
			return 0, false, err
		}
	}
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	// §3.1: segment files of roughly the same size. A set never spans two
	// segments: the roll happens before an append that would start at or
	// past log.file.size.
	if active.size.Load() >= l.cfg.FileSize {
		if active, err = l.rollLocked(); err != nil {
			return 0, false, err
		}
	}
	offset = l.leo.Load()
	direct := through || len(set) >= writeBufferSize
	if direct || len(l.buf)+len(set) > cap(l.buf) {
		if err := l.drainLocked(active, int64(len(set))); err != nil {
			return 0, false, err
		}
		if !direct {
			l.growBufferLocked() // the buffer was full (writebuffer.go)
		}
	}
	if direct {
		if err := writeAt(l.st, active, set, l.written); err != nil {
			return 0, false, l.failLocked(err, int64(len(set)), false)
		}
		l.written += int64(len(set))
	} else {
		l.buf = append(l.buf, set...)
	}
	active.size.Add(int64(len(set)))
	l.leo.Store(offset + int64(len(set)))
	// The logical offsets (index.go): a set of plain messages, counted by
	// its validation, that adds no index entry costs an addition (any
	// other set has set nextIdx to -1).
	if offset < l.nextIdx {
		l.lend += int64(count)
	} else {
		l.indexLocked(active, set, offset, count)
	}
	// §3.1: flush after every log.flush.interval messages. A flush is due
	// when this append crosses a multiple of the interval, which keeps the
	// flush points of 0.7 (whose append flushed synchronously at the count)
	// even though our fsync runs later, on the flusher goroutine, and covers
	// whatever was appended by then.
	before := l.appended
	l.appended += int64(count)
	n := int64(l.cfg.FlushInterval)
	return offset, n > 0 && before/n != l.appended/n, nil
}

// drainLocked writes the buffer to the active segment's file. l.mu is held.
// On error the file is cut back to what it held before, the buffer (bytes
// of appends already accepted) is kept for the drain after the partition
// heals, and the partition fails; the probe must then find room for the
// buffer plus the extra bytes the caller is about to write.
func (l *Log) drainLocked(active *segment, extra int64) error {
	l.drainViewLocked(active)
	if len(l.buf) == 0 {
		return nil
	}
	if err := writeAt(l.st, active, l.buf, l.written); err != nil {
		return l.failLocked(err, int64(len(l.buf))+extra, false)
	}
	l.written += int64(len(l.buf))
	l.buf = l.buf[:0]
	return nil
}

// rollLocked starts a new empty segment at the log end offset and returns
// it. l.mu is held. The old segment is written out and fsynced first, so it
// is fully flushed as it becomes read-only, and only the last segment of a
// log can ever hold unsynced bytes: that is why recovery after a crash needs
// to scan the last segment only. This fsync under the append lock covers at
// most the bytes since the last flush and happens once per log.file.size.
func (l *Log) rollLocked() (*segment, error) {
	segs := *l.segs.Load()
	old := segs[len(segs)-1]
	if err := l.drainLocked(old, 0); err != nil {
		return nil, err
	}
	l.endViewLocked(old)
	if err := l.st.Sync(old.file); err != nil {
		return nil, l.failLocked(fmt.Errorf("fsync %s before rolling: %w", old.path, err), 0, true)
	}
	l.raiseFlushedEnd(old.end())
	if err := old.idx.save(); err != nil {
		l.log.Warn("could not save offset index; it is rebuilt on the next open", "err", err)
	}
	s, err := createSegment(l.dir, l.leo.Load())
	if err != nil {
		return nil, l.failLocked(err, 0, false)
	}
	s.idx = newIndex(s.path, l.lend)
	if l.nextIdx >= 0 { // -1 marks the set being appended for the index to walk (appendChecked): keep it
		l.nextIdx = s.start + indexInterval
	}
	if err := s.idx.save(); err != nil {
		l.log.Warn("could not save offset index; it is rebuilt on the next open", "err", err)
	}
	next := make([]*segment, len(segs)+1)
	copy(next, segs)
	next[len(segs)] = s
	l.segs.Store(&next)
	l.written = 0
	l.log.Debug("rolled segment", "dir", l.dir, "start", s.start, "previous", old.path, "previousSize", old.size.Load())
	return s, nil
}

// signalFlush wakes the flusher without blocking; a wake-up already pending
// covers this one too.
func (l *Log) signalFlush() {
	select {
	case l.flushCh <- struct{}{}:
	default:
	}
}

func (l *Log) flushLoop() {
	defer l.wg.Done()
	for {
		select {
		case <-l.flushCh:
			// A storage error was logged once, as the partition failed
			// (failLocked); the timer keeps waking this loop while it
			// stays failed, so it is not logged again here.
			if err := l.flush(false); err != nil && !errors.Is(err, ErrStorage) {
				l.log.Error("background flush failed", "dir", l.dir, "err", err)
			}
		case <-l.done:
			return
		}
	}
}

// Flush writes out the buffer, fsyncs every segment holding unflushed bytes,
// and then moves the high-water mark to what was written.
func (l *Log) Flush() error {
	if l.closed.Load() {
		return fmt.Errorf("%w: flush %s", ErrClosed, l.dir)
	}
	return l.flush(false)
}

// flush is Flush. A failed partition first probes (at most once per
// storageRetryInterval, or now with force); until it heals, the buffer
// stays unwritten, but what the files already hold (whole sets written
// before the failure) is still fsynced and exposed, and the refusal is
// returned. After a failed fsync nothing more is done.
func (l *Log) flush(force bool) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()

	// Under the append lock only long enough to write out the buffer (one
	// write) and note the size S to publish.
	l.mu.Lock()
	refusal := l.healLocked(force)
	if refusal != nil && l.failed.fatal {
		l.mu.Unlock()
		return refusal
	}
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	if refusal == nil {
		refusal = l.drainLocked(active, 0) // on error the partition fails, the buffer stays
	}
	target := l.leo.Load()
	if refusal != nil {
		target = active.start + l.written // what the files hold
	}
	hwm := l.flushed.Load()
	if target <= hwm {
		l.mu.Unlock()
		return refusal
	}
	toSync := l.toSync[:0]
	for i := len(segs) - 1; i >= 0 && segs[i].end() > hwm; i-- {
		segs[i].acquire() // always succeeds: the list still holds it
		toSync = append(toSync, segs[i])
	}
	l.mu.Unlock()

	var err error
	for i, s := range toSync {
		t0 := time.Now()
		if e := l.st.Sync(s.file); e != nil && err == nil {
			err = fmt.Errorf("fsync %s: %w", s.path, e)
		}
		if e := s.idx.saveIfDue(); e != nil {
			l.log.Warn("could not save offset index; it is rebuilt on the next open", "err", e)
		}
		l.syncs.add(time.Since(t0))
		s.release()
		toSync[i] = nil
	}
	l.toSync = toSync[:0]
	if err != nil {
		l.mu.Lock()
		err = l.failLocked(err, 0, true)
		l.mu.Unlock()
		return err
	}
	// §3.1: messages are only exposed to consumers after they are flushed.
	l.raiseFlushedEnd(target)
	return refusal
}

// raiseFlushedEnd moves the high-water mark forward to hw, never back.
func (l *Log) raiseFlushedEnd(hw int64) {
	for {
		cur := l.flushed.Load()
		if hw <= cur || l.flushed.CompareAndSwap(cur, hw) {
			return
		}
	}
}

// FlushedEnd is the flushed end of the log: consumers may read up to it.
func (l *Log) FlushedEnd() int64 { return l.flushed.Load() }

// LogEndOffset is the offset the next appended message will get.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// InRange reports whether Read would find offset in range: at or after the
// first segment's start and at or below the high-water mark. The broker
// asks it first, so that a fetch past the end, which a consumer's byte
// ranges sent ahead make when they reach the end (kafka/consumer/ranges.go),
// is answered without building Read's error for it.
func (l *Log) InRange(offset int64) bool {
	segs := *l.segs.Load()
	return offset >= segs[0].start && offset <= l.flushed.Load()
}

// dirty reports whether some appended bytes are not yet flushed.
func (l *Log) dirty() bool { return l.leo.Load() > l.flushed.Load() }

// Read returns the bytes of the log from offset up to offset+maxSize, cut at
// the high-water mark and at the end of the segment holding offset (so a
// Chunk lies in one file). It may end in the middle of a message; the
// consumer keeps the whole messages and fetches again from the first byte
// it did not use. An offset below the first segment or past the high-water
// mark is ErrOffsetOutOfRange; offset == FlushedEnd gives an empty Chunk.
// A non-empty Chunk must be released.
func (l *Log) Read(offset int64, maxSize int) (Chunk, error) {
	return l.read(offset, maxSize, -1)
}

// read is Read, or with limit >= 0 ReadUpTo's read (replica.go): offsets up
// to the log end offset are then in range and the bytes stop at limit, which
// the caller has made sure is in the segment files.
func (l *Log) read(offset int64, maxSize int, limit int64) (Chunk, error) {
	if maxSize < 0 {
		return Chunk{}, fmt.Errorf("%w: %d bytes asked from %s", ErrInvalidFetchSize, maxSize, l.dir)
	}
	for {
		if l.closed.Load() {
			return Chunk{}, fmt.Errorf("%w: read from %s", ErrClosed, l.dir)
		}
		// Load the high-water mark before the list: every byte below it is
		// then in a segment of the list (segments are only added after it).
		hwm := l.flushed.Load()
		bound, end := hwm, hwm
		if limit >= 0 {
			bound, end = l.leo.Load(), limit
		}
		segs := *l.segs.Load()
		if offset > bound || offset < segs[0].start {
			return Chunk{}, fmt.Errorf("%w: offset %d of %s is outside [%d, %d]",
				ErrOffsetOutOfRange, offset, l.dir, segs[0].start, bound)
		}
		// §3.1: binary-search the in-memory list of segment start offsets.
		i := sort.Search(len(segs), func(i int) bool { return segs[i].start > offset }) - 1
		s := segs[i]
		if i+1 < len(segs) && segs[i+1].start < end {
			end = segs[i+1].start
		}
		n := min(end-offset, int64(maxSize))
		if n <= 0 {
			return Chunk{}, nil
		}
		if !s.acquire() {
			continue // deleted meanwhile: look again, the offset is now out of range
		}
		return Chunk{File: s.file, Pos: offset - s.start, Len: n, seg: s}, nil
	}
}

// ReadBytes is Read copied into a new slice, for tests and tools.
func (l *Log) ReadBytes(offset int64, maxSize int) ([]byte, error) {
	c, err := l.Read(offset, maxSize)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	b := make([]byte, c.Len)
	if _, err := c.ReadAt(b); err != nil {
		return nil, fmt.Errorf("log: read %d bytes of %s at position %d: %w", c.Len, c.seg.path, c.Pos, err)
	}
	return b, nil
}

// Close flushes the log, stops its flusher and drops the list's hold on
// every segment file (files pinned by unreleased Chunks close on Release).
// Closing twice is a no-op.
func (l *Log) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(l.done)
	l.wg.Wait()
	err := l.flush(true) // a failed partition gets one last probe
	l.flushMu.Lock()
	st := l.syncs
	l.flushMu.Unlock()
	l.log.Info("log closed: its fsyncs", "dir", l.dir, "fsyncs", st.Count, "total", st.Total, "max", st.Max)
	l.mu.Lock()
	if l.bufGrown {
		l.bufGrown = false
		l.bufs.give()
	}
	for _, s := range *l.segs.Load() {
		if e := s.idx.save(); e != nil {
			l.log.Warn("could not save offset index; it is rebuilt on the next open", "err", e)
		}
		s.release()
	}
	l.mu.Unlock()
	return err
}

// FsyncStats are the flusher's fsyncs since the log was opened: how many,
// their total and their longest duration. A slowdown over a long run that
// comes from the disk or the page cache shows here; Close logs them.
type FsyncStats struct {
	Count      int64
	Total, Max time.Duration
}

func (s *FsyncStats) add(d time.Duration) {
	s.Count++
	s.Total += d
	s.Max = max(s.Max, d)
}

// Fsyncs returns the log's FsyncStats so far.
func (l *Log) Fsyncs() FsyncStats {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.syncs
}
