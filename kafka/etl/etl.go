// Package etl loads a topic into files the way the paper's §4 loads Kafka
// into Hadoop: "Both data and offsets are stored in HDFS only on the
// successful completion of the job", so that a job that fails and is run
// again neither loses nor duplicates a message. The output directory stands in for HDFS.
//
// A run reads every partition of one topic from the offset the previous
// successful run stopped at (the earliest offset the first time) up to a
// snapshot of the latest offsets taken when it starts, so its end is fixed
// however fast the topic grows. It writes everything into a fresh temporary
// directory, fsyncs each file and the directory, then renames the directory
// into place: that rename is the commit, and it makes the run's data and its
// offsets visible together. A run that is killed leaves only its temporary
// directory, which the next run deletes; that run starts again from the last
// committed offsets, so the output holds every message exactly once.
//
// The output directory:
//
//	DIR/
//	  .lock                      held (flock) by the running job: one job per directory
//	  run-000001/                the first successful run
//	    OFFSETS                  what the run holds, one line per partition (below)
//	    <topic>.<broker>-<part>  the partition's bytes from start to end, exactly as the broker stores them:
//	                             a message set (docs/PROTOCOL.md §2), whole messages only, compressed wrappers
//	                             left as they are; `kafka dump-log-segments` reads it
//	  run-000002/                the next run: it starts where run-000001 ended
//	  .tmp-run-000003-<random>/  a run in progress, or killed; deleted by the next run
//
// OFFSETS is text, a header line and then one line per partition, fields
// separated by single spaces:
//
//	# kafka load v1 topic broker-partition start end messages bytes file
//	clicks 0-0 0 104857 500 104857 clicks.0-0
//	clicks 1-0 2090 4180 10 2090 clicks.1-0
//
// start and end are byte offsets in the partition's log (paper §3.1); the next
// run starts at end. messages counts stored messages (a compressed wrapper is
// one); bytes = end − start is the file's size. A partition with nothing new
// has a line with start = end and an empty file, so OFFSETS always names every
// partition the run saw.
package etl

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// Errors of the loader, wrapped with the path or partition involved.
var (
	// ErrOutput: the output directory cannot be used (not writable, not a directory, locked by another job).
	ErrOutput = errors.New("etl: output directory unusable")
	// ErrBadOffsets: a committed run's OFFSETS file does not parse.
	ErrBadOffsets = errors.New("etl: bad OFFSETS file")
)

// Partition is one partition to load: the broker that holds it and its
// number there.
type Partition struct {
	BrokerID int
	Addr     string // host:port of the broker
	Part     int32
}

// Name is the partition's registry name "<brokerid>-<partition>" (docs/PROTOCOL.md §5).
func (p Partition) Name() string { return strconv.Itoa(p.BrokerID) + "-" + strconv.Itoa(int(p.Part)) }

// Job is one load of a topic into Output.
type Job struct {
	Topic      string
	Partitions []Partition
	Output     string
	FetchSize  int32         // bytes per fetch (default 1 MiB)
	Timeout    time.Duration // per request (default 30 s)
	Logger     *slog.Logger
}

// Result is what a run committed.
type Result struct {
	Run   string  // the committed run directory ("" when there was nothing new)
	Lines []Range // one per partition
}

// Range is one OFFSETS line.
type Range struct {
	Topic     string
	Partition string // "<broker>-<part>"
	Start     int64
	End       int64
	Messages  int64
	File      string
}

const offsetsHeader = "# kafka load v1 topic broker-partition start end messages bytes file"

