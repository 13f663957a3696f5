// Package ceiling measures the fastest this machine moves the paper's
// workload doing only the work no implementation can avoid, so that our
// producer and consumer can be reported as a fraction of it (and a ratio
// against another system read knowing what bounds it). Every probe moves
// 200-byte messages in the magic-0 format (docs/PROTOCOL.md §2) over
// loopback TCP from a sender in a process of its own (this binary,
// re-executed, as the broker is a process of its own) to a reader in this
// one, with one CRC per message on each side that must compute or check
// one:
//
//	consumer         a sender sendfile(2)s a file of message sets; the reader
//	                 checks every message's CRC (the consumer's ceiling:
//	                 figure 5 with no request, no broker, no iterator)
//	producer-batch50 a sender builds sets of 50 messages with their CRCs and
//	                 writes each with one write(2); the reader checks the
//	                 CRCs and writes the bytes to a file, fsyncing it in a
//	                 loop beside (the producer's ceiling, figure 4, batch 50)
//	producer-batch1  the same with one write(2) per one-message request
//	                 (the batch-1 ceiling: the cost of a system call)
//
// The producer probes' sender leaves Nagle's algorithm on, as our producer
// does on a connection whose requests get no answer (dialSender), and sends
// from one thread, as our producer tools do (senderMain).
//
// A producer probe's clock stops when the reader has written every byte
// and a last fsync has returned, as our producer-perf's stops when the
// broker holds every message. The reader reads up to ReadSize bytes at a
// time and carries a partial message over to the next read; a producer
// probe's reader asks the kernel to wake it only once WriteSize bytes are
// queued (SO_RCVLOWAT), so it is not woken, nor its sender made to wake
// it, for every write: a broker must answer a FETCH at once and cannot do
// without those wake-ups, so the gap to the probe includes their cost.
//
// The page cache is part of the result: the file the consumer probe sends
// is read from it, and the producer probes write into it. Result records
// the machine's page cache (Cached in /proc/meminfo) before and after, and
// the caller says whether it was dropped before the run.
package ceiling

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/experiments/machine"
)

// Probe names, in the order Run measures them.
const (
	Consumer = "consumer"
	Batch50  = "producer-batch50"
	Batch1   = "producer-batch1"
)

// Probes lists every probe.
var Probes = []string{Consumer, Batch50, Batch1}

// ErrChecksum is returned when the reader finds a message whose CRC does
// not match its payload (it never does unless the probe is broken).
var ErrChecksum = errors.New("ceiling: message CRC mismatch")

// ErrFraming is returned when the reader finds a length or magic byte that
// is not a magic-0 message of the probe's size.
var ErrFraming = errors.New("ceiling: bad message framing")

// Config sets a probe up.
type Config struct {
	Messages    int64  // messages to move (the run's message count)
	MessageSize int    // payload bytes (the paper's 200)
	Dir         string // where the probes' files go (removed afterwards)
	// FileMessages bounds the consumer probe's file: it holds at most this
	// many messages and is sent again from the start until Messages have
	// gone (default 1,000,000, 209 MB).
	FileMessages int64
	// ReadSize is the reader's read(2) size (default 1 MiB).
	ReadSize int
}

func (c Config) withDefaults() Config {
	if c.MessageSize <= 0 {
		c.MessageSize = 200
	}
	if c.FileMessages <= 0 {
		c.FileMessages = 1_000_000
	}
	if c.ReadSize <= 0 {
		c.ReadSize = 1 << 20
	}
	return c
}

// Result is one probe's measurement.
type Result struct {
	Probe    string  `json:"probe"`
	Messages int64   `json:"messages"`
	Seconds  float64 `json:"seconds"`
	MsgPerS  float64 `json:"msg_per_s"`
	MBPerS   float64 `json:"mb_per_s"` // payload MB (10^6 bytes) per second
	// Tenths is the rate of each tenth of the messages at the reader (msg/s).
	Tenths []float64 `json:"tenths"`
	// CachedMBBefore and CachedMBAfter are the machine's page cache
	// (Cached in /proc/meminfo) before and after the probe.
	CachedMBBefore int64 `json:"cached_mb_before"`
	CachedMBAfter  int64 `json:"cached_mb_after"`
	// Fsyncs counts the producer probes' fsyncs of the file.
	Fsyncs int64 `json:"fsyncs,omitempty"`
	// Reads counts the reader's reads of the socket (each a read(2) that
	// returned data, or the one that found it closed): how often the
	// reader was woken.
	Reads int64 `json:"reads,omitempty"`
}

