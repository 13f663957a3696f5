package log

import (
	"fmt"
	"path/filepath"
	"time"
)

// A storage error (a full disk, an I/O error) fails one partition, not the
// broker. The write that hit it is undone (writeAt), so the log holds
// exactly what it held before that append, and from then on the partition
// refuses every append with ErrStorage without touching the disk. Refusing
// all of them, the small sets that would still fit in the write buffer
// included, is what keeps a hole out of the log: nothing produced after a
// refused set is stored until the partition heals.
//
// It heals when a probe succeeds: at most once per storageRetryInterval, an
// append (or the flush timer, or Close) reserves room past the end of the
// active segment for the write that failed (at least minProbeBytes, so the
// few bytes the undone write gave back do not count as space returning),
// writes and fsyncs a block there, and cuts the file back. Reads go on
// throughout: every byte below the flushed end is intact.
//
// A failed fsync is different: after it, which of the unflushed bytes
// reached the disk is unknown (Linux may drop the dirty pages and report
// success on the next fsync). The partition then refuses appends until the
// broker restarts, its Close fails, the clean-shutdown record leaves it out,
// and the next start scans it (recover.go).
//
// The log directory as a whole does not go offline (later Kafka marks a
// failed directory offline and moves its partitions to other replicas):
// with one broker and no replicas there is nowhere to move them, and a full
// disk is the common case, which clears by itself once space is freed.
const (
	storageRetryInterval = time.Second
	minProbeBytes        = 1 << 20
	probeBlock           = 4 << 10
)

// failure is the state of a failed partition, guarded by Log.mu.
type failure struct {
	cause     error     // the storage error that failed the partition
	since     time.Time // when
	need      int64     // bytes the failed write wanted
	fatal     bool      // an fsync failed: no probe, only a restart heals
	refused   int64     // appends refused since
	nextProbe time.Time
}

// partition is the log's "<topic>-<partition>" name, for messages.
func (l *Log) partition() string { return filepath.Base(l.dir) }

// failLocked fails the partition after cause (an error from the storage
// layer) and returns the error for the caller to pass on. need is how many
// bytes the failed write wanted; fatal marks a failed fsync. The first
// failure is logged at ERROR, naming the partition and the cause; later
// ones while it stays failed are not.
func (l *Log) failLocked(cause error, need int64, fatal bool) error {
	now := time.Now()
	if l.failed == nil {
		l.failed = &failure{cause: cause, since: now, need: need, fatal: fatal, nextProbe: now.Add(l.retryEvery)}
		heal := "when a probe write succeeds (retried every " + l.retryEvery.String() + ")"
		if fatal {
			heal = "until the broker restarts and recovers it"
		}
		l.log.Error("partition refuses appends after a storage error", "partition", l.partition(),
			"dir", l.dir, "err", cause, "until", heal)
	} else {
		l.failed.need = max(l.failed.need, need)
		l.failed.fatal = l.failed.fatal || fatal
	}
	return l.refusalLocked()
}

// refusalLocked is the error an append gets while the partition is failed.
func (l *Log) refusalLocked() error {
	f := l.failed
	if f.fatal {
		return fmt.Errorf("%w: partition %s refuses appends until the broker restarts (an fsync failed at %s): %w",
			ErrStorage, l.partition(), f.since.Format(time.RFC3339), f.cause)
	}
	return fmt.Errorf("%w: partition %s refuses appends since %s, retrying every %s: %w",
		ErrStorage, l.partition(), f.since.Format(time.RFC3339), l.retryEvery, f.cause)
}

// healLocked returns nil if the partition is healthy or the probe heals
// it now, and the refusal otherwise. Without force the probe runs at most
// once per l.retryEvery (storageRetryInterval).
func (l *Log) healLocked(force bool) error {
	f := l.failed
	if f == nil {
		return nil
	}
	now := time.Now()
	if f.fatal || (!force && now.Before(f.nextProbe)) {
		return l.refusalLocked()
	}
	f.nextProbe = now.Add(l.retryEvery)
	if err := l.probeLocked(max(f.need, minProbeBytes)); err != nil {
		l.log.Debug("storage probe failed", "partition", l.partition(), "err", err)
		return l.refusalLocked()
	}
	l.log.Info("partition accepts appends again", "partition", l.partition(),
		"failedFor", now.Sub(f.since).Round(time.Millisecond), "refused", f.refused, "cause", f.cause)
	l.failed = nil
	return nil
}

// probeLocked checks that the active segment can take n more bytes and that
// a write and an fsync succeed, then cuts the file back to l.written.
func (l *Log) probeLocked(n int64) error {
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	err := l.st.Allocate(active.file, l.written, n)
	if err == nil {
		var block [probeBlock]byte
		err = writeAt(l.st, active, block[:], l.written)
	}
	if err == nil {
		err = l.st.Sync(active.file)
	}
	if undo := truncateAndSync(l.st, active, l.written); err == nil {
		err = undo
	}
	return err
}
