package replication

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// epochCache is a replica's leader-epoch history, kept in the partition directory's
// leader-epoch-checkpoint file (docs/PROTOCOL.md §10):
//
//	0              the format's version
//	2              the number of entries
//	0 0            epoch 0 started at offset 0
//	1 627          epoch 1 started at offset 627
//
// Entries are sorted by epoch and by start offset. The file is rewritten whole (a temporary file, fsync,
// rename) at every change, which happens once per leader change, not per message. Its presence is also what
// marks a partition directory as a replicated partition's.
type epochCache struct {
	path    string
	entries []protocol.EpochEntry
}

// loadEpochs reads dir's checkpoint; with create it writes an empty one when there is none.
func loadEpochs(dir string, create bool) (*epochCache, error) {
	c := &epochCache{path: filepath.Join(dir, log.LeaderEpochFile)}
	f, err := os.Open(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, err
		}
		return c, c.write()
	}
	if err != nil {
		return nil, fmt.Errorf("replication: read %s: %w", c.path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines []string
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	bad := func(why string) error { return fmt.Errorf("%w: %s: %s", ErrBadState, c.path, why) }
	if len(lines) < 2 || lines[0] != "0" {
		return nil, bad("no version 0 header")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, bad("entry count does not match")
	}
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, bad("line " + strconv.Quote(l))
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		s, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || s < 0 {
			return nil, bad("line " + strconv.Quote(l))
		}
		if k := len(c.entries); k > 0 && (int32(e) <= c.entries[k-1].Epoch || s < c.entries[k-1].Start) {
			return nil, bad("entries out of order at " + strconv.Quote(l))
		}
		c.entries = append(c.entries, protocol.EpochEntry{Epoch: int32(e), Start: s})
	}
	return c, nil
}

func (c *epochCache) write() error {
	var b strings.Builder
	fmt.Fprintf(&b, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.Start)
	}
	return writeFileAtomic(c.path, []byte(b.String()))
}

// writeFileAtomic replaces path with data so that a crash leaves the old file or the new one, never a mix.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("replication: write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("replication: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("replication: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("replication: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replication: rename %s: %w", tmp, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("replication: sync directory of %s: %w", path, err)
	}
	defer d.Close()
	return d.Sync()
}

// latest is the newest epoch, -1 when there is none.
func (c *epochCache) latest() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// assign records that epoch starts at offset, if epoch is newer than the newest entry.
func (c *epochCache) assign(epoch int32, start int64) error {
	if epoch <= c.latest() {
		return nil
	}
	c.entries = append(c.entries, protocol.EpochEntry{Epoch: epoch, Start: start})
	return c.write()
}

// endOffset answers EPOCH_END_OFFSET for this replica's history: the largest epoch not above epoch, and
// where it ends (the next epoch's start, or leo for the newest). (-1, -1) when every entry is newer.
func (c *epochCache) endOffset(epoch int32, leo int64) (int32, int64) {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > epoch })
	if i == 0 {
		return -1, -1
	}
	if i == len(c.entries) {
		return c.entries[i-1].Epoch, leo
	}
	return c.entries[i-1].Epoch, c.entries[i].Start
}

// truncateTo forgets the epochs that start at or after offset: the log lost their messages.
func (c *epochCache) truncateTo(offset int64) error {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].Start >= offset {
		n--
	}
	if n == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:n]
	return c.write()
}

// covering appends to dst the entries a follower fetching [from, to) needs: the one from belongs to and those
// starting inside the range.
func (c *epochCache) covering(dst []protocol.EpochEntry, from, to int64) []protocol.EpochEntry {
	for i, e := range c.entries {
		next := int64(1<<63 - 1)
		if i+1 < len(c.entries) {
			next = c.entries[i+1].Start
		}
		if next > from && e.Start < to || e.Start == from {
			dst = append(dst, e)
		}
	}
	return dst
}

// hwCheckpoint is log.dir's replication-offset-checkpoint: every replicated partition's high watermark,
// written every replica.high.watermark.checkpoint.interval.ms (0.8's format: a version line, a count line,
// then "topic partition offset" lines). It is only a starting value after a restart: truncation goes by
// leader epochs.
func readHWCheckpoint(dir string) (map[TopicPartition]int64, error) {
	path := filepath.Join(dir, log.ReplicationCheckpointFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replication: read %s: %w", path, err)
	}
	out := map[TopicPartition]int64{}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("%w: %s: no version 0 header", ErrBadState, path)
	}
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: %s: line %q", ErrBadState, path, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: %s: line %q", ErrBadState, path, l)
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	return out, nil
}

func writeHWCheckpoint(dir string, hws map[TopicPartition]int64) error {
	keys := make([]TopicPartition, 0, len(hws))
	for k := range hws {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Topic != keys[j].Topic {
			return keys[i].Topic < keys[j].Topic
		}
		return keys[i].Partition < keys[j].Partition
	})
	var b strings.Builder
	fmt.Fprintf(&b, "0\n%d\n", len(keys))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d %d\n", k.Topic, k.Partition, hws[k])
	}
	return writeFileAtomic(filepath.Join(dir, log.ReplicationCheckpointFile), []byte(b.String()))
}
