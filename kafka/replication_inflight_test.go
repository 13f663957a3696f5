package kafka_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// A leader answers a connection's requests in their order (docs/PROTOCOL.md §4) even when acks=-1 produces
// are pipelined: their answers wait for the commits on the connection's answerer while the next requests
// are read and appended, and a request of another kind waits for the answers queued before it. Each
// acks=-1 answer comes only once every follower has the set (§6's synchronous model).
func TestIntegration_PipelinedAcksAllAnswersInOrder(t *testing.T) {
	rc := startReplCluster(t, 3, nil)
	rc.create("piped", replication.Assignment{{0, 1, 2}})
	leader := rc.leaderBroker("piped", 0)
	cl := dialRaw(t, leader.HostPort())
	type sent struct {
		acks int16 // 2: a METADATA request
		msg  string
	}
	reqs := []sent{{-1, "a"}, {-1, "b"}, {2, ""}, {1, "c"}, {-1, "d"}, {-1, "e"}, {-1, "f"}}
	var wire []byte
	for _, r := range reqs {
		if r.acks == 2 {
			wire = protocol.MetadataRequest{Topics: []string{"piped"}}.AppendTo(wire)
			continue
		}
		wire = protocol.AckedProduceRequest{Acks: r.acks, TimeoutMs: 10000, Produces: []protocol.ProduceRequest{
			{Topic: "piped", Partition: 0, Messages: message.AppendV0(nil, []byte("pipelined "+r.msg))}}}.AppendTo(wire)
	}
	cl.c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := cl.c.Write(wire); err != nil { // every request before any answer is read
		t.Fatal(err)
	}
	setLen := int64(len(message.AppendV0(nil, []byte("pipelined a"))))
	next := int64(0)
	for i, r := range reqs {
		code, payload, buf, err := protocol.ReadResponse(cl.r, cl.rbuf)
		cl.rbuf = buf
		if err != nil || code != protocol.ErrNone {
			t.Fatalf("answer %d: %v, %v", i, code, err)
		}
		if r.acks == 2 {
			m, err := protocol.DecodeMetadataResponse(payload)
			if err != nil || len(m.Topics) != 1 || m.Topics[0].Topic != "piped" {
				t.Fatalf("answer %d is not the METADATA answer: %+v, %v", i, m, err)
			}
			continue
		}
		res, err := protocol.DecodeAckedProduceResponse(nil, payload)
		if err != nil || len(res) != 1 || res[0].Error != protocol.ErrNone {
			t.Fatalf("answer %d (%q, acks %d): %+v, %v", i, r.msg, r.acks, res, err)
		}
		if res[0].Offset != next {
			t.Errorf("answer %d (%q) says offset %d; in request order it is %d", i, r.msg, res[0].Offset, next)
		}
		next += setLen
		if r.acks != -1 {
			continue
		}
		for _, b := range rc.brokers {
			if leo := b.Replication().Partition("piped", 0).Log().LogEndOffset(); leo < next {
				t.Errorf("acks=-1 answer %d (%q) came with broker %d's log ending at %d, before the set's end %d", i, r.msg, b.ID, leo, next)
			}
		}
	}
}

