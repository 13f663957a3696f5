package compression

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/schedstat"
)

// Batch is the number of messages per produce request, and so
// per compressed wrapper (0.7's batch.size).
const Batch = 200

// Seed is the corpus's fixed seed: every run sends the same lines.
const Seed = 20110612 // NetDB'11

// CodecResult is one codec's row of the experiment.
type CodecResult struct {
	Codec           string  `json:"codec"`
	Messages        int     `json:"messages"`
	DiskBytes       int64   `json:"disk_bytes"`
	BytesPerMessage float64 `json:"bytes_per_message"` // on disk, headers and wrappers included
	ProducerMsgPerS float64 `json:"producer_msg_per_s"`
	ConsumerMsgPerS float64 `json:"consumer_msg_per_s"`
	// CPU time per message, in microseconds, of the client (producer or
	// consumer process) and of the broker, during each phase.
	ProducerCPUus       float64 `json:"producer_cpu_us"`
	BrokerCPUProduceUs  float64 `json:"broker_cpu_produce_us"`
	ConsumerCPUus       float64 `json:"consumer_cpu_us"`
	BrokerCPUConsumeUs  float64 `json:"broker_cpu_consume_us"`
	CPUMeasured         bool    `json:"cpu_measured"` // false where schedstat is unavailable
	ProducerLoad        string  `json:"producer_load"`
	ConsumerLoad        string  `json:"consumer_load"`
	ProducerWallSeconds float64 `json:"producer_seconds"`
	ConsumerWallSeconds float64 `json:"consumer_seconds"`
}

// Result is the whole experiment.
type Result struct {
	Messages       int           `json:"messages"`
	Batch          int           `json:"batch"`
	Seed           uint64        `json:"seed"`
	AvgPayload     float64       `json:"avg_payload_bytes"`
	BrokerSettings string        `json:"broker_settings"`
	Codecs         []CodecResult `json:"codecs"`
	Error          string        `json:"error,omitempty"`
}

// Corpus returns n web access-log lines generated from seed: a few thousand
// client addresses, a few hundred paths and a dozen user agents, each drawn
// with a Zipf distribution as real traffic repeats its popular hosts, pages
// and browsers, timestamps a few milliseconds apart; about 200 bytes a line.
// The lines are views into one buffer.
func Corpus(seed uint64, n int) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	hosts := make([]string, 3000)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("%d.%d.%d.%d", 10+r.IntN(200), r.IntN(256), r.IntN(256), 1+r.IntN(254))
	}
	words := []string{"shoes", "laptop", "phone", "kafka", "coffee", "desk", "lamp", "book", "camera", "bike", "watch", "bag"}
	paths := make([]string, 400)
	for i := range paths {
		switch i % 7 {
		case 0:
			paths[i] = fmt.Sprintf("/products/%d", 1000+r.IntN(90000))
		case 1:
			paths[i] = "/search?q=" + words[r.IntN(len(words))] + "&page=" + strconv.Itoa(1+r.IntN(5))
		case 2:
			paths[i] = fmt.Sprintf("/api/v1/items/%d/reviews", r.IntN(50000))
		case 3:
			paths[i] = fmt.Sprintf("/static/js/app.%08x.js", r.Uint32())
		case 4:
			paths[i] = fmt.Sprintf("/images/catalog/%d_large.jpg", r.IntN(100000))
		case 5:
			paths[i] = "/cart"
		default:
			paths[i] = "/"
		}
	}
	agents := []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
		"Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36",
		"Googlebot/2.1 (+http://www.google.com/bot.html)",
		"curl/8.4.0",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:120.0) Gecko/20100101 Firefox/120.0",
		"python-requests/2.31.0",
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
	}
	referrers := []string{"-", "https://www.example.com/", "https://www.google.com/", "https://www.example.com/search", "-"}
	statuses := []int{200, 200, 200, 200, 200, 200, 200, 304, 304, 404, 301, 500}
	methods := []string{"GET", "GET", "GET", "GET", "POST"}
	zh := rand.NewZipf(r, 1.1, 4, uint64(len(hosts)-1))
	zp := rand.NewZipf(r, 1.2, 2, uint64(len(paths)-1))
	za := rand.NewZipf(r, 1.5, 1, uint64(len(agents)-1))
	t := time.Date(2011, 6, 12, 9, 0, 0, 0, time.UTC)
	buf := make([]byte, 0, n*210)
	ends := make([]int, n)
	for i := 0; i < n; i++ {
		t = t.Add(time.Duration(r.IntN(8)) * time.Millisecond)
		buf = fmt.Appendf(buf, "%s - - [%s] \"%s %s HTTP/1.1\" %d %d \"%s\" \"%s\"",
			hosts[zh.Uint64()], t.Format("02/Jan/2006:15:04:05 -0700"), methods[r.IntN(len(methods))],
			paths[zp.Uint64()], statuses[r.IntN(len(statuses))], 200+r.IntN(40000),
			referrers[r.IntN(len(referrers))], agents[za.Uint64()])
		ends[i] = len(buf)
	}
	out := make([][]byte, n)
	start := 0
	for i, e := range ends {
		out[i] = buf[start:e:e]
		start = e
	}
	return out
}

