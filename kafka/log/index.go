package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// Logical offsets. The paper's offset is a byte position (§3.1); Kafka 0.8
// numbered messages instead, 0, 1, 2, … per partition, the inner messages of a
// compressed wrapper each with its own number. The log stays the paper's, and
// this file maps 0.8's numbers onto it: each segment keeps a sparse index of
// (logical offset, byte position) pairs, as 0.8's OffsetIndex does, in memory
// and in a file beside the segment:
//
//	00000000000000012345.index
//	+--------------+-------------------+-------------------+--
//	| base         | entry 0           | entry 1           | …
//	| int64        | uint32 | uint32   | uint32 | uint32   |
//	|              | rel    | position | rel    | position |
//	+--------------+-------------------+-------------------+--
//	 0              8                   16
//
// base is the logical offset of the segment's first message; rel is an
// entry's logical offset minus base, position its byte position in the
// segment. Entry 0 is (0, 0). An entry is added where an appended set starts
// at least indexInterval bytes after the last entry, and after every
// compressed wrapper, at the byte where the wrapper ends with the number of
// the message that follows it. So a walk forward from any entry meets no
// wrapper whose inner count it must open the wrapper for: between two
// entries lie only plain messages, one number each, or one wrapper, whose
// count is the difference of the entries around it.
//
// The file is a hint, rebuilt from the segment when it is missing or does not
// fit it: entries are saved as segments are flushed, and an entry pointing
// past the end of a segment (a tail cut by recovery or by a follower's
// truncation) is dropped on load. Only base cannot be rebuilt when every
// segment before it has been deleted by retention; a log that has no index
// file at all (written before indexes existed) numbers from its first
// segment, at 0.

// indexExt names a segment's index file.
const indexExt = ".index"

// indexInterval is 0.8's log.index.interval.bytes: the most bytes of plain
// messages between two entries, so a lookup reads at most this much.
const indexInterval = 4096

// indexEntrySize and indexHeaderSize are the file's sizes.
const (
	indexHeaderSize = 8
	indexEntrySize  = 8
)

// indexEntry is one (logical, position) pair, relative to its segment.
type indexEntry struct {
	rel, pos uint32
}

// offsetIndex is one segment's index. Appends (under Log.mu) add entries;
// readers take mu to read them.
type offsetIndex struct {
	path string
	base int64

	mu      sync.RWMutex
	entries []indexEntry
	saved   int // entries already in the file
	fresh   bool

	// lastPos is the position of the last entry, for the appender (under
	// Log.mu, or before the log is shared), so that an append that adds no
	// entry takes no lock.
	lastPos int64
}

func indexPath(segPath string) string {
	return strings.TrimSuffix(segPath, segmentExt) + indexExt
}

// newIndex is the index of an empty segment starting at logical base.
func newIndex(segPath string, base int64) *offsetIndex {
	return &offsetIndex{path: indexPath(segPath), base: base, entries: []indexEntry{{0, 0}}, fresh: true}
}

// last is the last entry, as absolute logical offset and segment position.
func (x *offsetIndex) last() (int64, int64) {
	x.mu.RLock()
	e := x.entries[len(x.entries)-1]
	x.mu.RUnlock()
	return x.base + int64(e.rel), int64(e.pos)
}

// add appends an entry; logical and pos must not be below the last one's.
func (x *offsetIndex) add(logical, pos int64) {
	x.mu.Lock()
	x.entries = append(x.entries, indexEntry{uint32(logical - x.base), uint32(pos)})
	x.mu.Unlock()
	x.lastPos = pos
}

// floorLogical is the last entry at or below logical offset l.
func (x *offsetIndex) floorLogical(l int64) (int64, int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	rel := l - x.base
	i := sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].rel) > rel }) - 1
	e := x.entries[max(i, 0)]
	return x.base + int64(e.rel), int64(e.pos)
}

// floorPosition is the last entry at or below segment position pos.
func (x *offsetIndex) floorPosition(pos int64) (int64, int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].pos) > pos }) - 1
	e := x.entries[max(i, 0)]
	return x.base + int64(e.rel), int64(e.pos)
}