// Run performs one run of the job; see the package doc.
func (j Job) Run() (Result, error) {
	log := j.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "etl", "topic", j.Topic)
	if err := topic.Validate(j.Topic); err != nil {
		return Result{}, fmt.Errorf("etl: %w", err)
	}
	if len(j.Partitions) == 0 {
		return Result{}, fmt.Errorf("etl: topic %q: no partition to load", j.Topic)
	}
	if j.FetchSize <= 0 {
		j.FetchSize = 1 << 20
	}
	if j.Timeout <= 0 {
		j.Timeout = 30 * time.Second
	}
	unlock, err := lockOutput(j.Output)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	if err := removeTemporaries(j.Output, log); err != nil {
		return Result{}, err
	}
	lastRun, committed, err := lastCommitted(j.Output)
	if err != nil {
		return Result{}, err
	}

	// The snapshot: where each partition starts and ends in this run.
	clients := map[string]*consumer.SimpleConsumer{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	client := func(addr string) *consumer.SimpleConsumer {
		if clients[addr] == nil {
			clients[addr] = consumer.NewSimpleConsumer(addr, j.Timeout)
		}
		return clients[addr]
	}
	parts := append([]Partition(nil), j.Partitions...)
	sort.Slice(parts, func(a, b int) bool {
		if parts[a].BrokerID != parts[b].BrokerID {
			return parts[a].BrokerID < parts[b].BrokerID
		}
		return parts[a].Part < parts[b].Part
	})
	ranges := make([]Range, len(parts))
	news := false
	for i, p := range parts {
		c := client(p.Addr)
		earliest, err := c.EarliestOffset(j.Topic, p.Part)
		if err != nil {
			return Result{}, fmt.Errorf("etl: %s-%s: earliest offset: %w", j.Topic, p.Name(), err)
		}
		latest, err := c.LatestOffset(j.Topic, p.Part)
		if err != nil {
			return Result{}, fmt.Errorf("etl: %s-%s: latest offset: %w", j.Topic, p.Name(), err)
		}
		start, ok := committed[p.Name()]
		switch {
		case !ok:
			start = earliest
		case start < earliest:
			log.Warn("etl: retention deleted messages before they were loaded", "partition", p.Name(),
				"committed", start, "earliest", earliest, "lost_bytes", earliest-start)
			start = earliest
		case start > latest:
			return Result{}, fmt.Errorf("etl: %s-%s: committed offset %d is past the log's end %d (a different cluster?)",
				j.Topic, p.Name(), start, latest)
		}
		ranges[i] = Range{Topic: j.Topic, Partition: p.Name(), Start: start, End: latest, File: j.Topic + "." + p.Name()}
		news = news || latest > start
	}
	if !news {
		log.Info("etl: nothing new since the last run", "last_run", lastRun)
		return Result{Lines: ranges}, nil
	}

	runName := fmt.Sprintf("run-%06d", runNumber(lastRun)+1)
	tmp := filepath.Join(j.Output, fmt.Sprintf(".tmp-%s-%08x", runName, rand.Uint32()))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	for i, p := range parts {
		n, err := j.copyPartition(client(p.Addr), p, ranges[i], filepath.Join(tmp, ranges[i].File))
		if err != nil {
			return Result{}, err
		}
		ranges[i].Messages = n
		log.Info("etl: partition loaded", "partition", p.Name(), "start", ranges[i].Start, "end", ranges[i].End, "messages", n)
	}
	if err := writeSynced(filepath.Join(tmp, "OFFSETS"), formatOffsets(ranges)); err != nil {
		return Result{}, err
	}
	if err := syncDir(tmp); err != nil {
		return Result{}, err
	}
	// The commit point: data and offsets appear together, or not at all.
	final := filepath.Join(j.Output, runName)
	if err := os.Rename(tmp, final); err != nil {
		return Result{}, fmt.Errorf("%w: commit %s: %v", ErrOutput, final, err)
	}
	if err := syncDir(j.Output); err != nil {
		return Result{}, err
	}
	log.Info("etl: run committed", "run", final)
	return Result{Run: final, Lines: ranges}, nil
}

