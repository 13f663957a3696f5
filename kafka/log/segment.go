package log

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// segment is one file of a partition: the messages at logical offsets
// [start, start+size). Only the last segment of a log grows.
type segment struct {
	start int64
	path  string
	file  *os.File
	// size is the number of bytes of the logical log held by this segment,
	// including bytes of the active segment still in the log's write buffer.
	// Written under Log.mu, read atomically by Segments and Size.
	size atomic.Int64
	// refs counts owners of file: one for the log's segment list plus one per
	// outstanding Chunk. The file is closed when it drops to zero, so a
	// segment deleted by retention stays readable for fetches in flight.
	refs atomic.Int32
	// idx maps 0.8's logical offsets onto the segment's bytes (index.go).
	idx *offsetIndex
	// view is the segment's messages in a reader's encoding, or nil
	// (view.go). Set under Log.mu, read by readers.
	view atomic.Pointer[view]
}

func newSegment(start int64, path string, f *os.File, size int64) *segment {
	s := &segment{start: start, path: path, file: f}
	s.size.Store(size)
	s.refs.Store(1)
	return s
}

// createSegment creates the empty segment file starting at start in dir.
func createSegment(dir string, start int64) (*segment, error) {
	path := filepath.Join(dir, segmentFileName(start))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log: create segment %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		os.Remove(path) // so that the next try can create it again
		return nil, err
	}
	return newSegment(start, path, f, 0), nil
}

// acquire takes a reference for a Chunk; it fails once the segment's file
// has been closed (the segment was deleted and every reader has gone).
func (s *segment) acquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference and closes the file with the last one.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.file.Close()
		if v := s.view.Load(); v != nil && v.file != nil {
			v.file.Close()
		}
	}
}

// end is the logical offset just after the segment's last byte.
func (s *segment) end() int64 { return s.start + s.size.Load() }

// Chunk is a window of one segment file: Len bytes at position Pos, the
// bytes of the logical log from the offset given to Read. The broker hands
// it to sendfile (paper §3.1: bytes go from the page cache to the socket
// without being copied into the process).
//
// Chunk files are shared by every reader and by the writer: read them with
// positioned calls only (ReadAt, or unix.Sendfile with an explicit offset),
// never Seek or Read, which move the file's shared offset.
//
// A Chunk with Len > 0 must be released exactly once with Release; an empty
// Chunk (Len == 0, File == nil) needs no release, though calling it is safe.
type Chunk struct {
	File     *os.File
	Pos, Len int64
	seg      *segment
}

// Release gives back the Chunk's hold on its segment file. A deleted
// segment's file is closed only after every Chunk on it is released.
func (c Chunk) Release() {
	if c.seg != nil {
		c.seg.release()
	}
}

// Slice is the part of c from position from (relative to c.Pos) for n bytes,
// cut at c's end. It shares c's hold on the file: release c or the slice,
// not both.
func (c Chunk) Slice(from, n int64) Chunk {
	from = min(max(from, 0), c.Len)
	return Chunk{File: c.File, Pos: c.Pos + from, Len: min(max(n, 0), c.Len-from), seg: c.seg}
}

// ReadAt copies the chunk's bytes into p (at most Len of them) with a
// positioned read; it is the non-sendfile way to use a Chunk.
func (c Chunk) ReadAt(p []byte) (int, error) {
	if int64(len(p)) > c.Len {
		p = p[:c.Len]
	}
	if len(p) == 0 {
		return 0, nil
	}
	return c.File.ReadAt(p, c.Pos)
}

// SegmentInfo describes one segment file for tools and tests.
type SegmentInfo struct {
	Start   int64 // logical offset of the first byte
	Size    int64 // bytes, including any not yet written out of the buffer
	Path    string
	ModTime time.Time // the file's last modification, which retention compares
}

// syncDir fsyncs a directory so that a created or removed file name survives
// a machine crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("log: open directory %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("log: sync directory %s: %w", dir, err)
	}
	return nil
}
