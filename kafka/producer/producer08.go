package producer

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

// Producer08 sends messages through the Kafka protocol as 0.8 defined it (docs/PROTOCOL.md §12), as 0.8's
// console producer did: Metadata v0 from the first broker of its list that answers names each partition's
// leader, and each Send is one Produce v0 to that leader, answered unless acks is 0. A "not leader",
// "leader not available" or a broken connection makes it ask for the metadata again and retry, up to Retries
// times, RetryBackoff apart. It is synchronous and not safe for concurrent use.
type Producer08 struct {
	Seeds        []string // host:port of brokers to ask for metadata
	Acks         int16    // 0, 1 or -1
	Timeout      time.Duration
	Codec        message.Codec // each Send's messages in one compressed message when not CodecNone
	Retries      int
	RetryBackoff time.Duration

	leaders map[string][]int32 // topic → leader of each partition
	addrs   map[int32]string
	conns   map[int32]*conn08
	corr    int32
	set     []byte
	req     []byte
}

type conn08 struct {
	c net.Conn
	r *bufio.Reader
}

// errStale08 is an answer that says the metadata is out of date.
var errStale08 = errors.New("producer: the Kafka protocol's metadata is stale")

// Send sends msgs, without keys, to partition of topic (-1: one of its partitions at random) in one Produce.
func (p *Producer08) Send(topic string, partition int32, msgs ...[]byte) error {
	for attempt := 0; ; attempt++ {
		err := p.send(topic, partition, msgs)
		if err == nil || attempt >= p.Retries || !errors.Is(err, errStale08) {
			return err
		}
		delete(p.leaders, topic)
		time.Sleep(p.RetryBackoff)
	}
}

func (p *Producer08) send(topic string, partition int32, msgs [][]byte) error {
	leaders, err := p.metadata(topic)
	if err != nil {
		return err
	}
	part := partition
	if part < 0 {
		part = int32(rand.IntN(len(leaders)))
	}
	if int(part) >= len(leaders) {
		return fmt.Errorf("producer: %s has %d partitions, not a partition %d", topic, len(leaders), part)
	}
	if leaders[part] < 0 {
		return fmt.Errorf("%w: %s-%d has no leader", errStale08, topic, part)
	}
	c, err := p.conn(leaders[part])
	if err != nil {
		return fmt.Errorf("%w: %v", errStale08, err)
	}
	p.set = p.set[:0]
	for i, m := range msgs {
		p.set = protocol08.AppendEntry(p.set, int64(i), nil, m)
	}
	if p.Codec != message.CodecNone {
		w, err := message.Compress(p.Codec, p.set)
		if err != nil {
			return err
		}
		p.set = protocol08.AppendEntryCodec(p.set[:0], 0, p.Codec, message.Message(w).Payload())
	}
	body := protocol08.AppendProduceBody(nil, p.Acks, int32(p.Timeout.Milliseconds()),
		[]protocol08.ProducePart{{Topic: topic, Partition: part, Set: p.set}})
	p.corr++
	p.req = protocol08.AppendRequest(p.req[:0], protocol08.Header{APIKey: protocol08.KeyProduce, CorrelationID: p.corr, ClientID: "console-producer"}, body)
	if _, err := c.c.Write(p.req); err != nil {
		p.drop(leaders[part])
		return fmt.Errorf("%w: %v", errStale08, err)
	}
	if p.Acks == protocol.AcksNone {
		return nil
	}
	c.c.SetReadDeadline(time.Now().Add(p.Timeout + 10*time.Second))
	_, resp, err := protocol08.ReadResponse(c.r, 1<<20)
	if err != nil {
		p.drop(leaders[part])
		return fmt.Errorf("%w: %v", errStale08, err)
	}
	res, err := protocol08.DecodeProduceResponse(resp)
	if err != nil || len(res) != 1 {
		return fmt.Errorf("producer: Produce answer for %s-%d: %v", topic, part, err)
	}
	switch code := res[0].Error; code {
	case protocol.ErrNone:
		return nil
	case protocol.ErrNotLeaderForPartition, protocol.ErrLeaderNotAvailable, protocol.ErrUnknownTopicOrPartition, protocol.ErrRequestTimedOut:
		return fmt.Errorf("%w: %s-%d: %w", errStale08, topic, part, code)
	default:
		return fmt.Errorf("producer: %s-%d: %w", topic, part, code)
	}
}

// metadata is topic's leaders, asked of the seeds when not known.
func (p *Producer08) metadata(topic string) ([]int32, error) {
	if l, ok := p.leaders[topic]; ok {
		return l, nil
	}
	var last error
	for _, seed := range p.Seeds {
		brokers, topics, err := metadata08(seed, topic)
		if err != nil {
			last = err
			continue
		}
		if p.leaders == nil {
			p.leaders, p.addrs = map[string][]int32{}, map[int32]string{}
		}
		for _, b := range brokers {
			p.addrs[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
		for _, t := range topics {
			if t.Topic != topic || len(t.Partitions) == 0 {
				continue
			}
			l := make([]int32, len(t.Partitions))
			for i := range l {
				l[i] = -1
			}
			for _, pm := range t.Partitions {
				if int(pm.Partition) < len(l) {
					l[pm.Partition] = pm.Leader
				}
			}
			p.leaders[topic] = l
			return l, nil
		}
		last = fmt.Errorf("producer: %s has no partitions in %s's metadata", topic, seed)
	}
	return nil, fmt.Errorf("%w: %v", errStale08, last)
}

// metadata08 asks one broker for a topic's metadata on a connection of its own.
func metadata08(addr, topic string) ([]protocol08.Broker, []protocol08.TopicMetadata, error) {
	resp, err := protocol08.Call(addr, 30*time.Second, protocol08.Header{APIKey: protocol08.KeyMetadata, CorrelationID: 1, ClientID: "console-producer"},
		protocol08.AppendMetadataBody(nil, []string{topic}), 1<<24)
	if err != nil {
		return nil, nil, err
	}
	return protocol08.DecodeMetadataResponse(resp)
}

func (p *Producer08) conn(id int32) (*conn08, error) {
	if c, ok := p.conns[id]; ok {
		return c, nil
	}
	addr, ok := p.addrs[id]
	if !ok {
		return nil, fmt.Errorf("producer: broker %d is not in the metadata", id)
	}
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	if p.conns == nil {
		p.conns = map[int32]*conn08{}
	}
	cc := &conn08{c: c, r: bufio.NewReader(c)}
	p.conns[id] = cc
	return cc, nil
}

func (p *Producer08) drop(id int32) {
	if c, ok := p.conns[id]; ok {
		c.c.Close()
		delete(p.conns, id)
	}
}

// Close closes the connections.
func (p *Producer08) Close() error {
	for id := range p.conns {
		p.drop(id)
	}
	return nil
}
