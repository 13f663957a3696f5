package producer

import (
	"bufio"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// fakeLeader is one broker leading partition 0 of every topic it is asked about (a topic named "seven..."
// is a 0.7 topic it holds: not replicated, by METADATA's error 3). It appends every
// ACKED_PRODUCE it reads to a log of first payloads, in arrival order, and answers each at once, in order,
// with the code answer returns for it.
type fakeLeader struct {
	ln     net.Listener
	mu     sync.Mutex
	got    []string
	answer func(payload string, copy int) protocol.ErrorCode // copy: 1 for the first time a payload arrives
}

func startFakeLeader(t *testing.T, answer func(string, int) protocol.ErrorCode) *fakeLeader {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeLeader{ln: ln, answer: answer}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeLeader) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	var buf []byte
	host, port, _ := net.SplitHostPort(f.ln.Addr().String())
	p, _ := strconv.Atoi(port)
	for {
		id, body, nb, err := protocol.ReadRequest(r, buf, 1<<20)
		buf = nb
		if err != nil {
			return
		}
		var out []byte
		switch id {
		case protocol.RequestMetadata:
			req, _ := protocol.DecodeMetadata(body)
			m := protocol.MetadataResponse{Brokers: []protocol.BrokerAddr{{ID: 7, Host: host, Port: int32(p)}}}
			for _, tp := range req.Topics {
				if strings.HasPrefix(tp, "seven") { // a 0.7 topic: not replicated
					m.Topics = append(m.Topics, protocol.TopicMetadata{Topic: tp, Error: protocol.ErrUnknownTopicOrPartition})
					continue
				}
				m.Topics = append(m.Topics, protocol.TopicMetadata{Topic: tp, Partitions: []protocol.PartitionMetadata{
					{Partition: 0, Leader: 7, Replicas: []int32{7}, ISR: []int32{7}}}})
			}
			out = protocol.AppendMetadataResponse(nil, &m)
		case protocol.RequestAckedProduce:
			var d protocol.Decoder
			a, err := d.AckedProduce(body)
			if err != nil {
				return
			}
			it := message.NewIterator(a.Produces[0].Messages, 0)
			it.Next()
			pl := string(it.Message().Payload())
			f.mu.Lock()
			f.got = append(f.got, pl)
			n := 0
			for _, g := range f.got {
				if g == pl {
					n++
				}
			}
			f.mu.Unlock()
			out = protocol.AppendAckedProduceResponse(nil, []protocol.ProduceResult{{Topic: a.Produces[0].Topic, Error: f.answer(pl, n)}})
		default:
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (f *fakeLeader) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func pipelinedProducer(t *testing.T, addr string, inFlight int) *SyncProducer {
	cfg := DefaultConfig()
	cfg.MetadataBrokerList = "7:" + addr
	cfg.RequiredAcks, cfg.MaxInFlight, cfg.RetryBackoff = protocol.AcksAll, inFlight, 0
	p, err := NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The rule of inflight.go, on the wire: three in flight, set 2's first answer is RequestTimedOut (the
// leader appended it but could not commit it in time) while 3 and 4 were already written after it. The
// producer resends 2, 3 and 4 in that order, one at a time, before anything newer, so the log holds
// 1 2 3 4 2 3 4 5 6: each set's last copy is in send order, and 3 and 4 are there twice.
func TestInFlightResendsTheFailedSetAndEverythingAfterItInOrder(t *testing.T) {
	f := startFakeLeader(t, func(pl string, copy int) protocol.ErrorCode {
		if pl == "2" && copy == 1 {
			return protocol.ErrRequestTimedOut
		}
		return protocol.ErrNone
	})
	p := pipelinedProducer(t, f.ln.Addr().String(), 3)
	for i := 1; i <= 6; i++ {
		if err := p.Send("t", 0, []byte(strconv.Itoa(i))); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatalf("close (flush): %v", err)
	}
	// The resent 2 goes out on a new connection while the first 4 may still be unread on the old one,
	// and the fake leader serves each connection on its own goroutine: the log is 1 2 3 4 2 3 4 5 6 or
	// 1 2 3 2 4 3 4 5 6. What the producer decides is the same in both: the first copies in send order,
	// the second copies 2 3 4 in order, no third, and 5 only after every resend.
	got := f.log()
	var first, second []string
	copies := map[string]int{}
	last4 := -1
	for i, pl := range got {
		if pl == "4" {
			last4 = i
		}
		copies[pl]++
		switch copies[pl] {
		case 1:
			first = append(first, pl)
		case 2:
			second = append(second, pl)
		default:
			t.Fatalf("the leader's log is %v: %s arrived %d times", got, pl, copies[pl])
		}
	}
	if strings.Join(first, " ") != "1 2 3 4 5 6" || strings.Join(second, " ") != "2 3 4" ||
		slices.Index(got, "5") < last4 {
		t.Fatalf("the leader's log is %v, want 1 2 3 4 2 3 4 5 6 (the first 4 may come after the second 2)", got)
	}
}

// A set refused for good (not retriable) is reported by the Send or Flush that read its answer, wrapping
// the code, and is not resent; the sets around it are not affected.
func TestInFlightReportsARefusedSetAndGoesOn(t *testing.T) {
	f := startFakeLeader(t, func(pl string, _ int) protocol.ErrorCode {
		if pl == "3" {
			return protocol.ErrInvalidMessage
		}
		return protocol.ErrNone
	})
	p := pipelinedProducer(t, f.ln.Addr().String(), 4)
	var errs []error
	for i := 1; i <= 5; i++ {
		if err := p.Send("t", 0, []byte(strconv.Itoa(i))); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, p.Flush())
	p.Close()
	err := errors.Join(errs...)
	if !errors.Is(err, protocol.ErrInvalidMessage) {
		t.Fatalf("the refused set was not reported: %v", err)
	}
	if got := f.log(); len(got) != 5 {
		t.Fatalf("the leader's log is %v, want each set once", got)
	}
}

// The window: with max.in.flight.requests.per.connection=N a Send returns with at most N-1 sets
// unanswered, and Flush leaves none.
func TestInFlightWindow(t *testing.T) {
	f := startFakeLeader(t, func(string, int) protocol.ErrorCode { return protocol.ErrNone })
	p := pipelinedProducer(t, f.ln.Addr().String(), 4)
	defer p.Close()
	for i := range 10 {
		if err := p.Send("t", 0, []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		for _, c := range p.leaders.all() {
			if n := len(c.inflight); n > 3 {
				t.Fatalf("after send %d, %d sets in flight; at most 3", i, n)
			}
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, c := range p.leaders.all() {
		if n := len(c.inflight); n != 0 {
			t.Fatalf("after Flush, %d sets in flight", n)
		}
	}
}