// cut drops every entry past segment position pos.
func (x *offsetIndex) cut(pos int64) {
	x.mu.Lock()
	n := sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].pos) > pos })
	x.entries = x.entries[:max(n, 1)]
	x.saved = min(x.saved, len(x.entries))
	x.fresh = true // rewrite the file whole
	x.lastPos = int64(x.entries[len(x.entries)-1].pos)
	x.mu.Unlock()
}

// indexSaveEvery is how many new entries (about 1 MiB of log) a flush lets
// pile up before it saves them: the file is a hint, and the tail of the last
// segment past its last saved entry is walked again on open anyway, so
// saving at every flush (one open, write and close per 500 messages of a
// batch-1 producer) would cost more than it spares.
const indexSaveEvery = 256

// saveIfDue is save when indexSaveEvery entries are waiting (the flusher's).
func (x *offsetIndex) saveIfDue() error {
	x.mu.RLock()
	due := x.fresh || len(x.entries)-x.saved >= indexSaveEvery
	x.mu.RUnlock()
	if !due {
		return nil
	}
	return x.save()
}

// save writes what the file lacks: the whole index after a cut or at
// creation, else the entries added since the last save.
func (x *offsetIndex) save() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.fresh && x.saved == len(x.entries) {
		return nil
	}
	from := x.saved
	if x.fresh {
		from = 0
	}
	buf := make([]byte, 0, indexHeaderSize+indexEntrySize*(len(x.entries)-from))
	if from == 0 {
		buf = binary.BigEndian.AppendUint64(buf, uint64(x.base))
	}
	for _, e := range x.entries[from:] {
		buf = binary.BigEndian.AppendUint32(buf, e.rel)
		buf = binary.BigEndian.AppendUint32(buf, e.pos)
	}
	f, err := os.OpenFile(x.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("log: save index %s: %w", x.path, err)
	}
	at := int64(indexHeaderSize + indexEntrySize*from)
	if from == 0 {
		at = 0
	}
	_, err = f.WriteAt(buf, at)
	if err == nil && x.fresh {
		err = f.Truncate(int64(indexHeaderSize + indexEntrySize*len(x.entries)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("log: save index %s: %w", x.path, err)
	}
	x.saved, x.fresh = len(x.entries), false
	return nil
}

// loadIndex reads segment s's index file, keeping the entries that fit its
// size. ok is false when there is no usable file.
func loadIndex(s *segment) (x *offsetIndex, ok bool) {
	path := indexPath(s.path)
	b, err := os.ReadFile(path)
	if err != nil || len(b) < indexHeaderSize {
		return nil, false
	}
	x = &offsetIndex{path: path, base: int64(binary.BigEndian.Uint64(b))}
	size := s.size.Load()
	var prev indexEntry
	for p := indexHeaderSize; p+indexEntrySize <= len(b); p += indexEntrySize {
		e := indexEntry{binary.BigEndian.Uint32(b[p:]), binary.BigEndian.Uint32(b[p+4:])}
		if len(x.entries) == 0 && e != (indexEntry{}) || len(x.entries) > 0 && (e.rel < prev.rel || e.pos <= prev.pos) {
			break // not an index this file wrote: keep what came before
		}
		if int64(e.pos) > size {
			break
		}
		x.entries = append(x.entries, e)
		prev = e
	}
	if len(x.entries) == 0 || x.base < 0 {
		return nil, false
	}
	x.saved = len(x.entries)
	x.fresh = x.saved != (len(b)-indexHeaderSize)/indexEntrySize
	x.lastPos = int64(prev.pos)
	return x, true
}

// indexSegments gives every segment its index (loaded, or rebuilt from the
// segment) and returns the logical end of the log. A segment without a
// usable file starts where the one before it ends (the first at 0).
func indexSegments(segs []*segment) (int64, error) {
	var end int64
	for i, s := range segs {
		x, ok := loadIndex(s)
		if !ok {
			x = newIndex(s.path, end)
		} else if i > 0 && x.base != end {
			// The file disagrees with the segment before it: the
			// segments are the truth.
			x = newIndex(s.path, end)
		}
		s.idx = x
		var err error
		if end, err = s.scanIndex(); err != nil {
			return 0, err
		}
	}
	return end, nil
}

// scanIndex walks the segment from its last index entry to its end, adding
// entries, and returns the logical offset of its end.
func (s *segment) scanIndex() (int64, error) {
	x := s.idx
	logical, pos := x.last()
	size := s.size.Load()
	lastEntry := pos
	hdr := make([]byte, message.HeaderSizeV1)
	var wrapper []byte
	for pos < size {
		n, err := s.file.ReadAt(hdr, pos)
		if n < message.LengthSize+2 && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, fmt.Errorf("log: index %s at %d: %w", s.path, pos, err)
		}
		total := int64(message.LengthSize) + int64(binary.BigEndian.Uint32(hdr))
		if pos+total > size {
			break
		}
		if pos-lastEntry >= indexInterval {
			x.add(logical, pos)
			lastEntry = pos
		}
		if isWrapper(hdr) {
			if cap(wrapper) < int(total) {
				wrapper = make([]byte, total)
			}
			wrapper = wrapper[:total]
			if _, err := s.file.ReadAt(wrapper, pos); err != nil {
				return 0, fmt.Errorf("log: index %s: read wrapper at %d: %w", s.path, pos, err)
			}
			logical += int64(innerCount(message.Message(wrapper)))
			pos += total
			x.add(logical, pos)
			lastEntry = pos
			continue
		}
		logical++
		pos += total
	}
	return logical, nil
}

