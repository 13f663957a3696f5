package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// Views. A reader that wants the messages in another encoding (the broker's
// Kafka protocol fetch wants 0.8's numbered entries) would re-encode every
// message on every read. A view is that encoding, made once as the messages
// are appended (AppendView) and written to a file beside the segment:
//
//	00000000000000012345.log    the paper's messages
//	00000000000000012345.view   the same messages, as the appender encoded them
//
// so that reading it is, like reading the log, bytes for sendfile. The log
// does not know the encoding. It keeps marks, each (logical offset, log byte
// offset, view position) of one message: where the message starts in the log
// and where its encoding starts in the view. There is a mark where the view
// starts, then one at the first message at least viewMarkInterval view bytes
// after the last mark, and a tip at the end of the last set written out.
// ReadView gives the view from the mark at or before the wanted message to
// the last mark a reader may see (its log byte offset at or below the
// reader's limit, FlushedEnd for instance); the reader walks its encoding
// from the first mark to the message.
//
// A view is a cache, never the record. It covers one run of its segment's
// appends, from the first that came with an encoding to the first that did
// not (Append, a replica's append) or the segment's roll. It is not fsynced,
// it is dropped when its segment is cut (a follower's truncation, recovery)
// or deleted, and on open. What no view covers, the reader reads from the log.

// viewExt names a segment's view file.
const viewExt = ".view"

// viewMarkInterval is the view bytes from one mark to the message that
// gets the next: a reader walks at most this much and one message.
const viewMarkInterval = 4096

// ViewEncoder appends to dst the view's encoding of m, a plain message
// (not a wrapper) just appended, whose logical offset is n.
type ViewEncoder func(dst []byte, m message.Message, n int64) []byte

// viewMark is one message's place in the log and in the view.
type viewMark struct {
	logical int64 // its logical offset
	end     int64 // the log byte offset it starts at
	pos     int64 // the view position its encoding starts at
}

// view is one segment's view.
type view struct {
	path string
	file *os.File

	// Written under Log.mu.
	buf      []byte     // encodings not yet written to the file
	written  int64      // bytes in the file
	pending  []viewMark // marks at or before the end of buf, not yet readable
	tipNext  viewMark   // the tip once buf is written
	lastMark int64      // view position of the last mark
	ended    bool       // no more appends

	mu    sync.RWMutex // guards marks, tip and gone for readers
	marks []viewMark
	tip   viewMark
	gone  bool // dropped: readers read the log
}

func viewPath(segPath string) string {
	return strings.TrimSuffix(segPath, segmentExt) + viewExt
}

// removeView deletes the view file of a deleted or cut segment, if any.
func removeView(segPath string) error {
	if err := os.Remove(viewPath(segPath)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log: delete view of %s: %w", segPath, err)
	}
	return nil
}

// AppendView is Append, and the set's encoding by enc added to the active
// segment's view. A set with a compressed wrapper is appended as by Append,
// with no view (a wrapper holds more than one logical offset, which a walk
// of the view could not tell from the marks), and ends the segment's view.
func (l *Log) AppendView(set []byte, enc ViewEncoder) (offset int64, err error) {
	return l.appendSet(set, enc)
}

