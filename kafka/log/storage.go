package log

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// storage is what the append path does to a segment file: positioned
// writes, truncation, fsync, and reserving space. The log calls it through
// this interface, not *os.File directly, so that a test can make a write
// stop short or fail, as it does on a full or broken disk, and check what
// the log then leaves behind. Reads (Chunk, recovery) use the file itself.
type storage interface {
	WriteAt(f *os.File, p []byte, off int64) (int, error)
	Truncate(f *os.File, size int64) error
	Sync(f *os.File) error
	// Allocate makes sure the filesystem holds n bytes for f from off on,
	// extending the file to at least off+n.
	Allocate(f *os.File, off, n int64) error
}

// osStorage is the real thing.
type osStorage struct{}

func (osStorage) WriteAt(f *os.File, p []byte, off int64) (int, error) { return f.WriteAt(p, off) }
func (osStorage) Truncate(f *os.File, size int64) error                { return f.Truncate(size) }
func (osStorage) Sync(f *os.File) error                                { return f.Sync() }

// Allocate uses fallocate(2), which reserves the blocks without writing
// them; on a filesystem without it, it writes zeros.
func (osStorage) Allocate(f *os.File, off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, off, n)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	zeros := make([]byte, min(n, 1<<20))
	for done := int64(0); done < n; {
		k := min(int64(len(zeros)), n-done)
		if _, err := f.WriteAt(zeros[:k], off+done); err != nil {
			return err
		}
		done += k
	}
	return nil
}

// writeAt writes p at position off of s's file. A write that fails or
// stops short is undone: the file is truncated back to off (the end of the
// last whole set) and fsynced, so no part of p stays in the file, even
// across a clean restart that trusts the file's size. The error says what
// failed; if the undo failed too, it says that as well (the clean-shutdown
// record then disagrees with the file and the next start scans it).
func writeAt(st storage, s *segment, p []byte, off int64) error {
	n, err := st.WriteAt(s.file, p, off)
	if err == nil && n == len(p) {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(p))
	}
	err = fmt.Errorf("write %d bytes to %s at position %d: %w", len(p), s.path, off, err)
	if undo := truncateAndSync(st, s, off); undo != nil {
		return fmt.Errorf("%w; undoing it failed too: %w", err, undo)
	}
	return err
}

// truncateAndSync cuts s's file to size bytes and fsyncs it.
func truncateAndSync(st storage, s *segment, size int64) error {
	if err := st.Truncate(s.file, size); err != nil {
		return fmt.Errorf("truncate %s to %d bytes: %w", s.path, size, err)
	}
	if err := st.Sync(s.file); err != nil {
		return fmt.Errorf("fsync %s after truncating it to %d bytes: %w", s.path, size, err)
	}
	return nil
}