// isWrapper reports whether a message header names a compressed wrapper.
func isWrapper(hdr []byte) bool {
	return hdr[message.LengthSize] == message.MagicV1 && message.Codec(hdr[message.LengthSize+1]&3) != message.CodecNone
}

// innerCount is the number of messages inside wrapper m: 0.8 gives each its
// own logical offset. A wrapper that does not unpack counts as one message
// (the leader refused such wrappers; a follower must count as its leader did).
func innerCount(m message.Message) int {
	n, err := message.InnerCount(m)
	if err != nil || n == 0 {
		return 1
	}
	return n
}

// indexAppend records a set of count messages just appended at segment
// position pos of s, whose first message has logical offset first, and
// returns the logical offset after the set. With counted, inner is how many
// messages each of its wrappers holds, as the validation counted them, and
// a set without wrappers is not walked; without, the set is walked and its
// wrappers counted here. Called under Log.mu.
func (s *segment) indexAppend(set []byte, pos, first int64, count int, inner []int, counted bool) int64 {
	x := s.idx
	if pos-x.lastPos >= indexInterval {
		x.add(first, pos)
	}
	if counted && len(inner) == 0 {
		return first + int64(count)
	}
	logical := first
	for p := 0; p+message.LengthSize+2 <= len(set); {
		total := message.LengthSize + int(binary.BigEndian.Uint32(set[p:]))
		if isWrapper(set[p:]) {
			if len(inner) > 0 {
				logical += int64(max(inner[0], 1))
				inner = inner[1:]
			} else {
				logical += int64(innerCount(message.Message(set[p : p+total])))
			}
			x.add(logical, pos+int64(p+total))
		} else {
			logical++
		}
		p += total
	}
	return logical
}

// indexLocked is appendLocked's index work for a set of count messages
// appended at log offset offset of the active segment s, when it is more
// than an addition (see indexAppend): a set that reaches nextIdx, or one
// that appendChecked marked with nextIdx -1, leaving its wrappers' counts
// in l.inner (l.counted false: not counted). l.mu is held.
func (l *Log) indexLocked(s *segment, set []byte, offset int64, count int) {
	inner, counted := []int(nil), true
	if l.nextIdx < 0 {
		inner, counted = l.inner, l.counted
		l.inner, l.counted = nil, true
	}
	l.lend = s.indexAppend(set, offset-s.start, l.lend, count, inner, counted)
	l.nextIdx = s.start + s.idx.lastPos + indexInterval
}