// viewAppendLocked adds set, just appended at log offset offset, count
// messages ending at logical offset l.lend, to the active segment's view,
// which it starts if the segment has none. With enc nil, or a set with a
// wrapper, it ends the view. A view that cannot be written is dropped, with
// a warning: appends do not fail for a cache. l.mu is held.
func (l *Log) viewAppendLocked(set []byte, offset int64, count int, wrapped bool, enc ViewEncoder) {
	segs := *l.segs.Load()
	s := segs[len(segs)-1]
	v := s.view.Load()
	if enc == nil || wrapped {
		if v != nil {
			v.ended = true
		}
		l.viewing = false
		return
	}
	first := l.lend - int64(count)
	if v == nil {
		f, err := os.OpenFile(viewPath(s.path), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		v = &view{path: viewPath(s.path), file: f}
		s.view.Store(v)
		if err != nil {
			l.log.Warn("could not create a segment's view; fetches of it re-encode", "err", err)
			v.ended, v.gone = true, true
			return
		}
		v.buf = make([]byte, 0, writeBufferSize)
		v.pending = append(v.pending, viewMark{logical: first, end: offset})
		l.viewing = true
	}
	if v.ended {
		return
	}
	it := message.NewIterator(set, offset)
	n := first
	for it.Next() {
		if pos := v.written + int64(len(v.buf)); pos-v.lastMark >= viewMarkInterval {
			v.pending = append(v.pending, viewMark{logical: n, end: it.Offset(), pos: pos})
			v.lastMark = pos
		}
		v.buf = enc(v.buf, it.Message(), n)
		n++
	}
	v.tipNext = viewMark{logical: n, end: offset + int64(len(set)), pos: v.written + int64(len(v.buf))}
	if len(v.buf) >= writeBufferSize {
		l.drainViewLocked(s)
	}
}

// drainViewLocked writes s's view buffer to its file and makes its marks
// readable. l.mu is held.
func (l *Log) drainViewLocked(s *segment) {
	v := s.view.Load()
	if v == nil || v.gone || len(v.buf) == 0 && len(v.pending) == 0 {
		return
	}
	if _, err := v.file.WriteAt(v.buf, v.written); err != nil {
		l.log.Warn("could not write a segment's view; fetches of it re-encode", "view", v.path, "err", err)
		l.dropViewLocked(s)
		return
	}
	v.written += int64(len(v.buf))
	v.buf = v.buf[:0]
	v.mu.Lock()
	v.marks = append(v.marks, v.pending...)
	v.tip = v.tipNext
	v.mu.Unlock()
	v.pending = v.pending[:0]
}

// endViewLocked writes out s's view and ends it: s is rolled. l.mu is held.
func (l *Log) endViewLocked(s *segment) {
	if v := s.view.Load(); v != nil {
		l.drainViewLocked(s)
		v.ended, v.buf, v.pending = true, nil, nil
	}
	l.viewing = false
}

// dropViewLocked makes s's view unreadable and deletes its file (the file
// stays open for reads in flight and closes with the segment). l.mu is held.
func (l *Log) dropViewLocked(s *segment) {
	v := s.view.Load()
	if v == nil {
		return
	}
	v.mu.Lock()
	v.gone = true
	v.mu.Unlock()
	v.ended, v.buf, v.pending = true, nil, nil
	if segs := *l.segs.Load(); s == segs[len(segs)-1] {
		l.viewing = false
	}
	if err := removeView(s.path); err != nil {
		l.log.Warn("could not delete a dropped view", "err", err)
	}
}

// ReadView is the view of the segment holding logical offset n, from the
// mark at or before n to the last mark whose log byte offset is at most
// limit: a Chunk of the view file (release it), the logical offset of the
// message its first bytes encode, and that of the message after its last.
// ok is false where no view covers n with at least n's message below limit:
// the caller reads the log.
func (l *Log) ReadView(n, limit int64) (c Chunk, first, end int64, ok bool) {
	segs := *l.segs.Load()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].idx.base > n }) - 1
	if i < 0 {
		return Chunk{}, 0, 0, false
	}
	s := segs[i]
	v := s.view.Load()
	if v == nil {
		return Chunk{}, 0, 0, false
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.gone || len(v.marks) == 0 {
		return Chunk{}, 0, 0, false
	}
	j := sort.Search(len(v.marks), func(j int) bool { return v.marks[j].logical > n }) - 1
	if j < 0 {
		return Chunk{}, 0, 0, false
	}
	to := v.tip
	if to.end > limit {
		k := sort.Search(len(v.marks), func(k int) bool { return v.marks[k].end > limit }) - 1
		if k < 0 {
			return Chunk{}, 0, 0, false
		}
		to = v.marks[k]
	}
	from := v.marks[j]
	if to.logical <= n || !s.acquire() {
		return Chunk{}, 0, 0, false
	}
	return Chunk{File: v.file, Pos: from.pos, Len: to.pos - from.pos, seg: s}, from.logical, to.logical, true
}
