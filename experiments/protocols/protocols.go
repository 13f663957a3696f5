package protocols

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
	"github.com/kafkarepro/kafkarepro/kafka/schedstat"
)

// Topics the experiment writes, one partition each (partition 0).
const (
	Topic07 = "protocols-07" // written by our 0.7 producer
	Topic08 = "protocols-08" // written by franz-go through the Kafka protocol
)

// Names of the paths the experiment measures.
const (
	Name07    = "our 0.7 producer and simple consumer, paper's protocol"
	NameFranz = "franz-go, Kafka protocol"
	NameRaw08 = "our minimal client, Kafka protocol"
)

// Batch is our 0.7 producer's messages per request.
const Batch = 50

// FetchBytes is every reader's max bytes per partition and request.
const FetchBytes = 1 << 20

// Phase is one producer or consumer run.
type Phase struct {
	Messages int     `json:"messages"`
	Seconds  float64 `json:"seconds"`
	MsgPerS  float64 `json:"msg_per_s"`
	// CPU time per message, in microseconds, of the client process and of
	// the broker process during the phase; CPUMeasured is false where
	// schedstat is unavailable.
	ClientCPUus float64 `json:"client_cpu_us"`
	BrokerCPUus float64 `json:"broker_cpu_us"`
	CPUMeasured bool    `json:"cpu_measured"`
}

// ClientCores is how many cores the client kept busy on average.
func (p Phase) ClientCores() float64 { return p.ClientCPUus * p.MsgPerS / 1e6 }

// BrokerCores is how many cores the broker kept busy on average.
func (p Phase) BrokerCores() float64 { return p.BrokerCPUus * p.MsgPerS / 1e6 }

// Path is one way of producing or consuming: a client, a protocol, a topic.
type Path struct {
	Name     string `json:"name"`     // e.g. "franz-go, Kafka protocol"
	Topic    string `json:"topic"`    // the topic read or written
	Producer *Phase `json:"producer"` // nil: this path only reads
	Consumer *Phase `json:"consumer"`
}

// Result is the whole experiment.
type Result struct {
	Messages       int    `json:"messages"`
	Size           int    `json:"size"`
	BrokerSettings string `json:"broker_settings"`
	Cores          int    `json:"cores"`
	Load           string `json:"load"` // the machine's, after the run
	Paths          []Path `json:"paths"`
	Error          string `json:"error,omitempty"`
}

// Measure runs f, which handles n messages, and returns its phase: wall
// time, rate, and the CPU time of this process and of the broker process
// brokerPid (0: unknown) per message.
func Measure(brokerPid, n int, f func() error) (Phase, error) {
	bpid := strconv.Itoa(brokerPid)
	c0, okC := cpu("self")
	b0, okB := cpu(bpid)
	start := time.Now()
	if err := f(); err != nil {
		return Phase{}, err
	}
	wall := time.Since(start)
	c1, _ := cpu("self")
	b1, _ := cpu(bpid)
	return Phase{
		Messages: n, Seconds: wall.Seconds(), MsgPerS: float64(n) / wall.Seconds(),
		ClientCPUus: float64((c1 - c0).Nanoseconds()) / 1e3 / float64(n),
		BrokerCPUus: float64((b1 - b0).Nanoseconds()) / 1e3 / float64(n),
		CPUMeasured: okC && okB && brokerPid > 0,
	}, nil
}

// cpu is process pid's CPU time so far ("self": this one's).
func cpu(pid string) (time.Duration, bool) {
	run, _, ok := schedstat.Read(pid)
	return run, ok
}

// Produce07 sends n messages of size bytes (§5's payload, compare.Payload) to Topic07 with our 0.7 producer
// in batches of Batch, and waits until a consumer can read them all (the
// paper's producer gets no answer; a consumer reads only flushed messages).
func Produce07(ctx context.Context, addr string, n, size int) error {
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + addr
	p, err := producer.NewSync(cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	value := compare.Payload(size)
	batch := make([][]byte, Batch)
	for i := range batch {
		batch[i] = value
	}
	for i := 0; i < n; i += Batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.Send(Topic07, 0, batch[:min(Batch, n-i)]...); err != nil {
			return fmt.Errorf("protocols: 0.7 produce to %s at %s: %w", Topic07, addr, err)
		}
	}
	if err := p.Flush(); err != nil {
		return err
	}
	return WaitLogicalEnd(ctx, addr, Topic07, n)
}

