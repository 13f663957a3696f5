package main

import (
	"fmt"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/tuning"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/properties"
)

func init() {
	register(&command{
		Name:    "producer-perf",
		Args:    "--broker-list ID:HOST:PORT --topic TOPIC --messages N --message-size S --batch-size B [flags]",
		Summary: "measure producer throughput (paper §5, figure 4) until the broker has flushed every message",
		Run:     producerPerf,
	})
}

func producerPerf(args []string, std stdio) error {
	fs := newFlags(commands["producer-perf"], std.Err)
	brokers := fs.String("broker-list", "", "the broker as id:host:port (or host:port)")
	topic := fs.String("topic", "", "topic")
	partition := fs.Int("partition", 0, "partition to produce to (its end offset is watched)")
	n := fs.Int64("messages", 1000000, "number of messages")
	size := fs.Int("message-size", 200, "payload bytes per message")
	batch := fs.Int("batch-size", 50, "messages per PRODUCE request")
	every := fs.Int64("reporting-interval", 0, "print a progress line every N messages (0: every 2 seconds)")
	wait := fs.Duration("flush-timeout", 2*time.Minute, "how long to wait for the broker to flush the last message")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of this client to the file")
	magic := fs.Int("magic", 1, "message format: 1 as Kafka 0.7 writes (10 bytes of header), 0 the paper's (9 bytes)")
	lockThread := fs.Bool("lock-thread", true, "lock the sending goroutine to one OS thread while it sends, as the ceiling probe's sender is (internal/tuning.LockSender); false: as a program that sends from any goroutine")
	props := fs.String("producer-props", "", "producer properties over the defaults, key=value[,key=value...] (for instance socket.nagle.disable=true)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "broker-list", "topic"); err != nil {
		return err
	}
	if *n < 1 || *size < 0 || *batch < 1 || *partition < 0 || (*magic != 0 && *magic != 1) {
		return usagef("need --messages >= 1, --message-size >= 0, --batch-size >= 1, --partition >= 0, --magic 0 or 1")
	}
	cfg := producer.DefaultConfig()
	cfg.BrokerList = brokerList(*brokers)
	cfg.Magic = byte(*magic)
	pp, err := properties.ParseList(*props)
	if err != nil {
		return usagef("--producer-props: %v", err)
	}
	for k, v := range pp {
		if err := cfg.Set(k, v); err != nil {
			return err
		}
	}
	bl, err := producer.ParseBrokerList(cfg.BrokerList)
	if err != nil {
		return err
	}
	p, err := producer.NewSync(cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	// The end offset is read back over OFFSETS (-1: the flushed end).
	c := consumer.NewSimpleConsumer(bl[0].Addr(), 30*time.Second)
	defer c.Close()
	startOff, err := c.LatestOffset(*topic, int32(*partition))
	if err != nil {
		startOff = 0 // the topic does not exist yet: its first produce creates it
	}
	// §3.1: offsets are byte positions; 9 bytes of overhead per magic-0
	// message, 10 per magic-1 message.
	wantEnd := startOff + *n*int64(message.Size(cfg.Magic, *size))

	payload := make([]byte, *size)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	msgs := make([][]byte, *batch)
	for i := range msgs {
		msgs[i] = payload
	}
	stop, err := startCPUProfile(*cpuprofile)
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Out, "producing %d messages of %d bytes in batches of %d to %s-%d at %s (start offset %d)\n",
		*n, *size, *batch, *topic, *partition, bl[0].Addr(), startOff)
	rep := newReporter(std, *every, *size)
	allocs := startAllocCounter()
	start := time.Now()
	tt := newTenths(*n, start)
	if *cpuprofile != "" {
		tt.labelTenths() // per-tenth samples: go tool pprof -tagfocus tenth=N
	}
	// The send loop, on one thread with --lock-thread until it returns.
	err = func() error {
		if *lockThread {
			defer tuning.LockSender()()
		}
		for sent := int64(0); sent < *n; {
			k := min(int64(*batch), *n-sent)
			if err := p.Send(*topic, int32(*partition), msgs[:k]...); err != nil {
				return err
			}
			sent += k
			tt.observe(sent)
			rep.progress(sent, "sent")
		}
		return nil
	}()
	if err != nil {
		stop()
		return err
	}
	sentAt := time.Since(start)
	sendAllocs := allocs.since()
	// The paper's producer does not wait for acknowledgements; our clock
	// runs until the broker holds (has flushed) every message.
	end, err := waitForOffset(c, *topic, int32(*partition), wantEnd, *wait)
	heldAt := time.Now()
	total := heldAt.Sub(start)
	stop()
	if err != nil {
		return fmt.Errorf("after sending %d messages in %v: %w", *n, sentAt.Round(time.Millisecond), err)
	}
	if end != wantEnd {
		return fmt.Errorf("broker end offset is %d, want %d: someone else is producing to %s-%d", end, wantEnd, *topic, *partition)
	}
	printRate(std, "producer", *n, *size, total)
	fmt.Fprintf(std.Out, "  (last write returned after %v; %.0f msg/s until then; the broker held every message %v later)\n",
		sentAt.Round(time.Millisecond), float64(*n)/sentAt.Seconds(), (total - sentAt).Round(time.Millisecond))
	held := tt.withEnd(heldAt)
	held.print(std.Out, "rate per tenth until the broker holds every message (tenths 1-9 end when the Nth/10 write returned;\n"+
		" the last tenth ends when the broker's flushed end offset reached the expected end, so it includes the final flush wait)", *size)
	tt.print(std.Out, "rate per tenth of the sends only (each tenth ends when the Nth/10 write returned)", *size)
	secs := total.Seconds()
	fmt.Fprintln(std.Out, resultLine(
		"tool", "producer-perf", "topic", *topic, "batch", *batch, "message_size", *size,
		"messages", *n, "seconds", round3(secs), "msg_per_s", whole(float64(*n)/secs),
		"mb_per_s", round3(float64(*n)*float64(*size)/secs/1e6),
		"first_tenth", whole(held.rate(0)), "last_tenth", whole(held.rate(9)), "last_over_first", sig4(held.ratio()),
		"flush_wait_ms", round3(float64(total-sentAt)/1e6),
		"send_seconds", round3(sentAt.Seconds()), "send_msg_per_s", whole(float64(*n)/sentAt.Seconds()),
		"send_first_tenth", whole(tt.rate(0)), "send_last_tenth", whole(tt.rate(9)), "send_last_over_first", sig4(tt.ratio()),
		"allocs_per_msg", round3(float64(sendAllocs)/float64(*n)), "lock_thread", *lockThread))
	return nil
}

// waitForOffset polls OFFSETS latest until it reaches want.
func waitForOffset(c *consumer.SimpleConsumer, topic string, partition int32, want int64, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		end, err := c.LatestOffset(topic, partition)
		if err == nil && end >= want {
			return end, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return end, err
			}
			return end, fmt.Errorf("the broker's flushed end offset of %s-%d is %d after %v, want %d (%d bytes missing)",
				topic, partition, end, timeout, want, want-end)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