// max.in.flight.requests.per.connection=5 with acks=-1 while the leader stops in the middle: the producer
// resends, in order, the set that failed and every set written after it (inflight.go), so every
// acknowledged set is read back from the new leader, and keeping each set's last copy gives the sets in the
// order they were sent; duplicates come only from those resends.
func TestIntegration_InFlightOrderAcrossALeaderChange(t *testing.T) {
	rc := startReplCluster(t, 3, nil)
	rc.create("inflight", replication.Assignment{{0, 1, 2}})
	old := rc.leaderBroker("inflight", 0)
	cfg := producer.DefaultConfig()
	cfg.MetadataBrokerList = rc.brokers.BrokerList()
	cfg.RequiredAcks, cfg.MaxInFlight = protocol.AcksAll, 5
	cfg.MessageSendMaxRetries, cfg.RetryBackoff, cfg.RequestTimeout = 20, 200*time.Millisecond, 5*time.Second
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const sets, perSet = 400, 4
	stopped := make(chan error, 1)
	notAcked := 0
	for i := range sets {
		if i == sets/3 {
			go func() { stopped <- old.Stop() }()
		}
		var msgs [][]byte
		for j := range perSet {
			msgs = append(msgs, []byte(fmt.Sprintf("set %04d message %d", i, j)))
		}
		if err := p.Send("inflight", 0, msgs...); err != nil { // an earlier set's, with 20 retries each: none
			t.Errorf("send of set %d reported: %v", i, err)
			notAcked++
		}
	}
	if err := p.Flush(); err != nil {
		t.Errorf("flush: %v", err)
		notAcked++
	}
	p.Close()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	nl := rc.leaderBroker("inflight", 0)
	if nl == nil || nl == old {
		t.Fatalf("no new leader after broker %d stopped", old.ID)
	}
	rp := nl.Replication().Partition("inflight", 0)
	rc.waitFor("the new leader's HW at its log end", func() bool { return rp.HighWatermark() >= rp.Log().LogEndOffset() })
	nl.Flush("inflight", 0)
	var got []string
	cl := dialRaw(t, nl.HostPort())
	for off := int64(0); ; {
		code, set := cl.fetch("inflight", 0, off)
		if code != protocol.ErrNone {
			t.Fatalf("fetch at %d from the new leader %d: %v", off, nl.ID, code)
		}
		if len(set) == 0 {
			break
		}
		it := message.NewIterator(set, off)
		for it.Next() {
			got = append(got, string(it.Message().Payload()))
		}
		off += int64(it.Consumed())
	}
	// Sets are whole and contiguous; record each copy's set number.
	var copies []int
	for k := 0; k < len(got); k += perSet {
		var i int
		if _, err := fmt.Sscanf(got[k], "set %d message 0", &i); err != nil {
			t.Fatalf("message %d is %q, not a set's first message", k, got[k])
		}
		for j := range perSet {
			if k+j >= len(got) || got[k+j] != fmt.Sprintf("set %04d message %d", i, j) {
				t.Fatalf("set %d is not whole at message %d", i, k+j)
			}
		}
		copies = append(copies, i)
	}
	last := map[int]int{} // set -> index of its last copy
	for idx, i := range copies {
		last[i] = idx
	}
	lost, prev := 0, -1
	var order []string
	for i := range sets {
		idx, ok := last[i]
		if !ok {
			lost++
			continue
		}
		if idx < prev {
			order = append(order, fmt.Sprintf("set %d's last copy (#%d) is before an earlier set's (#%d)", i, idx, prev))
		}
		prev = idx
	}
	dup := len(copies) - len(last)
	t.Logf("in flight 5, broker %d stopped at set %d: acknowledged %d, read back %d sets (%d copies), lost %d, duplicated %d",
		old.ID, sets/3, sets-notAcked, len(last), len(copies), lost, dup)
	if lost > 0 {
		t.Errorf("%d acknowledged sets lost", lost)
	}
	if len(order) > 0 {
		t.Errorf("out of send order: %s", strings.Join(order, "; "))
	}
}

// A producer that pipelines acks=-1 produces and does not read its answers for a while fills its socket: the
// answers the socket does not take are left to the connection's answerer goroutine, which waits for the
// socket (kafka/broker/ackedanswers.go), while the connection stops reading requests once maxQueuedAnswers
// wait. Once the producer reads, every answer arrives, in request order, none lost or doubled. An ISR of
// one commits each set at its append, so the connection's own goroutine finds the socket full first.
func TestIntegration_AcksAllAnswersOutlastAFullSocket(t *testing.T) {
	rc := startReplCluster(t, 1, nil)
	rc.create("full", replication.Assignment{{0}})
	cl := dialRaw(t, rc.brokers[0].HostPort())
	if tc, ok := cl.c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096) // the broker's answers fill it and its socket's send buffer early
	}
	set := message.AppendV0(nil, []byte("x"))
	req := protocol.AckedProduceRequest{Acks: protocol.AcksAll, TimeoutMs: 30000,
		Produces: []protocol.ProduceRequest{{Topic: "full", Partition: 0, Messages: set}}}.AppendTo(nil)
	const n = 12000 // about 420 KB of answers, past the broker's socket buffer (socket.send.buffer, 100 KiB, doubled by the kernel) and ours
	cl.c.SetDeadline(time.Now().Add(60 * time.Second))
	wrote := make(chan error, 1)
	go func() {
		var wire []byte
		for range n {
			wire = append(wire, req...)
		}
		_, err := cl.c.Write(wire) // blocks while the broker reads no more
		wrote <- err
	}()
	time.Sleep(500 * time.Millisecond) // nothing read: the broker's writes find the socket full
	for i := range n {
		code, payload, buf, err := protocol.ReadResponse(cl.r, cl.rbuf)
		cl.rbuf = buf
		if err != nil || code != protocol.ErrNone {
			t.Fatalf("answer %d of %d: %v, %v", i, n, code, err)
		}
		res, err := protocol.DecodeAckedProduceResponse(nil, payload)
		if err != nil || len(res) != 1 || res[0].Error != protocol.ErrNone {
			t.Fatalf("answer %d: %+v, %v", i, res, err)
		}
		if want := int64(i) * int64(len(set)); res[0].Offset != want {
			t.Fatalf("answer %d says offset %d; in request order it is %d", i, res[0].Offset, want)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}
