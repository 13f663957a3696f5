package replication

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// testCluster is brokers' replication managers on one in-memory store, each behind a small TCP endpoint
// that serves what replication asks of a broker (LEADER_AND_ISR, EPOCH_END_OFFSET, REPLICA_FETCH; the real
// broker's are in kafka/broker): the controller's rules, the followers' fetchers and the ISR run for real,
// without a ZooKeeper server or a broker process.
type testCluster struct {
	t       *testing.T
	store   *memStore
	brokers []*testBroker
}

type testBroker struct {
	id   int32
	dir  string
	ln   net.Listener
	logs *log.Manager
	m    *Manager
	wg   sync.WaitGroup
}

// quietLogger drops everything below warnings (set KAFKA_TEST_LOG=1 to see the controller's decisions).
func quietLogger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("KAFKA_TEST_LOG") != "" {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func startTestCluster(t *testing.T, n int) *testCluster {
	c := &testCluster{t: t, store: newMemStore()}
	for id := range n {
		b := &testBroker{id: int32(id), dir: t.TempDir()}
		c.brokers = append(c.brokers, b)
		c.start(b)
	}
	t.Cleanup(func() {
		for _, b := range c.brokers {
			c.stop(b)
		}
	})
	return c
}

// start opens the broker's logs, registers it (a new broker epoch; a registration still there is replaced in
// one step, as a controller that did not see the old session end finds it) and starts its manager and
// endpoint.
func (c *testCluster) start(b *testBroker) {
	c.t.Helper()
	lc := log.DefaultConfig()
	lc.FlushInterval, lc.FlushIntervalMs, lc.Logger = 1, 0, quietLogger()
	logs, err := log.NewManager(b.dir, lc)
	if err != nil {
		c.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.BrokerID, cfg.Logger = b.id, quietLogger()
	cfg.LagTimeMax, cfg.FetchWaitMax, cfg.HWCheckpointInterval = 2*time.Second, 50*time.Millisecond, 100*time.Millisecond
	cfg.BrokerEpoch = func() int64 { _, e, _ := c.store.GetCreated(zk.BrokerIDPath(int(b.id))); return e }
	if _, err := c.store.Get(zk.BrokerIDPath(int(b.id))); err == nil {
		// Registering again means the old session has ended: /controller goes with it if it was this one's.
		if id, err := ReadController(c.store); err == nil && id == b.id {
			c.store.Delete(zk.ControllerPath)
		}
		c.store.reregister(b.id, ln.Addr().String())
	} else {
		c.store.register(b.id, ln.Addr().String())
	}
	m, err := New(cfg, c.store, logs)
	if err != nil {
		c.t.Fatal(err)
	}
	b.ln, b.logs, b.m = ln, logs, m
	b.wg.Add(1)
	go b.serve(ln, m)
}

// stop ends the broker as a kill would, seen from the store once its session has expired: its
// registration goes, its manager and endpoint stop.
func (c *testCluster) stop(b *testBroker) {
	if b.m == nil {
		return
	}
	c.endSession(b)
	c.halt(b)
}

// endSession removes what the broker's ZooKeeper session held: its registration, and /controller if it is
// the controller.
func (c *testCluster) endSession(b *testBroker) {
	c.store.Delete(zk.BrokerIDPath(int(b.id)))
	if id, err := ReadController(c.store); err == nil && id == b.id {
		c.store.Delete(zk.ControllerPath)
	}
}

// halt ends the broker's process and leaves the store as it is: a registration outlives it until a test
// removes it (a session that has not expired yet).
func (c *testCluster) halt(b *testBroker) {
	if b.m == nil {
		return
	}
	b.ln.Close()
	b.m.Close()
	b.wg.Wait()
	b.logs.Close()
	b.m = nil
}

func (b *testBroker) serve(ln net.Listener, m *Manager) {
	defer b.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			done := make(chan struct{})
			defer close(done)
			defer conn.Close()
			go func() {
				select {
				case <-m.stop:
					conn.Close()
				case <-done:
				}
			}()
			serveConn(conn, m)
		}()
	}
}