// removeSidecars deletes the index and view files of a deleted segment.
func removeSidecars(segPath string) error {
	if err := os.Remove(indexPath(segPath)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log: delete index of %s: %w", filepath.Base(segPath), err)
	}
	return removeView(segPath)
}

// cutIndexLocked cuts segment s's index at its (new, smaller) size and
// counts the logical end again from the last entry left. l.mu is held.
func (l *Log) cutIndexLocked(s *segment) error {
	if err := l.drainLocked(s, 0); err != nil { // the walk reads the file
		return err
	}
	l.dropViewLocked(s) // it may hold encodings of bytes cut
	s.idx.cut(s.size.Load())
	end, err := s.scanIndex()
	if err != nil {
		return err
	}
	l.lend = end
	l.nextIdx = s.start + s.idx.lastPos + indexInterval
	if err := s.idx.save(); err != nil {
		l.log.Warn("could not save offset index; it is rebuilt on the next open", "err", err)
	}
	return nil
}

// LogicalEnd is the logical offset (0.8's) the next appended message gets.
func (l *Log) LogicalEnd() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lend
}

// LogicalStart is the logical offset of the first message still held.
func (l *Log) LogicalStart() int64 { return (*l.segs.Load())[0].idx.base }

// Locate is where to start reading for logical offset n: the byte offset of
// an index entry at or before n's message, and the logical offset of the
// message there. The caller walks forward from it, counting (a plain
// message is one number; a wrapper is as many as it holds). n past the
// logical end, or before the first message held, is ErrOffsetOutOfRange.
func (l *Log) Locate(n int64) (offset, at int64, err error) {
	segs := *l.segs.Load()
	if end := l.LogicalEnd(); n < segs[0].idx.base || n > end {
		return 0, 0, fmt.Errorf("%w: logical offset %d of %s, outside [%d, %d]",
			ErrOffsetOutOfRange, n, l.dir, segs[0].idx.base, end)
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].idx.base > n }) - 1
	// An empty segment shares its base with the one before it; the search
	// takes the later, and n there is its start.
	s := segs[max(i, 0)]
	at, pos := s.idx.floorLogical(n)
	return s.start + pos, at, nil
}

// LogicalAt is the logical offset of the message starting at byte offset
// b (a message boundary at most the log end offset; the log end offset
// itself gives LogicalEnd). It reads the segment from the index entry at
// or before b, counting messages.
func (l *Log) LogicalAt(b int64) (int64, error) {
	segs := *l.segs.Load()
	if b < segs[0].start || b > l.leo.Load() {
		return 0, fmt.Errorf("%w: byte offset %d of %s, outside [%d, %d]", ErrOffsetOutOfRange, b, l.dir, segs[0].start, l.leo.Load())
	}
	if b == l.leo.Load() {
		// The end: no walk through the last set, which may be a large one
		// with its only entry at its start. The broker asks this of every
		// fetch of a partition that is not being written.
		l.mu.Lock()
		end, n := l.leo.Load(), l.lend
		l.mu.Unlock()
		if b == end {
			return n, nil
		}
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].start > b }) - 1
	s := segs[i]
	logical, pos := s.idx.floorPosition(b - s.start)
	if pos == b-s.start {
		return logical, nil
	}
	if s == segs[len(segs)-1] && b > l.FlushedEnd() {
		// The bytes may still be in the write buffer.
		l.mu.Lock()
		err := l.drainLocked(s, 0)
		l.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	buf := make([]byte, b-s.start-pos)
	if _, err := s.file.ReadAt(buf, pos); err != nil {
		return 0, fmt.Errorf("log: count messages of %s from %d to %d: %w", s.path, s.start+pos, b, err)
	}
	for p := 0; p+message.LengthSize <= len(buf); {
		p += message.LengthSize + int(binary.BigEndian.Uint32(buf[p:]))
		logical++
	}
	return logical, nil
}
