package log

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// segmentRecord is what a clean shutdown records of a partition's last
// segment (manager.go): where it starts and how many bytes it holds.
type segmentRecord struct {
	start, size int64
}

// loadSegments opens every segment file of the partition directory dir
// (creating dir and a first empty segment if there are none), recovers the
// last one if asked, and checks that the segments tile the logical log.
//
// Without recover but with expect (the clean-shutdown record), the last
// segment is trusted only if it starts and ends where the record says. If
// not (a write that failed and could not be undone leaves a file longer
// than the log), it is scanned, but no further than the recorded size when
// the start agrees: bytes past the end of a clean shutdown are not the log's.
func loadSegments(dir string, recover bool, expect *segmentRecord, lg *slog.Logger) ([]*segment, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log: create partition directory %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("log: list partition directory %s: %w", dir, err)
	}
	var segs []*segment
	closeAll := func() {
		for _, s := range segs {
			s.file.Close()
		}
	}
	for _, e := range entries {
		start, ok := parseSegmentFileName(e.Name())
		if e.Name() == LeaderEpochFile || e.Name() == LeaderEpochFile+".tmp" {
			continue // replication's (replica.go)
		}
		if _, isIndex := parseSegmentFileName(strings.TrimSuffix(e.Name(), indexExt) + segmentExt); isIndex && strings.HasSuffix(e.Name(), indexExt) {
			continue // a segment's offset index (index.go)
		}
		if _, isView := parseSegmentFileName(strings.TrimSuffix(e.Name(), viewExt) + segmentExt); isView && strings.HasSuffix(e.Name(), viewExt) {
			// A segment's view (view.go), a cache: dropped on open.
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				lg.Warn("could not delete a view on open", "dir", dir, "name", e.Name(), "err", err)
			}
			continue
		}
		if !ok || !e.Type().IsRegular() {
			lg.Warn("ignoring stray entry in partition directory", "dir", dir, "name", e.Name())
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("log: open segment %s: %w", path, err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			closeAll()
			return nil, fmt.Errorf("log: stat segment %s: %w", path, err)
		}
		segs = append(segs, newSegment(start, path, f, fi.Size()))
	}
	if len(segs) == 0 {
		s, err := createSegment(dir, 0)
		if err != nil {
			return nil, err
		}
		return []*segment{s}, nil
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].start < segs[j].start })

	last := segs[len(segs)-1]
	limit := last.size.Load()
	if !recover && expect != nil && (expect.start != last.start || expect.size != limit) {
		lg.Warn("last segment disagrees with the clean-shutdown record, scanning it",
			"segment", last.path, "recordedStart", expect.start, "recordedBytes", expect.size, "fileBytes", limit)
		recover = true
		if expect.start == last.start {
			limit = min(limit, expect.size)
		}
	}
	if recover {
		if err := recoverSegment(last, limit, lg); err != nil {
			closeAll()
			return nil, err
		}
	}
	// docs/PROTOCOL.md §3: consecutive segments must tile, start[i] + size[i] == start[i+1].
	for i := 0; i+1 < len(segs); i++ {
		if segs[i].end() != segs[i+1].start {
			err := fmt.Errorf("%w: %s starts at %d and holds %d bytes, ending at %d, but the next segment %s starts at %d",
				ErrSegmentGap, segs[i].path, segs[i].start, segs[i].size.Load(), segs[i].end(), segs[i+1].path, segs[i+1].start)
			closeAll()
			return nil, err
		}
	}
	return segs, nil
}

// recoverSegment scans the first limit bytes of s and truncates it just
// after the last good message (paper §3.3: "Kafka runs a recovery process
// to remove those messages with inconsistent CRCs"). The scan stops at a
// length too short for a message, a message running past limit, an unknown
// magic or a CRC mismatch.
func recoverSegment(s *segment, limit int64, lg *slog.Logger) error {
	size := s.size.Load()
	good, reason, err := scanValid(s.file, limit)
	if err != nil {
		return fmt.Errorf("log: recover %s: %w", s.path, err)
	}
	if good < size && reason == "" {
		reason = "past the end recorded at the clean shutdown"
	}
	if good == size {
		lg.Info("recovered segment intact", "segment", s.path, "bytes", size)
		return nil
	}
	lg.Warn("recovery truncating segment",
		"partition", filepath.Base(filepath.Dir(s.path)), "segment", s.path, "offset", s.start+good, "position", good, "bytesRemoved", size-good, "reason", reason)
	if err := s.file.Truncate(good); err != nil {
		return fmt.Errorf("log: truncate %s to %d bytes: %w", s.path, good, err)
	}
	if err := s.file.Sync(); err != nil {
		return fmt.Errorf("log: fsync %s after truncation: %w", s.path, err)
	}
	s.size.Store(good)
	return nil
}

// scanValid reads the first size bytes of f as a message set and returns
// the length of its longest prefix of whole, valid messages, and why the
// scan stopped before size (empty when it did not).
func scanValid(f *os.File, size int64) (good int64, reason string, err error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20)
	buf := make([]byte, 64<<10)
	for good < size {
		if size-good < message.LengthSize {
			return good, fmt.Sprintf("%d trailing bytes are too few for a length", size-good), nil
		}
		if _, err := io.ReadFull(r, buf[:message.LengthSize]); err != nil {
			return good, "", err
		}
		n := int64(binary.BigEndian.Uint32(buf))
		if n > size-good-message.LengthSize {
			return good, fmt.Sprintf("message length %d runs past the end of the file", n), nil
		}
		if n < message.HeaderSizeV0-message.LengthSize {
			return good, fmt.Sprintf("message length %d is too short", n), nil
		}
		total := int(message.LengthSize + n)
		if total > len(buf) {
			buf = append(buf[:message.LengthSize], make([]byte, total-message.LengthSize)...)
		}
		if _, err := io.ReadFull(r, buf[message.LengthSize:total]); err != nil {
			return good, "", err
		}
		// The message's structure, attributes and CRC, and a wrapper's
		// inner set, exactly as Append checks them: what Append took,
		// recovery keeps. Since the CRC does not cover a magic-1 message's
		// attributes, a flipped codec bit shows only as a wrapper that does
		// not unpack.
		if _, err := message.ValidateWholeDeep(buf[:total]); err != nil {
			return good, err.Error(), nil
		}
		good += int64(total)
	}
	return good, "", nil
}
