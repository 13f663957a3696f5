package log

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
)

// CleanShutdownFile is the marker a clean shutdown leaves in the log
// directory; without it the next start recovers every partition (§3.3).
const CleanShutdownFile = ".kafka_cleanshutdown"

type partitionKey struct {
	topic     string
	partition int
}

// Manager owns every partition log under one log directory (log.dir): it
// loads them at start, creates them on first use, fsyncs them on a timer,
// applies retention periodically, and marks a clean shutdown on Close.
type Manager struct {
	dir  string
	cfg  Config
	log  *slog.Logger // cfg.logger()
	st   storage      // osStorage{} except in tests
	lock *dirLock     // the log directory's LockFile, held until Close
	bufs writeBuffers // its logs' grown write buffers (writebuffer.go)

	mu     sync.RWMutex
	logs   map[partitionKey]*Log
	closed bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewManager loads every partition directory "<topic>-<partition>" under dir
// (creating dir if needed). If the clean-shutdown marker is absent the last
// segment of each partition is recovered first; the marker is then removed,
// so a crash from now on is noticed at the next start. Stray files and
// directories are logged and left alone. NewManager starts the flush-timer
// and retention goroutines; Close stops them.
func NewManager(dir string, cfg Config) (*Manager, error) {
	return openManager(dir, cfg, osStorage{})
}

// openManager is NewManager with the storage the partitions write through.
func openManager(dir string, cfg Config, st storage) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log: create log directory %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	m, err := loadManager(dir, cfg, st)
	if err != nil {
		lock.release()
		return nil, err
	}
	m.lock = lock
	return m, nil
}

// loadManager is openManager's work once the directory is locked.
func loadManager(dir string, cfg Config, st storage) (*Manager, error) {
	lg := cfg.logger()
	marker := filepath.Join(dir, CleanShutdownFile)
	records, clean, err := readMarker(marker)
	if err != nil {
		lg.Warn("unreadable clean-shutdown marker, recovering the last segment of every partition", "dir", dir, "err", err)
		records = nil
	}
	switch {
	case !clean:
		lg.Info("no clean-shutdown marker, recovering the last segment of every partition", "dir", dir)
	case records == nil:
		lg.Info("clean-shutdown marker without segment sizes, recovering the last segment of every partition", "dir", dir)
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("log: list log directory %s: %w", dir, err)
	}
	m := &Manager{dir: dir, cfg: cfg, log: lg, st: st, logs: make(map[partitionKey]*Log), stop: make(chan struct{})}
	m.bufs.max = int64(cfg.GrownWriteBuffers)
	for _, e := range entries {
		if e.Name() == CleanShutdownFile || e.Name() == LockFile || e.Name() == ReplicationCheckpointFile || e.Name() == ReplicationCheckpointFile+".tmp" ||
			e.Name() == GroupOffsetsFile || e.Name() == GroupOffsetsFile+".tmp" {
			continue
		}
		topic, partition, ok := parsePartitionDir(e.Name())
		if !ok || !e.IsDir() {
			lg.Warn("ignoring stray entry in log directory", "dir", dir, "name", e.Name())
			continue
		}
		// A partition the marker does not list (or every one, without a
		// list) is recovered; a listed one is checked against its record.
		rec, listed := records[e.Name()]
		var expect *segmentRecord
		if listed {
			expect = &rec
		}
		l, err := open(filepath.Join(dir, e.Name()), cfg, !listed, expect, st)
		if err != nil {
			m.closeLogs()
			return nil, fmt.Errorf("log: load partition %s of %s: %w", e.Name(), dir, err)
		}
		l.bufs = &m.bufs
		m.logs[partitionKey{topic, partition}] = l
	}
	if clean {
		if err := os.Remove(marker); err != nil {
			m.closeLogs()
			return nil, fmt.Errorf("log: remove clean-shutdown marker %s: %w", marker, err)
		}
		if err := syncDir(dir); err != nil {
			m.closeLogs()
			return nil, err
		}
	}
	lg.Info("loaded logs", "dir", dir, "partitions", len(m.logs), "cleanShutdown", clean, "recordedPartitions", len(records))

	if cfg.FlushIntervalMs > 0 {
		m.wg.Add(1)
		go m.flushTimer(time.Duration(cfg.FlushIntervalMs) * time.Millisecond)
	}
	if cfg.CleanupIntervalMins > 0 {
		m.wg.Add(1)
		go m.retentionTimer(time.Duration(cfg.CleanupIntervalMins) * time.Minute)
	}
	return m, nil
}

// Dir is the log directory.
func (m *Manager) Dir() string { return m.dir }