// LastOverFirst is the last tenth's rate over the first's.
func (r Result) LastOverFirst() float64 {
	if len(r.Tenths) != 10 || r.Tenths[0] == 0 {
		return 0
	}
	return r.Tenths[9] / r.Tenths[0]
}

// Run measures one probe.
func Run(ctx context.Context, probe string, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	if cfg.Messages <= 0 || cfg.Dir == "" {
		return Result{}, fmt.Errorf("ceiling: %s needs Messages > 0 and a Dir (got %d, %q)", probe, cfg.Messages, cfg.Dir)
	}
	before := machine.ReadLoad().PageCacheMB
	var r Result
	var err error
	switch probe {
	case Consumer:
		r, err = runConsumer(ctx, cfg)
	case Batch50:
		r, err = runProducer(ctx, cfg, 50)
	case Batch1:
		r, err = runProducer(ctx, cfg, 1)
	default:
		return Result{}, fmt.Errorf("ceiling: unknown probe %q (known: %s)", probe, strings.Join(Probes, ", "))
	}
	if err != nil {
		return Result{}, fmt.Errorf("ceiling: %s probe: %w", probe, err)
	}
	r.Probe, r.CachedMBBefore, r.CachedMBAfter = probe, before, machine.ReadLoad().PageCacheMB
	return r, nil
}

// headerSize is a magic-0 message's header: 4-byte length, magic, CRC.
const headerSize = 9

// AppendMessage appends one magic-0 message holding payload.
func AppendMessage(dst, payload []byte) []byte {
	n := uint32(1 + 4 + len(payload))
	crc := crc32.ChecksumIEEE(payload)
	dst = append(dst, byte(n>>24), byte(n>>16), byte(n>>8), byte(n), 0,
		byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc))
	return append(dst, payload...)
}

// clock marks when each tenth of n messages has been checked.
type clock struct {
	n     int64
	start time.Time
	marks [10]time.Time
	next  int
	reads int64 // the reader's Read calls
}

func newClock(n int64) *clock { return &clock{n: n, start: time.Now()} }

func (c *clock) observe(done int64) {
	for c.next < 10 && done >= max(1, int64(c.next+1)*c.n/10) {
		c.marks[c.next] = time.Now()
		c.next++
	}
}

// result turns the marks into rates; end is when the run ended (the last
// mark, or the final fsync's return for a producer probe).
func (c *clock) result(end time.Time) Result {
	r := Result{Messages: c.n, Seconds: end.Sub(c.start).Seconds(), Reads: c.reads}
	if c.next == 10 {
		c.marks[9] = end
		prev := c.start
		for i, m := range c.marks {
			count := int64(i+1)*c.n/10 - int64(i)*c.n/10
			r.Tenths = append(r.Tenths, float64(count)/max(m.Sub(prev).Seconds(), 1e-9))
			prev = m
		}
	}
	r.MsgPerS = float64(c.n) / max(r.Seconds, 1e-9)
	return r
}

// Describe is one line of a result: rate, time, tenths, page cache.
func Describe(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%10.0f msg/s %7.2f s, tenths (M msg/s)", r.MsgPerS, r.Seconds)
	for _, t := range r.Tenths {
		fmt.Fprintf(&b, " %.2f", t/1e6)
	}
	fmt.Fprintf(&b, ", last/first %.2f, page cache %d → %d MB", r.LastOverFirst(), r.CachedMBBefore, r.CachedMBAfter)
	if r.Fsyncs > 0 {
		fmt.Fprintf(&b, ", %d fsyncs", r.Fsyncs)
	}
	if r.Reads > 0 {
		fmt.Fprintf(&b, ", %d reads (%.1f messages per read)", r.Reads, float64(r.Messages)/float64(r.Reads))
	}
	return b.String()
}