// serveConn answers the requests replication sends a broker, until the connection ends.
func serveConn(conn net.Conn, m *Manager) {
	r := bufio.NewReader(conn)
	var buf []byte
	for {
		id, body, nb, err := protocol.ReadRequest(r, buf, protocol.DefaultMaxRequestSize)
		buf = nb
		if err != nil {
			return
		}
		var out []byte
		switch id {
		case protocol.RequestLeaderAndISR:
			req, err := protocol.DecodeLeaderAndISR(body)
			if err != nil {
				return
			}
			code, parts := m.HandleLeaderAndISR(&req)
			out = protocol.AppendPartitionErrors(nil, code, parts)
		case protocol.RequestEpochEndOffset:
			req, err := protocol.DecodeEpochEndOffset(body)
			if err != nil {
				return
			}
			out = protocol.AppendEpochEndResponse(nil, m.EpochEnd(&req))
		case protocol.RequestReplicaFetch:
			var d *protocol.Decoder
			req, err := d.ReplicaFetch(body)
			if err != nil {
				return
			}
			out = replicaFetch(m, &req)
		default:
			return
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

// replicaFetch answers a follower's fetch as the broker does (kafka/broker/replicafetch.go), held while
// there is nothing to send, for at most the request's wait.
func replicaFetch(m *Manager, req *protocol.ReplicaFetchRequest) []byte {
	wait := time.After(time.Duration(req.MaxWaitMs) * time.Millisecond)
	for _, f := range req.Fetches {
		if p := m.Partition(f.Topic, f.Partition); p != nil {
			p.FollowerArrived(req.ReplicaID, f.Offset)
		}
	}
	for ready := false; !ready; {
		ready = true
		for _, f := range req.Fetches {
			if p := m.Partition(f.Topic, f.Partition); p != nil && p.IsLeader() && p.Available(f.Offset) <= 0 {
				ready = false
			}
		}
		if !ready {
			select {
			case <-wait:
				ready = true
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	var parts []byte
	parts = binary.BigEndian.AppendUint16(parts, uint16(len(req.Fetches)))
	for _, f := range req.Fetches {
		code, hw, epochs, data := protocol.ErrUnknownTopicOrPartition, int64(-1), []protocol.EpochEntry(nil), []byte(nil)
		if p := m.Partition(f.Topic, f.Partition); p != nil {
			var c log.Chunk
			var err error
			c, hw, epochs, code, err = p.FollowerFetch(req.ReplicaID, f.Offset, int(f.MaxSize), nil)
			if err == nil && code == protocol.ErrNone && c.Len > 0 {
				data = make([]byte, c.Len)
				n, _ := c.ReadAt(data)
				data = data[:n]
			}
			c.Release()
		}
		parts = protocol.AppendReplicaFetchPart(parts, f.Topic, f.Partition, code, hw, epochs, len(data))
		parts = append(parts, data...)
	}
	return append(protocol.AppendResponseHeader(nil, len(parts), protocol.ErrNone), parts...)
}

// waitFor polls cond until it holds, failing the test after timeout.
func (c *testCluster) waitFor(what string, timeout time.Duration, cond func() bool) {
	c.t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %v", what, timeout)
		}
	}
}

// state reads a partition's state node.
func (c *testCluster) state(topic string, p int) State {
	s, err := ReadState(c.store, topic, p)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		c.t.Fatal(err)
	}
	return s
}

// produce appends one message to the partition's leader and returns the end of its log.
func (c *testCluster) produce(topic string, p int32, payload string) int64 {
	c.t.Helper()
	for _, b := range c.brokers {
		if b.m == nil {
			continue
		}
		if rp := b.m.Partition(topic, p); rp != nil && rp.IsLeader() {
			_, end, code, err := rp.Append(set(payload), protocol.AcksLeader)
			if err != nil || code != protocol.ErrNone {
				c.t.Fatalf("append to %s-%d on broker %d: %v %v", topic, p, b.id, code, err)
			}
			return end
		}
	}
	c.t.Fatalf("no leader of %s-%d", topic, p)
	return 0
}

// leo is broker id's log end offset for the partition, -1 if it has no replica.
func (c *testCluster) leo(id int32, topic string, p int32) int64 {
	b := c.brokers[id]
	if b.m == nil {
		return -1
	}
	rp := b.m.Partition(topic, p)
	if rp == nil {
		return -1
	}
	return rp.Log().LogEndOffset()
}

// logBytes is broker id's log of the partition, whole.
func (c *testCluster) logBytes(id int32, topic string, p int32) []byte {
	c.t.Helper()
	rp := c.brokers[id].m.Partition(topic, p)
	if rp == nil {
		return nil
	}
	end := rp.Log().LogEndOffset()
	ch, err := rp.Log().ReadUpTo(0, int(end)+1, end)
	if err != nil {
		c.t.Fatal(err)
	}
	defer ch.Release()
	buf := make([]byte, ch.Len)
	n, err := ch.ReadAt(buf)
	if err != nil && !errors.Is(err, io.EOF) {
		c.t.Fatal(err)
	}
	return buf[:n]
}
