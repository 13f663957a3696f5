package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/audit"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

func init() {
	register(&command{
		Name:    "console-producer",
		Args:    "--broker-list ID:HOST:PORT,... | --zookeeper HOST:PORT  --topic TOPIC [flags]",
		Summary: "send each line of standard input as one message",
		Run:     consoleProducer,
	})
}

func consoleProducer(args []string, std stdio) (err error) {
	fs := newFlags(commands["console-producer"], std.Err)
	brokers := fs.String("broker-list", "", "brokers as id:host:port,... (or host:port,...)")
	zk := fs.String("zookeeper", "", "ZooKeeper connect string (zk.connect), instead of --broker-list")
	topic := fs.String("topic", "", "topic to produce to")
	batch := fs.Int("batch-size", 200, "lines per PRODUCE request when input arrives faster than it is sent (with --sync=false: batch.size)")
	syncSend := fs.Bool("sync", true, "send each batch at once, one request at a time, so an error names its lines. 0.7's console producer was "+
		"asynchronous unless given --sync; --sync=false hands every line to the paper's asynchronous producer (producer.type=async: "+
		"a queue of --queue-size lines sent in batches of --batch-size or every --queue-time-ms, nothing acknowledged)")
	queueSize := fs.Int("queue-size", producer.DefaultConfig().QueueSize, "with --sync=false: lines queued at most (queue.size)")
	queueTime := fs.Int("queue-time-ms", int(producer.DefaultConfig().QueueTime.Milliseconds()), "with --sync=false: the longest a line waits to be sent (queue.time)")
	partition := fs.Int("partition", -1, "partition (-1: the broker picks)")
	compress := fs.Bool("compress", false, "send each batch gzip-compressed in one wrapper message (--compression-codec gzip)")
	codecName := fs.String("compression-codec", "none", "compress each batch into one wrapper: none, gzip or snappy (compression.codec)")
	auditOn := fs.Bool("audit", false, "wrap each line in an audit envelope and publish per-window counts (paper §4; see kafka/audit)")
	auditTopic := fs.String("audit-topic", "audit", "with --audit: the topic of the monitoring events")
	auditWindow := fs.Duration("audit-window", time.Minute, "with --audit: the counting window")
	magic := fs.Int("magic", 1, "message format: 1 as Kafka 0.7 writes (10 bytes of header), 0 the paper's (9 bytes)")
	maxLine := fs.Int("max-message-size", 1000000, "longest line accepted (max.message.size)")
	d := producer.DefaultConfig()
	acks := fs.Int("request-required-acks", int(d.RequiredAcks), "0: no answer; 1: the leader has it; -1: every in-sync replica has it (request.required.acks)")
	timeout := fs.Int("request-timeout-ms", int(d.RequestTimeout.Milliseconds()), "how long the leader may wait for its followers with acks -1 (request.timeout.ms)")
	retries := fs.Int("message-send-max-retries", d.MessageSendMaxRetries, "retries after \"not leader\" or a timeout (message.send.max.retries)")
	proto := fs.String("protocol", "0.7", "the wire protocol: 0.7 (the paper's, docs/PROTOCOL.md §4) or 0.8 (the Kafka protocol as 0.8's console producer spoke it, §12: Metadata, then Produce v0 to each partition's leader; with --broker-list, --sync)")
	backoff := fs.Int("retry-backoff-ms", int(d.RetryBackoff.Milliseconds()), "wait before a retry, then look the leader up again (retry.backoff.ms)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "topic"); err != nil {
		return err
	}
	if *brokers == "" && *zk == "" {
		return usagef("--broker-list or --zookeeper is required")
	}
	if *batch < 1 {
		return usagef("--batch-size must be at least 1, got %d", *batch)
	}
	if *acks != 0 && *acks != 1 && *acks != -1 {
		return usagef("--request-required-acks must be 0, 1 or -1, got %d", *acks)
	}
	if !*syncSend && *acks != 0 {
		return usagef("--sync=false is the asynchronous producer, which sends without acknowledgements: it takes --request-required-acks 0")
	}
	if *queueSize < 1 || *queueTime < 1 {
		return usagef("--queue-size and --queue-time-ms must be positive")
	}
	if *timeout < 1 || *retries < 0 || *backoff < 0 {
		return usagef("--request-timeout-ms must be positive, --message-send-max-retries and --retry-backoff-ms not negative")
	}
	cfg := producer.DefaultConfig()
	cfg.ZkConnect = *zk
	if *brokers != "" {
		// As 0.8's console producer: the list is where to ask for metadata, so a replicated topic's messages
		// go to its leaders (docs/PROTOCOL.md §10); a 0.7 topic goes to a broker of the list as before.
		cfg.MetadataBrokerList = brokerList(*brokers)
	}
	cfg.RequiredAcks = int16(*acks)
	cfg.RequestTimeout = time.Duration(*timeout) * time.Millisecond
	cfg.MessageSendMaxRetries = *retries
	cfg.RetryBackoff = time.Duration(*backoff) * time.Millisecond
	cfg.MaxMessageSize = *maxLine
	codec, err := parseCodec(*codecName)
	if err != nil {
		return err
	}
	if *compress {
		if codec == message.CodecSnappy {
			return usagef("--compress is gzip; it contradicts --compression-codec snappy")
		}
		codec = message.CodecGzip
	}
	cfg.Compression = codec
	if *magic != 0 && *magic != 1 {
		return usagef("--magic must be 0 or 1, got %d", *magic)
	}
	cfg.Magic = byte(*magic)
	switch {
	case *proto == "0.8" && (*brokers == "" || !*syncSend || *auditOn):
		return usagef("--protocol 0.8 takes --broker-list and sends each batch at once: not --zookeeper, --sync=false or --audit")
	case *proto == "0.8":
		var seeds []string
		for _, b := range strings.Split(*brokers, ",") {
			seeds = append(seeds, firstBroker(b))
		}
		p08 := &producer.Producer08{Seeds: seeds, Acks: int16(*acks), Timeout: cfg.RequestTimeout, Codec: codec,
			Retries: *retries, RetryBackoff: cfg.RetryBackoff}
		defer p08.Close()
		return sendLines(std, p08, *topic, int32(*partition), *batch, *maxLine)
	case *proto != "0.7":
		return usagef("--protocol %q is not 0.7 or 0.8", *proto)
	}
	p, err := producer.NewSync(cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.CheckPartition(*topic, int32(*partition), 10*time.Second); err != nil {
		return err
	}
	var sender audit.Sender = p
	if !*syncSend {
		cfg.BatchSize, cfg.QueueSize, cfg.QueueTime = *batch, *queueSize, time.Duration(*queueTime)*time.Millisecond
		ap, aerr := producer.NewAsync(cfg)
		if aerr != nil {
			return aerr
		}
		async := asyncSender{ap}
		defer async.close(std, &err)
		sender = async
	}
	if *auditOn {
		ap, err := audit.NewProducer(p, audit.Config{Topic: *auditTopic, Window: *auditWindow})
		if err != nil {
			return err
		}
		defer func() {
			if err := ap.Close(); err != nil {
				fmt.Fprintf(std.Err, "console-producer: last audit events: %v\n", err)
			}
		}()
		sender = ap
	}
	return sendLines(std, sender, *topic, int32(*partition), *batch, *maxLine)
}

// sendLines sends each line of standard input as one message through sender, in batches of up to batch
// lines, a batch going out as soon as no more input is waiting.
func sendLines(std stdio, sender audit.Sender, topic string, partition int32, batch, maxLine int) error {
	r := bufio.NewReaderSize(std.In, 64<<10)
	var arena []byte  // the batch's bytes
	var ends []int    // end of each line in arena
	var msgs [][]byte // views into arena
	lines, sent := 0, 0
	send := func() error {
		if len(ends) == 0 {
			return nil
		}
		msgs = msgs[:0]
		start := 0
		for _, e := range ends {
			msgs = append(msgs, arena[start:e])
			start = e
		}
		err := sender.Send(topic, partition, msgs...)
		if err != nil {
			return fmt.Errorf("lines %d..%d not sent: %w", sent+1, sent+len(ends), err)
		}
		sent += len(ends)
		arena, ends = arena[:0], ends[:0]
		return nil
	}
	// Ctrl-C simply ends the process: every line read so far has been sent.
	for {
		line, err := r.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) && len(line) <= maxLine {
			arena = append(arena, line...)
			line, err = r.ReadSlice('\n')
		}
		if len(line) > 0 || len(arena) > lastEnd(ends) {
			lines++
			arena = append(arena, bytes.TrimRight(line, "\r\n")...)
			if n := len(arena) - lastEnd(ends); n > maxLine {
				arena = arena[:lastEnd(ends)]
				if serr := send(); serr != nil {
					return fmt.Errorf("line %d: %d+ bytes exceed --max-message-size %d; %w", lines, n, maxLine, serr)
				}
				before := "no line before it was sent"
				if sent > 0 {
					before = fmt.Sprintf("lines 1..%d were sent, nothing after", sent)
				}
				return fmt.Errorf("line %d: %d+ bytes exceed --max-message-size %d; %s", lines, n, maxLine, before)
			}
			ends = append(ends, len(arena))
		}
		// Send a full batch, or whatever is there when no more input is
		// waiting (so typed lines go out at once).
		if len(ends) >= batch || r.Buffered() == 0 || err != nil {
			if serr := send(); serr != nil {
				return serr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading standard input: %w", err)
		}
	}
}

// asyncSender hands the lines of a batch to the asynchronous producer one by one, each a copy (the batch's
// memory is reused for the next lines, while the producer's queue keeps what it is given).
type asyncSender struct{ p *producer.AsyncProducer }

func (a asyncSender) Send(topic string, partition int32, msgs ...[]byte) error {
	for _, m := range msgs {
		if err := a.p.Send(topic, partition, bytes.Clone(m)); err != nil {
			return err
		}
	}
	return nil
}

// close sends what is still queued and makes *err say how many lines the producer could not send or queue.
func (a asyncSender) close(std stdio, err *error) {
	cerr := a.p.Close()
	if n, d := a.p.Failed(), a.p.Dropped(); n+d > 0 && *err == nil {
		*err = fmt.Errorf("the asynchronous producer sent %d lines; %d could not be written and %d did not fit its queue (see the log)", a.p.Sent(), n, d)
	} else if cerr != nil && *err == nil {
		*err = cerr
	}
}

func lastEnd(ends []int) int {
	if len(ends) == 0 {
		return 0
	}
	return ends[len(ends)-1]
}

// parseCodec reads a --compression-codec value: a name or 0.7's number.
func parseCodec(s string) (message.Codec, error) {
	for _, c := range []message.Codec{message.CodecNone, message.CodecGzip, message.CodecSnappy} {
		if s == c.String() || s == string('0'+byte(c)) {
			return c, nil
		}
	}
	return 0, usagef("--compression-codec %q is not none, gzip or snappy (or 0, 1, 2)", s)
}