// Run runs the experiment against the broker at addr (its
// process id pid, for its CPU time; 0 if unknown), with n messages per codec.
func Run(ctx context.Context, addr string, pid int, n int, progress func(string)) (*Result, error) {
	corpus := Corpus(Seed, n)
	total := 0
	for _, m := range corpus {
		total += len(m)
	}
	res := &Result{Messages: n, Batch: Batch, Seed: Seed, AvgPayload: float64(total) / float64(n)}
	for _, codec := range []message.Codec{message.CodecNone, message.CodecGzip, message.CodecSnappy} {
		if progress != nil {
			progress(fmt.Sprintf("compression: %s, %d messages", codec, n))
		}
		r, err := runCodec(ctx, addr, pid, codec, corpus)
		if err != nil {
			return res, fmt.Errorf("experiments: compression %s: %w", codec, err)
		}
		res.Codecs = append(res.Codecs, r)
	}
	return res, nil
}

// cpu is a process's CPU time so far, by schedstat.
func cpu(pid string) (time.Duration, bool) {
	run, _, ok := schedstat.Read(pid)
	return run, ok
}

func runCodec(ctx context.Context, addr string, pid int, codec message.Codec, corpus [][]byte) (CodecResult, error) {
	n := len(corpus)
	topic := "compression-" + codec.String()
	r := CodecResult{Codec: codec.String(), Messages: n}
	bpid := strconv.Itoa(pid)
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + addr
	p, err := producer.NewSync(cfg)
	if err != nil {
		return r, err
	}
	defer p.Close()
	sc := consumer.NewSimpleConsumer(addr, 30*time.Second)
	defer sc.Close()

	// Produce: the client builds each batch's set (and wrapper) itself, so
	// it knows the exact bytes the broker must end up holding.
	c0, okC := cpu("self")
	b0, okB := cpu(bpid)
	start := time.Now()
	var set, inner []byte
	var sent int64
	for i := 0; i < n; i += Batch {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		batch := corpus[i:min(i+Batch, n)]
		inner = inner[:0]
		for _, m := range batch {
			inner = message.Append(inner, message.MagicV1, m)
		}
		if codec == message.CodecNone {
			set = inner
		} else if set, err = message.AppendCompressed(set[:0], codec, inner); err != nil {
			return r, err
		}
		if err := p.SendSet(topic, 0, set); err != nil {
			return r, err
		}
		sent += int64(len(set))
	}
	// The producer's time runs until the broker's flushed end shows the
	// last byte (what producer-perf does).
	for {
		end, err := sc.LatestOffset(topic, 0)
		if err == nil && end >= sent {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return r, fmt.Errorf("the broker's end of %s stayed below %d bytes", topic, sent)
		}
		time.Sleep(time.Millisecond)
	}
	wall := time.Since(start)
	c1, _ := cpu("self")
	b1, _ := cpu(bpid)
	r.ProducerLoad = machine.ReadLoad().String()
	r.ProducerWallSeconds = wall.Seconds()
	r.ProducerMsgPerS = float64(n) / wall.Seconds()
	r.DiskBytes = sent
	r.BytesPerMessage = float64(sent) / float64(n)
	r.CPUMeasured = okC && okB && pid > 0
	r.ProducerCPUus = float64((c1 - c0).Microseconds()) / float64(n)
	r.BrokerCPUProduceUs = float64((b1 - b0).Microseconds()) / float64(n)

	// Consume from the page cache, every CRC checked, every wrapper unpacked.
	c0, _ = cpu("self")
	b0, _ = cpu(bpid)
	start = time.Now()
	got := 0
	for off := int64(0); off < sent; {
		chunk, err := sc.Fetch(topic, 0, off, 300<<10)
		if err != nil {
			return r, err
		}
		d := message.NewDeepIterator(chunk, off)
		for d.Next() {
			got++
		}
		if d.Err() != nil {
			return r, d.Err()
		}
		if d.Consumed() == 0 {
			return r, fmt.Errorf("no whole message at offset %d of %s", off, topic)
		}
		off += int64(d.Consumed())
	}
	wall = time.Since(start)
	c1, _ = cpu("self")
	b1, _ = cpu(bpid)
	if got != n {
		return r, fmt.Errorf("read back %d messages of %d", got, n)
	}
	r.ConsumerLoad = machine.ReadLoad().String()
	r.ConsumerWallSeconds = wall.Seconds()
	r.ConsumerMsgPerS = float64(n) / wall.Seconds()
	r.ConsumerCPUus = float64((c1 - c0).Microseconds()) / float64(n)
	r.BrokerCPUConsumeUs = float64((b1 - b0).Microseconds()) / float64(n)
	return r, nil
}