// Consume07 reads n messages of topic from the start with our simple
// consumer's partition iterator, FetchBytes per request, every CRC checked,
// the next fetch on its way while a full answer is checked (the iterator's
// default, consumer.PartitionIterator): one answer ahead, as Fetch08 keeps.
func Consume07(ctx context.Context, addr, topic string, n int) error {
	sc := consumer.NewSimpleConsumer(addr, 30*time.Second)
	defer sc.Close()
	it := consumer.NewPartitionIterator(sc, topic, 0, 0, FetchBytes)
	for got := 0; got < n; got++ {
		if got%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !it.Poll() {
			if err := it.Err(); err != nil {
				return fmt.Errorf("protocols: 0.7 fetch of %s at byte %d: %w", topic, it.NextOffset(), err)
			}
			return fmt.Errorf("protocols: %s: no whole message at byte %d after %d of %d", topic, it.NextOffset(), got, n)
		}
	}
	return nil
}

// Fetch08 reads n messages of topic from logical offset 0 through the Kafka
// protocol with our minimal client: Fetch v0, FetchBytes, every entry's CRC
// checked, nothing allocated per message. As our 0.7 consumer keeps the next
// byte range in flight while it checks this one, Fetch08 asks for the next
// logical offset (protocol08.NextOffset, from the entries' framing) before it
// checks the set it holds, so the broker builds the next answer meanwhile,
// with the socket receive buffer our 0.7 consumer asks for.
func Fetch08(ctx context.Context, addr, topic string, n int) error {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	// The socket receive buffer our 0.7 consumer asks for, so that the
	// answer sent ahead fits while this one is checked.
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(consumer.ReceiveBuffer)
	}
	var req, body, buf []byte
	ask := func(off int64) error {
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		body = protocol08.AppendFetchBody(body[:0], 100, 1, []protocol08.FetchPart{{Topic: topic, Partition: 0, Offset: off, MaxBytes: FetchBytes}})
		req = protocol08.AppendRequest(req[:0], protocol08.Header{APIKey: protocol08.KeyFetch, CorrelationID: 1, ClientID: "protocols"}, body)
		_, err := conn.Write(req)
		return err
	}
	var off int64
	if n > 0 {
		if err := ask(off); err != nil {
			return err
		}
	}
	for off < int64(n) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var resp []byte
		_, resp, buf, err = protocol08.ReadResponseInto(conn, buf, 4*FetchBytes)
		if err != nil {
			return fmt.Errorf("protocols: Fetch of %s at %d: %w", topic, off, err)
		}
		res, err := protocol08.DecodeFetchResponse(resp)
		if err != nil {
			return err
		}
		if len(res) != 1 || res[0].Error != 0 {
			return fmt.Errorf("protocols: Fetch of %s at %d answered %+v", topic, off, res)
		}
		next, ok := protocol08.NextOffset(res[0].Set)
		if !ok || next <= off {
			return fmt.Errorf("protocols: %s: nothing at logical offset %d of %d", topic, off, n)
		}
		if next < int64(n) {
			if err := ask(next); err != nil {
				return err
			}
		}
		want := off
		err = protocol08.Entries(res[0].Set, true, func(e protocol08.Entry) error {
			if e.Offset < want {
				return fmt.Errorf("entry at logical offset %d where %d was next", e.Offset, want)
			}
			want = e.Offset + 1
			return nil
		})
		if err == nil && want != next {
			err = fmt.Errorf("the entries end before logical offset %d, their framing after %d", want, next)
		}
		if err != nil {
			return fmt.Errorf("protocols: Fetch of %s at %d: %w", topic, off, err)
		}
		off = next
	}
	return nil
}

// LogicalEnd is the latest logical offset of partition 0 of topic (Offsets
// v0, time -1).
func LogicalEnd(addr, topic string) (int64, error) {
	body := protocol08.AppendOffsetsBody(nil, []protocol08.OffsetsPart{{Topic: topic, Partition: 0, Time: -1, MaxOffsets: 1}})
	resp, err := protocol08.Call(addr, 10*time.Second, protocol08.Header{APIKey: protocol08.KeyOffsets, CorrelationID: 1, ClientID: "protocols"}, body, 1<<20)
	if err != nil {
		return 0, err
	}
	res, err := protocol08.DecodeOffsetsResponse(resp)
	if err != nil {
		return 0, err
	}
	if len(res) != 1 || res[0].Error != 0 || len(res[0].Offsets) == 0 {
		return 0, fmt.Errorf("protocols: Offsets of %s answered %+v", topic, res)
	}
	return res[0].Offsets[0], nil
}

// WaitLogicalEnd waits until topic's latest logical offset reaches n.
func WaitLogicalEnd(ctx context.Context, addr, topic string, n int) error {
	return waitFor(ctx, func() (bool, error) {
		end, err := LogicalEnd(addr, topic)
		return end >= int64(n), err
	}, fmt.Sprintf("%s's latest logical offset at %s to reach %d", topic, addr, n))
}

// waitFor polls done every millisecond for up to ten minutes.
func waitFor(ctx context.Context, done func() (bool, error), what string) error {
	deadline := time.Now().Add(10 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		ok, err := done()
		if ok && err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return fmt.Errorf("protocols: waited 10 minutes for %s (last error: %v)", what, last)
}
