package log

import (
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// What replication (package kafka/replication, docs/PROTOCOL.md §10) needs
// from a partition's log beyond the paper's: a leader's followers read past
// the flushed end, a leader's consumers stop at the replicas' high watermark
// (which is not the flushed end this package calls its high-water mark, the
// 0.7 name), and a follower cuts off a tail its new leader does not have.

// Files replication keeps beside the segments, which the log leaves alone:
// a partition directory's leader epochs, and the log directory's high
// watermarks (docs/PROTOCOL.md §10).
const (
	LeaderEpochFile           = "leader-epoch-checkpoint"
	ReplicationCheckpointFile = "replication-offset-checkpoint"
	// GroupOffsetsFile holds the offsets consumer groups commit through the
	// Kafka protocol (broker/groupoffsets.go), in the log directory.
	GroupOffsetsFile = "consumer-offsets-checkpoint"
)

// GetOrCreateReplica is GetOrCreate for a partition of a replicated topic,
// whose number of partitions its replica assignment decides, not
// num.partitions: any partition >= 0 of a valid topic name.
func (m *Manager) GetOrCreateReplica(topic string, partition int) (*Log, error) {
	if l, ok := m.Get(topic, partition); ok {
		return l, nil
	}
	if err := ValidateTopic(topic); err != nil {
		return nil, err
	}
	if partition < 0 {
		return nil, fmt.Errorf("%w: partition %d of topic %q", ErrInvalidPartition, partition, topic)
	}
	return m.create(topic, partition)
}

// AppendReplica is Append for a follower's copy of its leader's bytes
// (docs/PROTOCOL.md §10: the same bytes at the same offsets on every
// replica). It checks the framing and every CRC as Append does but does not
// unpack compressed wrappers: the leader's Append checked them, and a copy
// must not refuse, and so stall on, what its leader holds.
func (l *Log) AppendReplica(set []byte) (offset int64, err error) {
	count, err := message.ValidateWhole(set)
	if err != nil {
		return 0, fmt.Errorf("%w: %d-byte set refused whole: %w", ErrInvalidMessage, len(set), err)
	}
	return l.appendValidated(set, count)
}

// AppendReplicaPrefix is AppendReplica for a follower's fetched bytes, in
// one pass over them: it checks every message (framing and CRC, as
// AppendReplica does, wrappers not unpacked), appends the whole good
// messages from the start of set, and writes them to the segment file at
// once, straight from set, without the copy into the write buffer (a
// follower writes its bytes out before its next fetch reports them, so
// buffering them would only add a copy). valid is the number of bytes
// appended: a partial message at the end of set (a fetch cut at
// replica.fetch.max.bytes) is left for the next fetch and is no error; a
// bad message stops the append before it and is the error, wrapping
// ErrInvalidMessage, with the good messages before it appended. A storage
// error appends nothing (valid is then 0).
func (l *Log) AppendReplicaPrefix(set []byte) (offset int64, valid int, err error) {
	valid, count, bad := message.Validate(set)
	if offset, err = l.appendChecked(set[:valid], count, nil, false, true, nil); err != nil {
		return offset, 0, err
	}
	if bad != nil {
		return offset, valid, fmt.Errorf("%w: after %d good bytes: %w", ErrInvalidMessage, valid, bad)
	}
	return offset, valid, nil
}

// ReadUpTo is Read for a replicated partition: offsets up to the log end
// offset are in range, and the bytes stop at limit (at most the log end
// offset), flushed or not. A follower's fetch reads up to the log end; a
// consumer's up to min(high watermark, flushed end), so offset > limit is an
// empty Chunk, not an error: a consumer that moved from a dead leader may be
// ahead of the new leader's high watermark for a moment. Bytes still in the
// write buffer are written to the file first (not fsynced), since a Chunk
// reads the file.
func (l *Log) ReadUpTo(offset int64, maxSize int, limit int64) (Chunk, error) {
	leo := l.leo.Load()
	limit = max(min(limit, leo), 0)
	if limit > l.flushed.Load() {
		l.mu.Lock()
		segs := *l.segs.Load()
		active := segs[len(segs)-1]
		if active.start+l.written < limit {
			if err := l.drainLocked(active, 0); err != nil {
				l.mu.Unlock()
				return Chunk{}, err
			}
		}
		limit = min(limit, active.start+l.written)
		l.mu.Unlock()
	}
	return l.read(offset, maxSize, limit)
}

// OffsetsUpTo is Offsets with end in place of the flushed end: a replicated
// partition's "latest" is where its consumers' reads stop.
func (l *Log) OffsetsUpTo(t int64, max int, end int64) []int64 {
	return l.offsetsUpTo(t, max, min(end, l.leo.Load()))
}

// WriteOut writes the bytes still in the write buffer to the segment file,
// without fsync: afterwards they survive this process dying (they are in the
// page cache), though not the machine losing power. A follower calls it
// before it tells its leader how far it has got, and a leader before it
// acknowledges a produce.
func (l *Log) WriteOut() error { return l.WriteOutTo(math.MaxInt64) }

// WriteOutTo is WriteOut when some byte before end is still only in the
// write buffer, and does nothing when the file already holds everything
// before end. A leader answering an acks=-1 produce calls it: the follower
// fetches that committed the set had it written out already (ReadUpTo), and
// the sets appended since stay buffered for the next one write, instead of
// one write per answer.
func (l *Log) WriteOutTo(end int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return fmt.Errorf("%w: write out %s", ErrClosed, l.dir)
	}
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	if end <= active.start+l.written {
		return nil
	}
	return l.drainLocked(active, 0)
}

