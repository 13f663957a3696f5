package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/tuning"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
)

func init() {
	register(&command{
		Name:    "consumer-perf",
		Args:    "--broker-list HOST:PORT --topic TOPIC [--partition P] --messages N [--fetch-size B] [flags]",
		Summary: "measure consumer throughput (paper §5, figure 5), checking every CRC",
		Run:     consumerPerf,
	})
}

func consumerPerf(args []string, std stdio) error {
	fs := newFlags(commands["consumer-perf"], std.Err)
	broker := brokerFlag(fs)
	topic := fs.String("topic", "", "topic")
	partition := fs.Int("partition", 0, "partition")
	n := fs.Int64("messages", 1000000, "number of messages to read")
	fetchSize := fs.Int("fetch-size", consumer.DefaultFetchSize, "bytes per fetch (the paper: about 200 KB)")
	procs := fs.Int("procs", tuning.ReaderProcs, "GOMAXPROCS of this tool (its reading is one goroutine; 0: Go's default, one per core)")
	inFlight := fs.Int("fetches-in-flight", tuning.RangesInFlight, "fetches of consecutive byte ranges kept in flight (1: one at a time, the next sent ahead from the last whole message)")
	offset := fs.Int64("offset", -2, "start offset (-2 earliest, -1 latest)")
	every := fs.Int64("reporting-interval", 0, "print a progress line every N messages (0: every 2 seconds)")
	idle := fs.Duration("idle-timeout", 10*time.Second, "give up when no message arrives for this long")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of this client to the file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "broker-list", "topic"); err != nil {
		return err
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	if *n < 1 || *fetchSize < 1 {
		return usagef("need --messages >= 1 and --fetch-size >= 1")
	}
	c := consumer.NewSimpleConsumer(firstBroker(*broker), 30*time.Second)
	defer c.Close()
	start := *offset
	if start < 0 {
		offs, err := c.GetOffsetsBefore(*topic, int32(*partition), start, 1)
		if err != nil {
			return err
		}
		if len(offs) == 0 {
			return fmt.Errorf("no offset for %s-%d at time %d", *topic, *partition, start)
		}
		start = offs[0]
	}
	stop, err := startCPUProfile(*cpuprofile)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(std.Out, "consuming %d messages from %s-%d at %s from offset %d, %d bytes per fetch\n",
		*n, *topic, *partition, *broker, start, *fetchSize)
	it := consumer.NewPartitionIterator(c, *topic, int32(*partition), start, int32(*fetchSize))
	it.InFlight = *inFlight
	var got, payloadBytes int64
	size := 0
	rep := newReporter(std, *every, 0)
	allocs := startAllocCounter()
	t0 := time.Now()
	tt := newTenths(*n, t0)
	if *cpuprofile != "" {
		tt.labelTenths() // per-tenth samples: go tool pprof -tagfocus tenth=N
	}
	lastData := t0
	total := *n
	for got < total {
		// Read up to the next mark of the tenths, the progress line or the
		// clock, in a loop of its own (pollRun) that keeps only its count
		// and sum live across each Poll.
		k, b := pollRun(it, max(1, min(total-got, 1024-got%1024, tt.nextAt-got, rep.due-got)))
		if k == 0 {
			if err := it.Err(); err != nil {
				return err
			}
			if time.Since(lastData) > *idle {
				return fmt.Errorf("only %d of %d messages after waiting %v for more (end offset %d)", got, total, *idle, it.NextOffset())
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		got += k
		payloadBytes += b
		tt.observe(got)
		if got%1024 == 0 {
			lastData = time.Now()
			if size == 0 {
				size = int(payloadBytes / got)
				rep.size = size
			}
		}
		rep.progress(got, "read")
	}
	elapsed := time.Since(t0)
	readAllocs := allocs.since()
	size = int(payloadBytes / got)
	printRate(std, "consumer", got, size, elapsed)
	fmt.Fprintf(std.Out, "  (%d fetches, next offset %d, every CRC checked)\n", it.Fetches(), it.NextOffset())
	tt.print(std.Out, "rate per tenth (each tenth ends when the Nth/10 message was received and its CRC checked)", size)
	secs := elapsed.Seconds()
	fmt.Fprintln(std.Out, resultLine(
		"tool", "consumer-perf", "topic", *topic, "fetch_size", *fetchSize, "message_size", size,
		"messages", got, "seconds", round3(secs), "msg_per_s", whole(float64(got)/secs),
		"mb_per_s", round3(float64(payloadBytes)/secs/1e6),
		"first_tenth", whole(tt.rate(0)), "last_tenth", whole(tt.rate(9)), "last_over_first", sig4(tt.ratio()),
		"fetches", it.Fetches(), "allocs_per_msg", round3(float64(readAllocs)/float64(got))))
	return nil
}

// pollRun reads at most limit messages with Poll, which checks every CRC
// (§3.3) and fetches when needed, and returns how many it read and their
// payload bytes: fewer than limit when Poll has nothing more for now, or
// failed (see it.Err). An unkeyed message's payload is taken from the
// message itself, whose accessors the compiler inlines here, rather than
// through it.Payload, a call per message that also looks for a key: of a
// keyed message (one written through the Kafka protocol) only the value
// counts, as it.Payload gives it.
func pollRun(it *consumer.PartitionIterator, limit int64) (n, payloadBytes int64) {
	for n < limit && it.Poll() {
		n++
		if m := it.Message(); !m.Keyed() {
			payloadBytes += int64(len(m.Payload()))
		} else {
			payloadBytes += int64(len(it.Payload()))
		}
	}
	return n, payloadBytes
}