// copyPartition writes the partition's bytes from r.Start to r.End into
// path, fsynced, and returns the number of messages.
func (j Job) copyPartition(c *consumer.SimpleConsumer, p Partition, r Range, path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	for off := r.Start; off < r.End; {
		set, err := c.Fetch(j.Topic, p.Part, off, j.FetchSize)
		if err != nil {
			return n, fmt.Errorf("etl: %s-%s: %w", j.Topic, p.Name(), err)
		}
		it := message.NewIterator(set, off)
		for off < r.End && it.Next() {
			if !it.Message().Valid() {
				return n, fmt.Errorf("etl: %s-%s: message at offset %d: %w", j.Topic, p.Name(), it.Offset(), message.ErrChecksum)
			}
			if _, err := w.Write(it.Message()); err != nil {
				return n, fmt.Errorf("%w: %v", ErrOutput, err)
			}
			off = it.NextOffset()
			n++
		}
		if err := it.Err(); err != nil {
			return n, fmt.Errorf("etl: %s-%s: %w", j.Topic, p.Name(), err)
		}
		if len(set) == 0 || it.Consumed() == 0 && off < r.End {
			return n, fmt.Errorf("etl: %s-%s: no whole message at offset %d below the snapshot's end %d", j.Topic, p.Name(), off, r.End)
		}
	}
	if err := w.Flush(); err != nil {
		return n, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	if err := f.Sync(); err != nil {
		return n, fmt.Errorf("%w: fsync %s: %v", ErrOutput, path, err)
	}
	return n, f.Close()
}

// lockOutput creates dir if needed, checks it is a writable directory and
// takes its lock.
func lockOutput(dir string) (func(), error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: no output directory given", ErrOutput)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not writable: %v", ErrOutput, dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s is locked by another load job: %v", ErrOutput, dir, err)
	}
	return func() { f.Close() }, nil
}

// removeTemporaries deletes what killed runs left behind.
func removeTemporaries(dir string, log *slog.Logger) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOutput, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			log.Info("etl: removing an unfinished run", "dir", e.Name())
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("%w: %v", ErrOutput, err)
			}
		}
	}
	return nil
}

// lastCommitted finds the last committed run and the end offset of every
// partition it names.
func lastCommitted(dir string) (string, map[string]int64, error) {
	runs, err := Runs(dir)
	if err != nil || len(runs) == 0 {
		return "", map[string]int64{}, err
	}
	last := runs[len(runs)-1]
	lines, err := ReadOffsets(filepath.Join(dir, last))
	if err != nil {
		return "", nil, err
	}
	ends := map[string]int64{}
	for _, l := range lines {
		ends[l.Partition] = l.End
	}
	return last, ends, nil
}

// Runs lists the committed runs of an output directory, oldest first.
func Runs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	var runs []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "run-") && runNumber(e.Name()) > 0 {
			runs = append(runs, e.Name())
		}
	}
	sort.Slice(runs, func(a, b int) bool { return runNumber(runs[a]) < runNumber(runs[b]) })
	return runs, nil
}

func runNumber(name string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "run-"))
	if err != nil {
		return 0
	}
	return n
}

// ReadOffsets parses a run's OFFSETS file.
func ReadOffsets(runDir string) ([]Range, error) {
	path := filepath.Join(runDir, "OFFSETS")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadOffsets, err)
	}
	var out []Range
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if i == 0 {
			if line != offsetsHeader {
				return nil, fmt.Errorf("%w: %s: first line %q is not %q", ErrBadOffsets, path, line, offsetsHeader)
			}
			continue
		}
		f := strings.Split(line, " ")
		var r Range
		var nums [4]int64
		ok := len(f) == 7
		for k := 0; ok && k < 4; k++ {
			nums[k], err = strconv.ParseInt(f[2+k], 10, 64)
			ok = err == nil && nums[k] >= 0
		}
		if !ok || nums[0] > nums[1] || nums[3] != nums[1]-nums[0] {
			return nil, fmt.Errorf("%w: %s line %d: %q", ErrBadOffsets, path, i+1, line)
		}
		r.Topic, r.Partition, r.File = f[0], f[1], f[6]
		r.Start, r.End, r.Messages = nums[0], nums[1], nums[2]
		out = append(out, r)
	}
	return out, nil
}

func formatOffsets(rs []Range) []byte {
	var b strings.Builder
	b.WriteString(offsetsHeader + "\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "%s %s %d %d %d %d %s\n", r.Topic, r.Partition, r.Start, r.End, r.Messages, r.End-r.Start, r.File)
	}
	return []byte(b.String())
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOutput, err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("%w: %v", ErrOutput, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%w: fsync %s: %v", ErrOutput, path, err)
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOutput, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("%w: fsync %s: %v", ErrOutput, dir, err)
	}
	return nil
}
