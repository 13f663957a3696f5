package protocol

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// The requests of replication (docs/PROTOCOL.md §10), first as fixed bytes
// with the arithmetic written out, then as round trips of requests and
// answers.

func TestAckedProduceFixedBytes(t *testing.T) {
	set := []byte{0, 0, 0, 6, 0, 0x8c, 0xdc, 0x1b, 0x16, 'x'} // one magic-0 message, payload "x"
	req := AckedProduceRequest{Acks: AcksAll, TimeoutMs: 1000, Produces: []ProduceRequest{{Topic: "t", Partition: 2, Messages: set}}}
	// size = 2 (id) + 2 (acks) + 4 (timeout) + 2 (count) + [2 + 1 (topic) + 4 (partition) + 4 (set size) + 10 (set)] = 31
	want := []byte{
		0, 0, 0, 31, // size
		0, 5, // id: ACKED_PRODUCE
		0xff, 0xff, // acks -1
		0, 0, 0x03, 0xe8, // timeout 1000 ms
		0, 1, // one body
		0, 1, 't', // topic
		0, 0, 0, 2, // partition
		0, 0, 0, 10, // set size
	}
	want = append(want, set...)
	if got := req.AppendTo(nil); !bytes.Equal(got, want) {
		t.Fatalf("AppendTo:\n got %x\nwant %x", got, want)
	}
	got, err := DecodeRequest(RequestAckedProduce, want[6:])
	if err != nil || !reflect.DeepEqual(got, req) {
		t.Fatalf("decode: %+v, %v", got, err)
	}
	// The answer: header (size 2 + 2 + [2+1+4+2+8] = 21, error 0), one result.
	resp := AppendAckedProduceResponse(nil, []ProduceResult{{Topic: "t", Partition: 2, Error: ErrNone, Offset: 418}})
	wantResp := []byte{0, 0, 0, 21, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 2, 0, 0 /* error */, 0, 0, 0, 0, 0, 0, 0x01, 0xa2 /* offset 418 */}
	if !bytes.Equal(resp, wantResp) {
		t.Fatalf("response:\n got %x\nwant %x", resp, wantResp)
	}
	res, err := DecodeAckedProduceResponse(nil, resp[6:])
	if err != nil || len(res) != 1 || res[0] != (ProduceResult{Topic: "t", Partition: 2, Offset: 418}) {
		t.Fatalf("decode response: %+v, %v", res, err)
	}
}

func TestAckedProduceRefusesBadAcks(t *testing.T) {
	body := AckedProduceRequest{Acks: 2}.AppendTo(nil)[6:]
	if _, err := DecodeRequest(RequestAckedProduce, body); !errors.Is(err, ErrMalformed) {
		t.Fatalf("acks 2: err = %v, want ErrMalformed", err)
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	m := &MetadataResponse{
		Brokers: []BrokerAddr{{ID: 0, Host: "localhost", Port: 9092}, {ID: 1, Host: "h1", Port: 9093}},
		Topics: []TopicMetadata{
			{Topic: "r", Partitions: []PartitionMetadata{{Partition: 0, Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2, 0}, ISR: []int32{1, 0}}}},
			{Error: ErrUnknownTopicOrPartition, Topic: "old"},
		},
	}
	resp := AppendMetadataResponse(nil, m)
	code, payload, _, err := ReadResponse(bytes.NewReader(resp), nil)
	if err != nil || code != ErrNone {
		t.Fatal(code, err)
	}
	got, err := DecodeMetadataResponse(payload)
	if err != nil || !reflect.DeepEqual(&got, m) {
		t.Fatalf("got %+v, %v; want %+v", got, err, m)
	}
	req := MetadataRequest{Topics: []string{"r", "old"}}
	if back, err := DecodeRequest(RequestMetadata, frame(t, req)); err != nil || !reflect.DeepEqual(back, req) {
		t.Fatalf("request: %+v, %v", back, err)
	}
}

