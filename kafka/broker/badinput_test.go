package broker_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// TestBadInput sends each kind of bad input on its own connection, then
// checks that the broker closed (or kept) that connection as docs/PROTOCOL.md §4 says,
// that another client still produces and fetches, and that nothing was
// written outside log.dir.
func TestBadInput(t *testing.T) {
	tb := startBroker(t, map[string]string{"max.socket.request.bytes": "1048576"})
	good := messageSet(0, 5, 40)
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff // last payload no longer matches its CRC
	long := strings.Repeat("a", 300)

	header := func(size int32, id int16) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(size))
		return binary.BigEndian.AppendUint16(b, uint16(id))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	randomBytes := make([]byte, 4096)
	for i := range randomBytes {
		randomBytes[i] = byte(rng.UintN(256))
	}
	randomBytes[0] = 0x7f // make sure the size field is absurd, not a valid small request

	cases := []struct {
		name       string
		send       func(cl *client)
		closed     bool // the broker must close the connection
		checkTopic string
	}{
		{name: "random bytes", send: func(cl *client) { cl.write(randomBytes) }, closed: true},
		{name: "size above the cap", send: func(cl *client) { cl.write(header(1<<20+1, protocol.RequestProduce)) }, closed: true},
		{name: "negative size", send: func(cl *client) { cl.write(header(-8, protocol.RequestFetch)) }, closed: true},
		{name: "unknown request id", send: func(cl *client) { cl.write(append(header(6, 42), 1, 2, 3, 4)) }, closed: true},
		{name: "malformed body", send: func(cl *client) {
			// A FETCH whose topic length runs past the body.
			cl.write(append(header(2+2+4, protocol.RequestFetch), 0x00, 0x50, 0, 0, 0, 0))
		}, closed: true},
		{name: "trailing garbage", send: func(cl *client) {
			b := protocol.FetchRequest{Topic: "t", MaxSize: 10}.AppendTo(nil)
			b = append(b, 0xEE)
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			cl.write(b)
		}, closed: true},
		{name: "truncated request then close", send: func(cl *client) {
			b := protocol.ProduceRequest{Topic: "trunc", Partition: 0, Messages: good}.AppendTo(nil)
			cl.write(b[:len(b)/2])
			cl.c.Close()
		}, checkTopic: "trunc"},
		{name: "topic ../x", send: func(cl *client) {
			cl.produce("../x", 0, good)
			cl.produce("..", 0, good)
			cl.produce("a/../../x", 0, good)
			cl.sync()
		}, checkTopic: "../x"},
		{name: "300-character topic", send: func(cl *client) {
			cl.produce(long, 0, good)
			cl.send(protocol.FetchRequest{Topic: long, MaxSize: 10})
			if code, _ := cl.response(); code != protocol.ErrWrongPartition {
				t.Errorf("fetch of a 300-character topic: code %v, want 3", code)
			}
		}, checkTopic: long},
		{name: "partition out of range", send: func(cl *client) {
			cl.produce("range", 7, good)
			cl.produce("range", -2, good)
			cl.sync()
		}, checkTopic: "range"},
		{name: "corrupt message set", send: func(cl *client) {
			cl.produce("crc", 0, corrupt)
			cl.produce("crc", 0, good[:len(good)-3]) // partial tail
			cl.sync()
		}, checkTopic: "crc"},
		{name: "negative and huge fetch sizes", send: func(cl *client) {
			cl.send(protocol.FetchRequest{Topic: "ok", MaxSize: -1})
			if code, b := cl.response(); code != protocol.ErrInvalidFetchSize || len(b) != 0 {
				t.Errorf("negative fetch size: code %v, %d bytes", code, len(b))
			}
			cl.send(protocol.FetchRequest{Topic: "ok", MaxSize: 1<<31 - 1})
			if code, _ := cl.response(); code != protocol.ErrNone {
				t.Errorf("huge fetch size: code %v", code)
			}
		}},
	}
	var total int64
	for i, c := range cases {
		cl := dial(t, tb.Addr())
		c.send(cl)
		if c.closed && !cl.closedByBroker() {
			t.Errorf("%s: the broker kept the connection open", c.name)
		}
		if !c.closed && cl.c != nil {
			// A request-level error keeps the connection usable.
			if strings.HasPrefix(c.name, "truncated") {
				// we closed it ourselves
			} else {
				cl.sync()
			}
		}
		if c.checkTopic != "" {
			for p := -2; p < 8; p++ {
				if _, ok := tb.Logs().Get(c.checkTopic, p); ok {
					t.Errorf("%s: the bad request created %s-%d", c.name, c.checkTopic, p)
				}
			}
		}

		// Another client still produces and fetches.
		other := dial(t, tb.Addr())
		set := messageSet(i*5, 5, 40)
		other.produce("ok", 0, set)
		other.sync()
		tb.Flush("ok", 0)
		code, b := other.fetch("ok", 0, total, 1<<20)
		if code != protocol.ErrNone || !bytes.Equal(b, set) {
			t.Fatalf("after %s: another client's fetch got code %v, %d bytes; want %d bytes", c.name, code, len(b), len(set))
		}
		total += int64(len(set))
		checkConfined(t, tb)
	}
}
