package consumer

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

// fake08 is a broker of the Kafka protocol that answers each request with the next function of its script
// (given the request's header and body); after the script it closes the connection.
func fake08(t *testing.T, script ...func(h protocol08.Header, body []byte) []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for _, answer := range script {
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err != nil {
				return
			}
			req := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(c, req); err != nil {
				return
			}
			h, body, err := protocol08.ParseHeader(int16(binary.BigEndian.Uint16(req)), req[2:])
			if err != nil {
				t.Errorf("fake broker: %v", err)
				return
			}
			if _, err := c.Write(answer(h, body)); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

func offsetsAnswer(off int64) func(protocol08.Header, []byte) []byte {
	return func(h protocol08.Header, _ []byte) []byte {
		return protocol08.AppendOffsetsResponse(nil, h.CorrelationID, []protocol08.OffsetsResult{{Topic: "t", Partition: 0, Offsets: []int64{off}}})
	}
}

func fetchAnswer(res protocol08.FetchResult) func(protocol08.Header, []byte) []byte {
	return func(h protocol08.Header, _ []byte) []byte {
		return protocol08.AppendFetchResponse(nil, h.CorrelationID, []protocol08.FetchResult{res})
	}
}

func consumer08(addr string, locates *int) *Consumer08 {
	return &Consumer08{Topic: "t", FromBeginning: true, FetchSize: 1 << 20, MaxWait: 10 * time.Millisecond, Timeout: 5 * time.Second,
		Locate: func() ([]Partition08, error) {
			*locates++
			return []Partition08{{Name: "0", Partition: 0, Leader: addr}}, nil
		}}
}

// TestConsumer08 reads two messages at logical offsets 5 and 6 (the earliest is 5), then, answered "not
// leader", looks the partition up again and goes on from offset 7; entries of an answer before the offset
// asked for (as a compressed wrapper's may be) are not handed out again.
func TestConsumer08(t *testing.T) {
	set := protocol08.AppendEntry(nil, 5, []byte("k5"), []byte("v5"))
	set = protocol08.AppendEntry(set, 6, nil, []byte("v6"))
	var asked []int64
	fetchAt := func(res protocol08.FetchResult) func(protocol08.Header, []byte) []byte {
		return func(h protocol08.Header, body []byte) []byte {
			req, err := protocol08.DecodeFetch(body)
			if err != nil || len(req.Parts) != 1 {
				t.Errorf("Fetch %+v: %v", req, err)
			} else {
				asked = append(asked, req.Parts[0].Offset)
			}
			return fetchAnswer(res)(h, body)
		}
	}
	addr := fake08(t, offsetsAnswer(5),
		fetchAt(protocol08.FetchResult{Topic: "t", HighWatermark: 7, Set: set}),
		fetchAt(protocol08.FetchResult{Topic: "t", Error: protocol.ErrNotLeaderForPartition, HighWatermark: -1}),
		fetchAt(protocol08.FetchResult{Topic: "t", HighWatermark: 8, Set: protocol08.AppendEntry(set, 7, nil, []byte("v7"))}))
	locates := 0
	c := consumer08(addr, &locates)
	defer c.Close()
	var got []string
	take := func(r Record08) error {
		got = append(got, string(r.Key)+"="+string(r.Value)+"@"+string(rune('0'+r.Offset)))
		return nil
	}
	for range 3 {
		if _, err := c.Poll(take); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, " ") != "k5=v5@5 =v6@6 =v7@7" || locates != 2 {
		t.Errorf("read %q after %d looks; want k5=v5@5 =v6@6 =v7@7 after 2 (the start and the not-leader answer)", got, locates)
	}
	if len(asked) != 3 || asked[0] != 5 || asked[1] != 7 || asked[2] != 7 {
		t.Errorf("fetched at %v, want 5, 7 and 7 again after the not-leader answer", asked)
	}
}

// TestConsumer08BadAnswers: an answer naming a partition not asked for, or an entry whose CRC does not match, is
// an error that names what was wrong; nothing of a bad set is handed out after the bad entry.
func TestConsumer08BadAnswers(t *testing.T) {
	good := protocol08.AppendEntry(nil, 0, nil, []byte("ok"))
	bad := protocol08.AppendEntry(nil, 1, nil, []byte("bad"))
	bad[len(bad)-1] ^= 0xff
	for _, c := range []struct {
		name string
		res  protocol08.FetchResult
		want string
		took int
	}{
		{"unasked partition", protocol08.FetchResult{Topic: "t", Partition: 9, Set: good}, "which was not asked", 0},
		{"bad CRC", protocol08.FetchResult{Topic: "t", Set: append(good, bad...)}, "CRC", 1},
		{"unknown error code", protocol08.FetchResult{Topic: "t", Error: protocol.ErrorCode(99)}, "t-0 at 0", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			locates := 0
			cons := consumer08(fake08(t, offsetsAnswer(0), fetchAnswer(c.res)), &locates)
			defer cons.Close()
			took := 0
			n, err := cons.Poll(func(Record08) error { took++; return nil })
			if err == nil || !strings.Contains(err.Error(), c.want) || took != c.took || n != c.took {
				t.Errorf("Poll = %d, %v after handing out %d; want an error with %q after %d", n, err, took, c.want, c.took)
			}
		})
	}
}

// TestConsumer08Relocate: with Relocate set, a partition Locate names only later (a broker's first message of
// a 0.7 topic) is read too, from its earliest offset, while the first one keeps its place.
func TestConsumer08Relocate(t *testing.T) {
	empty := fetchAnswer(protocol08.FetchResult{Topic: "t", HighWatermark: 0})
	a := fake08(t, offsetsAnswer(0), empty, empty)
	b := fake08(t, offsetsAnswer(0), fetchAnswer(protocol08.FetchResult{Topic: "t", Partition: 1, HighWatermark: 1,
		Set: protocol08.AppendEntry(nil, 0, nil, []byte("late"))}))
	locates := 0
	c := &Consumer08{Topic: "t", FromBeginning: true, FetchSize: 1 << 20, MaxWait: 10 * time.Millisecond, Timeout: 5 * time.Second,
		Relocate: time.Nanosecond,
		Locate: func() ([]Partition08, error) {
			locates++
			if locates == 1 {
				return []Partition08{{Name: "1-0", Partition: 0, Leader: a}}, nil
			}
			return []Partition08{{Name: "1-0", Partition: 0, Leader: a}, {Name: "2-1", Partition: 1, Leader: b}}, nil
		}}
	defer c.Close()
	var got []string
	for range 2 {
		if _, err := c.Poll(func(r Record08) error { got = append(got, r.Name+":"+string(r.Value)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, " ") != "2-1:late" || locates != 2 {
		t.Errorf("read %q after %d looks; want 2-1:late after 2", got, locates)
	}
}