func TestReplicaFetchRoundTrip(t *testing.T) {
	req := ReplicaFetchRequest{ReplicaID: 2, MaxWaitMs: 500, MinBytes: 1,
		Fetches: []FetchRequest{{Topic: "r", Partition: 0, Offset: 627, MaxSize: 1 << 20}, {Topic: "s", Partition: 3, Offset: 0, MaxSize: 10}}}
	var d Decoder
	back, err := d.ReplicaFetch(frame(t, req))
	if err != nil || !reflect.DeepEqual(back, req) {
		t.Fatalf("request: %+v, %v", back, err)
	}
	set := []byte("0123456789")
	epochs := []EpochEntry{{Epoch: 3, Start: 0}, {Epoch: 4, Start: 632}}
	payload := []byte{0, 2}
	payload = AppendReplicaFetchPart(payload, "r", 0, ErrNone, 630, epochs, len(set))
	if n := len(payload) - 2; n != ReplicaFetchPartSize("r", len(epochs)) {
		t.Fatalf("part header %d bytes, ReplicaFetchPartSize says %d", n, ReplicaFetchPartSize("r", len(epochs)))
	}
	payload = append(payload, set...)
	payload = AppendReplicaFetchPart(payload, "s", 3, ErrNotLeaderForPartition, -1, nil, 0)
	var seen []string
	err = DecodeReplicaFetchResponse(payload, &ReplicaFetchPart{}, func(i int, p *ReplicaFetchPart) error {
		switch i {
		case 0:
			if string(p.Topic) != "r" || p.HighWatermark != 630 || !reflect.DeepEqual(p.Epochs, epochs) || string(p.Set) != "0123456789" {
				t.Errorf("part 0: %+v", p)
			}
		case 1:
			if string(p.Topic) != "s" || p.Partition != 3 || p.Error != ErrNotLeaderForPartition || len(p.Set) != 0 {
				t.Errorf("part 1: %+v", p)
			}
		}
		seen = append(seen, string(p.Topic))
		return nil
	})
	if err != nil || len(seen) != 2 {
		t.Fatalf("decoded %v, %v", seen, err)
	}
	if err := DecodeReplicaFetchResponse(payload[:len(payload)-3], &ReplicaFetchPart{}, func(int, *ReplicaFetchPart) error { return nil }); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated answer: err = %v, want ErrMalformed", err)
	}
}

func TestLeaderAndISRRoundTrip(t *testing.T) {
	req := LeaderAndISRRequest{ControllerID: 1, ControllerEpoch: 4, BrokerEpoch: 1 << 40, Brokers: []BrokerAddr{{ID: 1, Host: "h", Port: 1}},
		Partitions: []PartitionState{{Topic: "r", Partition: 0, Leader: 1, LeaderEpoch: 2, Version: 5, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 0}},
			{Topic: "r", Partition: 1, Leader: -1, LeaderEpoch: 9, ISR: []int32{2}, Replicas: []int32{2}}}}
	back, err := DecodeRequest(RequestLeaderAndISR, frame(t, req))
	if err != nil || !reflect.DeepEqual(back, req) {
		t.Fatalf("request: %+v, %v", back, err)
	}
	parts := []PartitionError{{Topic: "r", Partition: 0}, {Topic: "r", Partition: 1, Error: ErrStaleLeaderEpoch}}
	code, payload, _, err := ReadResponse(bytes.NewReader(AppendPartitionErrors(nil, ErrStaleControllerEpoch, parts)), nil)
	if err != nil || code != ErrStaleControllerEpoch {
		t.Fatal(code, err)
	}
	if got, err := DecodePartitionErrors(payload); err != nil || !reflect.DeepEqual(got, parts) {
		t.Fatalf("answer: %+v, %v", got, err)
	}
}

func TestEpochEndOffsetRoundTrip(t *testing.T) {
	req := EpochEndOffsetRequest{ReplicaID: 0, Partitions: []EpochQuery{{Topic: "r", Partition: 0, Epoch: 3}}}
	back, err := DecodeRequest(RequestEpochEndOffset, frame(t, req))
	if err != nil || !reflect.DeepEqual(back, req) {
		t.Fatalf("request: %+v, %v", back, err)
	}
	ends := []EpochEnd{{Topic: "r", Partition: 0, Epoch: 3, EndOffset: 627}, {Topic: "r", Partition: 1, Error: ErrNotLeaderForPartition, Epoch: -1, EndOffset: -1}}
	_, payload, _, err := ReadResponse(bytes.NewReader(AppendEpochEndResponse(nil, ends)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeEpochEndResponse(payload); err != nil || !reflect.DeepEqual(got, ends) {
		t.Fatalf("answer: %+v, %v", got, err)
	}
}

func TestReplicationRequestsAreRead(t *testing.T) {
	for _, req := range []Request{MetadataRequest{}, EpochEndOffsetRequest{}, ReplicaFetchRequest{}} {
		id, _, _, err := ReadRequest(bytes.NewReader(req.AppendTo(nil)), nil, 0)
		if err != nil || id != req.RequestID() {
			t.Errorf("%s: ReadRequest: id %d, %v", RequestName(req.RequestID()), id, err)
		}
	}
}
