package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Consumer08 reads one topic through the Kafka protocol as 0.8 defined it (docs/PROTOCOL.md §12), as the
// fetchers of 0.8's console consumer did: every partition from its leader, Fetch v0 at logical offsets, from
// the earliest or the latest one (Offsets v0), with a long poll of MaxWait when it has caught up. A "not
// leader", an unknown partition or a broken connection makes it look the partitions up again (Locate),
// keeping each one's next offset. It joins no group and commits nothing: 0.8's console consumer, given no
// group, made up one of its own. It is not safe for concurrent use.
type Consumer08 struct {
	Topic         string
	FromBeginning bool          // start at each partition's earliest offset, else at its latest
	FetchSize     int32         // max_bytes per partition and Fetch
	MaxWait       time.Duration // a Fetch's max_wait when nothing has arrived yet in this Poll
	Timeout       time.Duration // one request's round trip
	// Locate names the topic's partitions and their leaders (ZKPartitions08 reads them from ZooKeeper).
	Locate func() ([]Partition08, error)
	// Relocate, when not 0, is how often Locate is asked again even when nothing went wrong, so that
	// partitions registered after the start (a broker's first message of a 0.7 topic) are read too.
	Relocate time.Duration
	Log      *slog.Logger // nil: slog.Default()

	parts   map[string]*part08 // by Partition08.Name
	stale   bool               // Locate before the next Fetch
	located time.Time          // when Locate last answered
	conns   map[string]*conn08 // by leader address
	corr    int32
	req     []byte
	body    []byte
	rbuf    []byte
}

// Partition08 is one partition to read and where it is now.
type Partition08 struct {
	Name      string // "<brokerid>-<partition>" for a 0.7 topic's (each broker has its own), "<partition>" for a replicated one's
	Partition int32
	Leader    string // host:port of the broker that serves it; "" while it has no leader
}

// Record08 is one message read.
type Record08 struct {
	Name       string // the partition's Partition08.Name
	Partition  int32
	Offset     int64 // its logical offset
	Key, Value []byte
}

type part08 struct {
	Partition08
	next int64 // -1: not known yet (Offsets v0)
}

type conn08 struct{ c net.Conn }

// ErrStop08, returned by Poll's callback, ends the Poll without an error.
var ErrStop08 = errors.New("consumer: stop")

