package log

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Offsets answers an OFFSETS request (docs/PROTOCOL.md §4): segment start offsets, plus
// the high-water mark for "latest", in descending order, at most max of
// them. t is -1 (latest: the flushed end, then every segment start), -2
// (earliest: the first segment's start) or a time in milliseconds since the
// epoch (the starts of the segments last modified at or before t). Offsets
// are at segment granularity: there is no per-message index (§3.1).
func (l *Log) Offsets(t int64, max int) []int64 {
	// Load the high-water mark before the list (see Read).
	return l.offsetsUpTo(t, max, l.flushed.Load())
}

// offsetsUpTo is Offsets with end in place of the high-water mark.
func (l *Log) offsetsUpTo(t int64, max int, hwm int64) []int64 {
	segs := *l.segs.Load()

	// Like Kafka 0.7: one (offset, time) pair per segment start, and one more
	// for the flushed end when the last readable segment is not empty. Only
	// offsets a consumer may read from (<= hwm) are listed.
	type point struct{ offset, ms int64 }
	points := make([]point, 0, len(segs)+1)
	for _, s := range segs {
		if s.start > hwm {
			break
		}
		ms := int64(0)
		if fi, err := os.Stat(s.path); err == nil {
			ms = fi.ModTime().UnixMilli()
		}
		points = append(points, point{s.start, ms})
	}
	if len(points) > 0 && points[len(points)-1].offset < hwm {
		points = append(points, point{hwm, time.Now().UnixMilli()})
	}

	if len(points) == 0 { // only in a race with retention; the caller may ask again
		return []int64{}
	}
	var from int // index of the newest point to report; -1 for none
	switch t {
	case -1:
		from = len(points) - 1
	case -2:
		from = 0
	default:
		from = len(points) - 1
		for from >= 0 && points[from].ms > t {
			from--
		}
	}
	n := min(max, from+1)
	if n <= 0 {
		return []int64{}
	}
	out := make([]int64, n)
	for j := range out {
		out[j] = points[from-j].offset
	}
	return out
}

// Segments describes every segment, oldest first.
func (l *Log) Segments() []SegmentInfo {
	segs := *l.segs.Load()
	out := make([]SegmentInfo, len(segs))
	for i, s := range segs {
		out[i] = SegmentInfo{Start: s.start, Size: s.size.Load(), Path: s.path}
		if fi, err := os.Stat(s.path); err == nil {
			out[i].ModTime = fi.ModTime()
		}
	}
	return out
}

// Size is the number of bytes the partition holds (appended, flushed or not).
func (l *Log) Size() int64 {
	segs := *l.segs.Load()
	return l.leo.Load() - segs[0].start
}

// DeleteOldSegments applies the retention rules at time now (§3.1: the
// broker does not know what consumers have read; it deletes data after a
// retention period). It deletes, oldest first and always as a prefix of the
// list, the segments whose file is older than Config.RetentionHours and those
// that must go to bring the partition within Config.RetentionSize. If every
// segment would go, a fresh empty segment is rolled first, so the log end
// offset never moves backwards. It returns how many segments it deleted.
//
// The log is flushed first, and only segments wholly below the high-water
// mark are deleted, so retention never removes bytes consumers could not yet
// see, and the first segment always starts at or below the high-water mark.
func (l *Log) DeleteOldSegments(now time.Time) (deleted int, err error) {
	if l.closed.Load() {
		return 0, fmt.Errorf("%w: delete old segments of %s", ErrClosed, l.dir)
	}
	// A failed partition still applies retention: deleting old segments
	// is what may give a full disk its space back.
	if err := l.flush(false); err != nil && !errors.Is(err, ErrStorage) {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, fmt.Errorf("%w: delete old segments of %s", ErrClosed, l.dir)
	}
	segs := *l.segs.Load()
	hwm := l.flushed.Load()
	flushed := 0 // segments wholly below the high-water mark
	for flushed < len(segs) && segs[flushed].end() <= hwm {
		flushed++
	}

	byTime := 0
	if l.cfg.RetentionHours > 0 {
		cutoff := now.Add(-time.Duration(l.cfg.RetentionHours) * time.Hour)
		for byTime < len(segs) {
			fi, err := os.Stat(segs[byTime].path)
			if err != nil {
				return 0, fmt.Errorf("log: stat segment %s for retention: %w", segs[byTime].path, err)
			}
			if !fi.ModTime().Before(cutoff) {
				break
			}
			byTime++
		}
	}
	bySize := 0
	if l.cfg.RetentionSize > 0 {
		// Kafka 0.7: delete while what remains is still at least the limit.
		excess := l.leo.Load() - segs[0].start - l.cfg.RetentionSize
		for bySize < len(segs) && excess-segs[bySize].size.Load() >= 0 {
			excess -= segs[bySize].size.Load()
			bySize++
		}
	}
	n := min(max(byTime, bySize), flushed)
	if n == 0 {
		return 0, nil
	}

	if n == len(segs) {
		last := segs[len(segs)-1]
		if last.size.Load() == 0 {
			// Keep the empty active segment, and mark it fresh so that it is
			// not judged old again at the next check.
			n--
			if err := os.Chtimes(last.path, now, now); err != nil {
				l.log.Warn("could not touch empty segment", "segment", last.path, "err", err)
			}
		} else {
			// Every byte is flushed (n <= flushed), so the new empty
			// segment starts at the high-water mark.
			if _, err := l.rollLocked(); err != nil {
				return 0, err
			}
		}
		segs = *l.segs.Load()
	}

	keep := make([]*segment, len(segs)-n)
	copy(keep, segs[n:])
	l.segs.Store(&keep)
	var firstErr error
	for _, s := range segs[:n] {
		// Unlinking an open file is fine: fetches holding a Chunk on it go on
		// reading, and the file is closed when the last one is released.
		if err := os.Remove(s.path); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("log: delete segment %s: %w", s.path, err)
		}
		if err := removeSidecars(s.path); err != nil && firstErr == nil {
			firstErr = err
		}
		l.log.Info("deleted segment", "segment", s.path, "start", s.start, "bytes", s.size.Load(),
			"byTime", deleted < byTime, "bySize", deleted < bySize)
		s.release()
		deleted++
	}
	if err := syncDir(l.dir); err != nil && firstErr == nil {
		firstErr = err
	}
	return deleted, firstErr
}