// TruncateTo removes every byte from offset on, which must be a message
// boundary in [log start, log end offset]: segments starting at or past it
// are deleted, the one holding it is cut and fsynced, and the log end offset
// and flushed end move back to offset. Only a follower does this, cutting off
// what its leader does not have (leader epochs, docs/PROTOCOL.md §10); no
// consumer reads a follower, so no Chunk is expected on the bytes cut.
func (l *Log) TruncateTo(offset int64) error {
	l.flushMu.Lock() // no flush may raise the flushed end past offset meanwhile
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return fmt.Errorf("%w: truncate %s", ErrClosed, l.dir)
	}
	segs := *l.segs.Load()
	leo := l.leo.Load()
	if offset < segs[0].start || offset > leo {
		return fmt.Errorf("%w: truncate %s to %d, outside [%d, %d]", ErrOffsetOutOfRange, l.dir, offset, segs[0].start, leo)
	}
	if offset == leo {
		return nil
	}
	active := segs[len(segs)-1]
	if fileEnd := active.start + l.written; offset >= fileEnd {
		// Only buffered bytes go.
		l.buf = l.buf[:offset-fileEnd]
		active.size.Store(offset - active.start)
		l.leo.Store(offset)
		return l.cutIndexLocked(active)
	}
	l.buf = l.buf[:0]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].start > offset }) - 1
	if i > 0 && segs[i].start == offset {
		i-- // the previous segment ends exactly there: it becomes the active one again
	}
	for _, s := range segs[i+1:] {
		if err := os.Remove(s.path); err != nil {
			return fmt.Errorf("log: truncate %s to %d: delete segment %s: %w", l.dir, offset, s.path, err)
		}
		if err := removeSidecars(s.path); err != nil {
			return fmt.Errorf("log: truncate %s to %d: %w", l.dir, offset, err)
		}
		s.release()
	}
	keep := make([]*segment, i+1)
	copy(keep, segs[:i+1])
	s := keep[i]
	if err := truncateAndSync(l.st, s, offset-s.start); err != nil {
		return fmt.Errorf("log: truncate %s to %d: %w", l.dir, offset, err)
	}
	s.size.Store(offset - s.start)
	l.written = offset - s.start
	l.segs.Store(&keep)
	l.leo.Store(offset)
	if l.flushed.Load() > offset {
		l.flushed.Store(offset)
	}
	if len(keep) < len(segs) {
		if err := syncDir(l.dir); err != nil {
			return err
		}
	}
	if err := l.cutIndexLocked(s); err != nil {
		return err
	}
	l.log.Info("truncated", "dir", l.dir, "offset", offset, "bytesRemoved", leo-offset, "segmentsDeleted", len(segs)-len(keep))
	return nil
}

// PartitionRef names one partition a Manager holds.
type PartitionRef struct {
	Topic     string
	Partition int
	Log       *Log
}

// All lists every partition the Manager holds, sorted by topic and partition.
func (m *Manager) All() []PartitionRef {
	m.mu.RLock()
	out := make([]PartitionRef, 0, len(m.logs))
	for k, l := range m.logs {
		out = append(out, PartitionRef{Topic: k.topic, Partition: k.partition, Log: l})
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