// Poll fetches once from each leader, all of its partitions in one Fetch, and hands every message to fn in
// the order of each partition. It returns how many fn took. The first Fetch waits up to MaxWait for data; the
// next ones of the same Poll, once something arrived, do not.
func (c *Consumer08) Poll(fn func(Record08) error) (int, error) {
	if c.parts == nil || c.stale || c.Relocate > 0 && time.Since(c.located) >= c.Relocate {
		if err := c.locate(); err != nil {
			return 0, err
		}
	}
	byLeader := map[string][]*part08{}
	for _, p := range c.parts {
		if p.Leader != "" {
			byLeader[p.Leader] = append(byLeader[p.Leader], p)
		}
	}
	if len(byLeader) == 0 {
		c.stale = true
		time.Sleep(c.MaxWait)
		return 0, nil
	}
	n := 0
	for _, addr := range slices.Sorted(maps.Keys(byLeader)) {
		wait := c.MaxWait
		if n > 0 {
			wait = 0
		}
		k, err := c.fetch(addr, byLeader[addr], wait, fn)
		n += k
		if errors.Is(err, ErrStop08) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// locate asks Locate for the partitions, keeping the next offset of those already known.
func (c *Consumer08) locate() error {
	ps, err := c.Locate()
	if err != nil {
		return fmt.Errorf("consumer: partitions of %s: %w", c.Topic, err)
	}
	parts := map[string]*part08{}
	for _, p := range ps {
		next := int64(-1)
		if old, ok := c.parts[p.Name]; ok {
			next = old.next
		}
		parts[p.Name] = &part08{Partition08: p, next: next}
	}
	c.parts, c.stale, c.located = parts, false, time.Now()
	return nil
}

// fetch serves the partitions led by addr: their offsets first where not known, then one Fetch.
func (c *Consumer08) fetch(addr string, ps []*part08, wait time.Duration, fn func(Record08) error) (int, error) {
	slices.SortFunc(ps, func(a, b *part08) int { return strings.Compare(a.Name, b.Name) })
	var fps []protocol08.FetchPart
	for _, p := range ps {
		if p.next < 0 {
			off, err := c.startOffset(addr, p.Partition)
			if err != nil {
				c.lost(addr, err)
				return 0, nil
			}
			p.next = off
		}
		fps = append(fps, protocol08.FetchPart{Topic: c.Topic, Partition: p.Partition, Offset: p.next, MaxBytes: c.FetchSize})
	}
	c.body = protocol08.AppendFetchBody(c.body[:0], int32(wait.Milliseconds()), 1, fps)
	// An answer holds at most FetchSize bytes of messages per partition (or one message, whole, when the first
	// is larger: maxMessage08), and little else.
	resp, err := c.call(addr, protocol08.KeyFetch, c.body, c.Timeout+wait, len(fps)*(int(c.FetchSize)+answerSlack)+maxMessage08)
	if err != nil {
		c.lost(addr, err)
		return 0, nil
	}
	results, err := protocol08.DecodeFetchResponse(resp)
	if err != nil {
		return 0, fmt.Errorf("consumer: Fetch answer from %s: %w", addr, err)
	}
	n := 0
	for _, r := range results {
		i := slices.IndexFunc(ps, func(p *part08) bool { return p.Partition == r.Partition })
		if r.Topic != c.Topic || i < 0 {
			return n, fmt.Errorf("consumer: Fetch answer from %s names %s-%d, which was not asked", addr, r.Topic, r.Partition)
		}
		p := ps[i]
		switch r.Error {
		case protocol.ErrNone:
		case protocol.ErrOffsetOutOfRange:
			c.logger().Warn("offset out of range; starting again where --from-beginning says", "topic", c.Topic, "partition", p.Name, "offset", p.next)
			p.next = -1
			continue
		case protocol.ErrNotLeaderForPartition, protocol.ErrLeaderNotAvailable, protocol.ErrUnknownTopicOrPartition:
			c.stale = true
			continue
		default:
			return n, fmt.Errorf("consumer: Fetch of %s-%s at %d from %s: %w", c.Topic, p.Name, p.next, addr, r.Error)
		}
		var take func(e protocol08.Entry) error
		take = func(e protocol08.Entry) error {
			if e.Codec() != message.CodecNone { // a broker of Kafka's may send a wrapper: its messages
				inner, err := message.AppendInflated(nil, e.Codec(), e.Value)
				if err != nil {
					return err
				}
				return protocol08.Entries(inner, false, take)
			}
			if e.Offset < p.next { // a wrapper's messages before the one asked for
				return nil
			}
			if err := fn(Record08{Name: p.Name, Partition: p.Partition, Offset: e.Offset, Key: e.Key, Value: e.Value}); err != nil {
				return err
			}
			p.next = e.Offset + 1
			n++
			return nil
		}
		err := protocol08.Entries(r.Set, true, take)
		if err != nil {
			if errors.Is(err, ErrStop08) {
				return n, err
			}
			return n, fmt.Errorf("consumer: Fetch of %s-%s from %s: %w", c.Topic, p.Name, addr, err)
		}
	}
	return n, nil
}

// startOffset is the partition's earliest or latest logical offset (Offsets v0, time -2 or -1).
func (c *Consumer08) startOffset(addr string, partition int32) (int64, error) {
	t := int64(-1)
	if c.FromBeginning {
		t = -2
	}
	body := protocol08.AppendOffsetsBody(nil, []protocol08.OffsetsPart{{Topic: c.Topic, Partition: partition, Time: t, MaxOffsets: 1}})
	resp, err := c.call(addr, protocol08.KeyOffsets, body, c.Timeout, answerSlack)
	if err != nil {
		return 0, err
	}
	res, err := protocol08.DecodeOffsetsResponse(resp)
	if err != nil {
		return 0, err
	}
	if len(res) != 1 || len(res[0].Offsets) == 0 {
		if len(res) == 1 && res[0].Error != protocol.ErrNone {
			return 0, res[0].Error
		}
		return 0, fmt.Errorf("%w: Offsets answer %+v", ErrBadResponse, res)
	}
	return res[0].Offsets[0], nil
}

// answerSlack bounds what an answer holds beyond messages: per partition its
// topic, numbers and error code; an Offsets answer whole.
const answerSlack = 64 << 10

// maxMessage08 is the largest message an answer may carry beyond FetchSize:
// the broker's largest request (max.socket.request.bytes, 100 MB shipped).
const maxMessage08 = 100 << 20

// call sends one request to addr on its connection and reads the answer, of
// at most maxSize bytes (a larger one is an error, not an allocation).
func (c *Consumer08) call(addr string, key int16, body []byte, timeout time.Duration, maxSize int) ([]byte, error) {
	cc, ok := c.conns[addr]
	if !ok {
		nc, err := net.DialTimeout("tcp", addr, c.Timeout)
		if err != nil {
			return nil, err
		}
		if c.conns == nil {
			c.conns = map[string]*conn08{}
		}
		cc = &conn08{c: nc}
		c.conns[addr] = cc
	}
	c.corr++
	c.req = protocol08.AppendRequest(c.req[:0], protocol08.Header{APIKey: key, CorrelationID: c.corr, ClientID: "console-consumer"}, body)
	cc.c.SetDeadline(time.Now().Add(timeout))
	if _, err := cc.c.Write(c.req); err != nil {
		return nil, fmt.Errorf("%s to %s: %w", protocol08.KeyName(key), addr, err)
	}
	corr, resp, buf, err := protocol08.ReadResponseInto(cc.c, c.rbuf, maxSize)
	c.rbuf = buf
	if err != nil {
		return nil, fmt.Errorf("%s answer from %s: %w", protocol08.KeyName(key), addr, err)
	}
	if corr != c.corr {
		return nil, fmt.Errorf("%w: %s answer from %s has correlation id %d, not %d", ErrBadResponse, protocol08.KeyName(key), addr, corr, c.corr)
	}
	return resp, nil
}

// lost drops addr's connection after err and looks the partitions up again before the next Fetch.
func (c *Consumer08) lost(addr string, err error) {
	c.logger().Warn("lost a leader; looking the partitions up again", "topic", c.Topic, "broker", addr, "err", err)
	if cc, ok := c.conns[addr]; ok {
		cc.c.Close()
		delete(c.conns, addr)
	}
	c.stale = true
	time.Sleep(min(c.MaxWait, time.Second))
}

func (c *Consumer08) logger() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}

// Close closes the connections.
func (c *Consumer08) Close() error {
	for addr, cc := range c.conns {
		cc.c.Close()
		delete(c.conns, addr)
	}
	return nil
}

// ZKPartitions08 reads topic's partitions from ZooKeeper (docs/PROTOCOL.md §5, §10): a replicated topic's
// from its assignment, each partition's leader named by a Metadata v0 from a live broker; a 0.7 topic's from
// the live brokers that registered it, each broker serving its own. A topic no broker has registered has none.
func ZKPartitions08(z *zk.Client, topic string, timeout time.Duration) ([]Partition08, error) {
	brokers, err := zk.LiveBrokers(z, nil)
	if err != nil {
		return nil, err
	}
	data, err := z.Get(zk.BrokerTopicPath(topic))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a, replicated, err := zk.ParseReplicaAssignment(topic, data)
	if err != nil {
		return nil, err
	}
	if replicated {
		return leaders08(brokers, topic, len(a), timeout)
	}
	regs, err := zk.TopicRegistrations(z, topic, nil)
	if err != nil {
		return nil, err
	}
	var out []Partition08
	for _, id := range slices.Sorted(maps.Keys(regs)) {
		b, live := brokers[id]
		if !live {
			continue
		}
		for p := range regs[id] {
			out = append(out, Partition08{Name: zk.PartitionName(id, p), Partition: int32(p), Leader: b.Addr()})
		}
	}
	return out, nil
}

// leaders08 asks the live brokers, in random order until one answers, for the leaders of a replicated
// topic's n partitions.
func leaders08(brokers map[int]zk.Broker, topic string, n int, timeout time.Duration) ([]Partition08, error) {
	var last error = errors.New("no live broker")
	ids := slices.Collect(maps.Keys(brokers))
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids {
		resp, err := protocol08.Call(brokers[id].Addr(), timeout, protocol08.Header{APIKey: protocol08.KeyMetadata, CorrelationID: 1, ClientID: "console-consumer"},
			protocol08.AppendMetadataBody(nil, []string{topic}), 1<<24)
		if err != nil {
			last = err
			continue
		}
		bs, ts, err := protocol08.DecodeMetadataResponse(resp)
		if err != nil {
			last = err
			continue
		}
		addrs := map[int32]string{}
		for _, b := range bs {
			addrs[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
		out := make([]Partition08, n)
		for p := range out {
			out[p] = Partition08{Name: strconv.Itoa(p), Partition: int32(p)}
		}
		for _, t := range ts {
			if t.Topic != topic {
				continue
			}
			for _, pm := range t.Partitions {
				if int(pm.Partition) < n && pm.Error == protocol.ErrNone && pm.Leader >= 0 {
					out[pm.Partition].Leader = addrs[pm.Leader]
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("leaders of %s: %w", topic, last)
}