// Section is REPORT.md's section on the experiment.
func Section(c *Result) string {
	var b strings.Builder
	b.WriteString("## Compression (Kafka 0.7's compressed sets, not in the paper: `fig_compression.png`)\n\n")
	if c.Error != "" {
		fmt.Fprintf(&b, "The experiment failed: %s\n\n", c.Error)
	}
	if len(c.Codecs) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "%s web access-log lines (generated with seed %d: Zipf-distributed hosts, paths and agents; %.1f bytes on average), "+
		"sent once per codec in batches of %d magic-1 messages, one compressed wrapper per batch, to a broker of its own (%s), "+
		"then read back from the page cache, every CRC checked and every wrapper unpacked. "+
		"Unlike §5's tests these messages are magic 1 (10 bytes of header), the format 0.7 compresses with.\n\n",
		figure.Commas(float64(c.Messages)), c.Seed, c.AvgPayload, c.Batch, c.BrokerSettings)
	b.WriteString(table(c))
	fmt.Fprintf(&b, "\nMachine during the producer tests: %s; during the consumer tests: %s. CPU is schedstat run time summed over each process's threads (client: the reproduce process).\n\n",
		c.Codecs[0].ProducerLoad, c.Codecs[0].ConsumerLoad)
	return b.String()
}

// table is the REPORT.md table of the experiment.
func table(c *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| codec | bytes on disk per message | producer msg/s | consumer msg/s | producer CPU µs/msg | broker CPU µs/msg (produce) | consumer CPU µs/msg | broker CPU µs/msg (consume) |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|\n")
	for _, r := range c.Codecs {
		cpuCell := func(v float64) string {
			if !r.CPUMeasured {
				return "n/a"
			}
			return strconv.FormatFloat(v, 'f', 2, 64)
		}
		fmt.Fprintf(&b, "| %s | %.1f | %s | %s | %s | %s | %s | %s |\n", r.Codec, r.BytesPerMessage,
			figure.Commas(r.ProducerMsgPerS), figure.Commas(r.ConsumerMsgPerS), cpuCell(r.ProducerCPUus), cpuCell(r.BrokerCPUProduceUs),
			cpuCell(r.ConsumerCPUus), cpuCell(r.BrokerCPUConsumeUs))
	}
	return b.String()
}
