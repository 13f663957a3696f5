package kafka_test

import (
	"bufio"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// replCluster is n in-process brokers registered in a real ZooKeeper, with a ZooKeeper client for the test.
type replCluster struct {
	t       *testing.T
	connect string
	zk      *zk.Client
	brokers brokertest.Cluster
}

// startReplCluster starts ZooKeeper and n brokers with props (short lag and fetch waits by default, so
// that tests run in seconds).
func startReplCluster(t *testing.T, n int, props map[string]string) *replCluster {
	t.Helper()
	connect := zktest.Start(t)
	p := map[string]string{"replica.lag.time.max.ms": "1500", "replica.fetch.wait.max.ms": "100",
		"replica.high.watermark.checkpoint.interval.ms": "200", "zk.sessiontimeout.ms": "2000"}
	for k, v := range props {
		p[k] = v
	}
	c := brokertest.StartCluster(t, n, brokertest.Options{ZKConnect: connect, Props: p})
	cl, err := zk.Connect(connect, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return &replCluster{t: t, connect: connect, zk: cl, brokers: c}
}

// create makes a replicated topic and waits until every partition has a leader that knows it.
func (rc *replCluster) create(topic string, a replication.Assignment) {
	rc.t.Helper()
	if err := replication.CreateTopic(rc.zk, topic, a); err != nil {
		rc.t.Fatal(err)
	}
	for p := range a {
		rc.waitFor("a leader for "+topic+"-"+strconv.Itoa(p), func() bool { return rc.leaderBroker(topic, p) != nil })
	}
}

func (rc *replCluster) waitFor(what string, cond func() bool) {
	rc.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			rc.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (rc *replCluster) state(topic string, p int) replication.State {
	rc.t.Helper()
	s, err := replication.ReadState(rc.zk, topic, p)
	if err != nil {
		rc.t.Fatalf("state of %s-%d: %v", topic, p, err)
	}
	return s
}

// leaderBroker is the running broker that leads topic-p now, by its own account.
func (rc *replCluster) leaderBroker(topic string, p int) *brokertest.Broker {
	for _, b := range rc.brokers {
		if !b.Running() || b.Replication() == nil {
			continue
		}
		if r := b.Replication().Partition(topic, int32(p)); r != nil && r.IsLeader() {
			return b
		}
	}
	return nil
}

// isr waits until the state node's ISR is want (in assignment order).
func (rc *replCluster) waitISR(topic string, p int, want ...int32) {
	rc.t.Helper()
	rc.waitFor("ISR "+topic+"-"+strconv.Itoa(p)+" = "+sliceString(want), func() bool {
		s, err := replication.ReadState(rc.zk, topic, p)
		return err == nil && slices.Equal(s.ISR, want)
	})
}

func sliceString(v []int32) string {
	s := "["
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += strconv.Itoa(int(x))
	}
	return s + "]"
}

// rawClient is one connection speaking the wire protocol directly.
type rawClient struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	rbuf []byte
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, r: bufio.NewReader(c)}
}

// call sends req and returns the answer's code and payload (an error on a closed connection).
func (rc *rawClient) call(req protocol.Request) (protocol.ErrorCode, []byte, error) {
	rc.c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := rc.c.Write(req.AppendTo(nil)); err != nil {
		return 0, nil, err
	}
	code, payload, buf, err := protocol.ReadResponse(rc.r, rc.rbuf)
	rc.rbuf = buf
	return code, slices.Clone(payload), err
}

// produce sends one ACKED_PRODUCE of msgs to topic-p and returns its result.
func (rc *rawClient) produce(topic string, p int32, acks int16, timeout time.Duration, msgs ...string) protocol.ProduceResult {
	rc.t.Helper()
	var set []byte
	for _, m := range msgs {
		set = message.AppendV0(set, []byte(m))
	}
	_, payload, err := rc.call(protocol.AckedProduceRequest{Acks: acks, TimeoutMs: int32(timeout.Milliseconds()),
		Produces: []protocol.ProduceRequest{{Topic: topic, Partition: p, Messages: set}}})
	if err != nil {
		rc.t.Fatalf("acked produce to %s-%d: %v", topic, p, err)
	}
	res, err := protocol.DecodeAckedProduceResponse(nil, payload)
	if err != nil || len(res) != 1 {
		rc.t.Fatalf("acked produce answer: %v, %v", res, err)
	}
	return res[0]
}

// fetch is a consumer's FETCH.
func (rc *rawClient) fetch(topic string, p int32, offset int64) (protocol.ErrorCode, []byte) {
	rc.t.Helper()
	code, payload, err := rc.call(protocol.FetchRequest{Topic: topic, Partition: p, Offset: offset, MaxSize: 1 << 20})
	if err != nil {
		rc.t.Fatalf("fetch %s-%d at %d: %v", topic, p, offset, err)
	}
	return code, payload
}

// payloads lists the messages of a set.
func payloads(set []byte) []string {
	var out []string
	it := message.NewIterator(set, 0)
	for it.Next() {
		out = append(out, string(it.Message().Payload()))
	}
	return out
}