// Partitions is the number of partitions topic has on this broker:
// topic.partition.count.map's value for it, else num.partitions (at least 1).
func (m *Manager) Partitions(topic string) int {
	if n, ok := m.cfg.TopicPartitions[topic]; ok && n > 0 {
		return n
	}
	return max(m.cfg.NumPartitions, 1)
}

// Get returns the log of a partition if it exists.
func (m *Manager) Get(topic string, partition int) (*Log, bool) {
	m.mu.RLock()
	l, ok := m.logs[partitionKey{topic, partition}]
	m.mu.RUnlock()
	return l, ok
}

// GetOrCreate returns the log of a partition, creating its directory on
// first use (topics are created by their first produce). The topic name is
// validated before any path is built from it, and the partition must lie in
// [0, Partitions(topic)).
func (m *Manager) GetOrCreate(topic string, partition int) (*Log, error) {
	if l, ok := m.Get(topic, partition); ok {
		return l, nil
	}
	if err := ValidateTopic(topic); err != nil {
		return nil, err
	}
	if n := m.Partitions(topic); partition < 0 || partition >= n {
		return nil, fmt.Errorf("%w: partition %d of topic %q, which has partitions 0..%d", ErrInvalidPartition, partition, topic, n-1)
	}
	return m.create(topic, partition)
}

// create opens or creates the log of a partition whose name and number have
// been checked.
func (m *Manager) create(topic string, partition int) (*Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("%w: create %s-%d in %s", ErrClosed, topic, partition, m.dir)
	}
	key := partitionKey{topic, partition}
	if l, ok := m.logs[key]; ok {
		return l, nil
	}
	l, err := open(filepath.Join(m.dir, partitionDirName(topic, partition)), m.cfg, false, nil, m.st)
	if err != nil {
		return nil, err
	}
	l.bufs = &m.bufs
	m.logs[key] = l
	m.log.Info("created partition", "topic", topic, "partition", partition, "dir", l.Dir())
	return l, nil
}

// Topics lists the topics with at least one partition here, sorted.
func (m *Manager) Topics() []string {
	m.mu.RLock()
	seen := make(map[string]bool)
	for k := range m.logs {
		seen[k.topic] = true
	}
	m.mu.RUnlock()
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// snapshot returns the current logs without holding the lock afterwards.
func (m *Manager) snapshot() []*Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Collect(maps.Values(m.logs))
}

// flushTimer wakes the flusher of every partition with unflushed bytes once
// per interval (§3.1: flush after a certain amount of time has elapsed), so
// no flushed-but-invisible data waits longer than that.
func (m *Manager) flushTimer(every time.Duration) {
	defer m.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			for _, l := range m.snapshot() {
				if l.dirty() {
					l.signalFlush()
				}
			}
		case <-m.stop:
			return
		}
	}
}

// retentionTimer applies the retention rules to every partition once per
// interval (log.cleanup.interval.mins).
func (m *Manager) retentionTimer(every time.Duration) {
	defer m.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			m.DeleteOldSegments(now)
		case <-m.stop:
			return
		}
	}
}

// DeleteOldSegments applies retention to every partition now and returns how
// many segments were deleted in all. Errors are logged.
func (m *Manager) DeleteOldSegments(now time.Time) int {
	total := 0
	for _, l := range m.snapshot() {
		n, err := l.DeleteOldSegments(now)
		if err != nil && !errors.Is(err, ErrClosed) {
			m.log.Error("retention failed", "dir", l.Dir(), "err", err)
		}
		total += n
	}
	return total
}

func (m *Manager) closeLogs() error {
	var errs []error
	for _, l := range m.logs {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops the timers, flushes and closes every partition, and writes
// the clean-shutdown marker listing the last segment of each partition that
// closed without error (marker.go), so the next start scans only the others
// and any whose files no longer match. Closing twice is a no-op.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	close(m.stop)
	m.wg.Wait()

	var errs []error
	records := make(map[string]segmentRecord, len(m.logs))
	for _, l := range m.logs {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
			continue
		}
		segs := *l.segs.Load()
		last := segs[len(segs)-1]
		records[filepath.Base(l.dir)] = segmentRecord{last.start, last.size.Load()}
	}
	if err := writeMarker(filepath.Join(m.dir, CleanShutdownFile), records); err != nil {
		errs = append(errs, err)
	}
	if err := m.lock.release(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		m.log.Error("shutdown with errors; the partitions concerned are recovered at the next start",
			"dir", m.dir, "partitions", len(m.logs), "closedCleanly", len(records), "err", err)
		return fmt.Errorf("log: close %s: %w", m.dir, err)
	}
	m.log.Info("clean shutdown", "dir", m.dir, "partitions", len(m.logs))
	return nil
}
