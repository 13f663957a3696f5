package protocol

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzDecodeRequest feeds arbitrary bytes to every decoder: first as a framed
// request through ReadRequest, then as the body of each request type. Nothing
// may panic; whatever decodes must re-encode to exactly the bytes it came
// from (the encoding is canonical) and decode again to the same value.
func FuzzDecodeRequest(f *testing.F) {
	for _, r := range seedRequests() {
		f.Add(r.AppendTo(nil))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		id, body, _, err := ReadRequest(bytes.NewReader(data), nil, 1<<20)
		if err == nil {
			req, derr := DecodeRequest(id, body)
			if derr == nil {
				checkRoundTrip(t, req, data[:6+len(body)])
			} else if !errors.Is(derr, ErrMalformed) {
				t.Fatalf("DecodeRequest(%d): unexpected error kind %v", id, derr)
			}
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrRequestTooLarge) &&
			!errors.Is(err, ErrUnknownRequest) && !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF {
			t.Fatalf("ReadRequest: unexpected error kind %v", err)
		}
		var d Decoder // the reusing decoder must agree with the allocating one
		for id := RequestProduce; id <= requestLast; id++ {
			req, err := DecodeRequest(id, data)
			if err != nil {
				continue
			}
			frame := req.AppendTo(nil)
			if !bytes.Equal(frame[6:], data) {
				t.Fatalf("%s: body re-encoded as %x, was %x", RequestName(id), frame[6:], data)
			}
			var again Request
			switch id {
			case RequestProduce:
				again, err = d.Produce(data)
			case RequestFetch:
				again, err = d.Fetch(data)
			case RequestMultiFetch:
				again, err = d.MultiFetch(data)
			case RequestMultiProduce:
				again, err = d.MultiProduce(data)
			case RequestOffsets:
				again, err = d.Offsets(data)
			case RequestAckedProduce:
				again, err = d.AckedProduce(data)
			case RequestReplicaFetch:
				again, err = d.ReplicaFetch(data)
			default: // decoded without a Decoder
				again, err = DecodeRequest(id, data)
			}
			if err != nil || !bytes.Equal(again.AppendTo(nil), frame) {
				t.Fatalf("%s: Decoder disagrees with DecodeRequest: %v", RequestName(id), err)
			}
		}
	})
}

func checkRoundTrip(t *testing.T, req Request, frame []byte) {
	t.Helper()
	enc := req.AppendTo(nil)
	if !bytes.Equal(enc, frame) {
		t.Fatalf("%T re-encoded as %x, frame was %x", req, enc, frame)
	}
	again, err := DecodeRequest(req.RequestID(), enc[6:])
	if err != nil || !bytes.Equal(again.AppendTo(nil), enc) {
		t.Fatalf("%T: second decode: %v", req, err)
	}
}

// seedRequests are valid requests of every kind; the committed corpus under
// testdata/fuzz/FuzzDecodeRequest holds them and some garbage.
func seedRequests() []Request {
	set := []byte{0, 0, 0, 10, 0, 0x3a, 0x7c, 0x9f, 0x46, 'h', 'e', 'l', 'l', 'o'}
	return []Request{
		ProduceRequest{Topic: "test", Partition: 0, Messages: set},
		ProduceRequest{Topic: "logs", Partition: RandomPartition, Messages: nil},
		FetchRequest{Topic: "test", Partition: 0, Offset: 0, MaxSize: 300 << 10},
		FetchRequest{Topic: "t", Partition: 2, Offset: 1 << 31, MaxSize: -1},
		MultiFetchRequest{Fetches: []FetchRequest{{Topic: "a", MaxSize: 1024}, {Topic: "b", Partition: 1, Offset: 14, MaxSize: 1}}},
		MultiFetchRequest{},
		MultiProduceRequest{Produces: []ProduceRequest{{Topic: "a", Messages: set}, {Topic: "b", Partition: 3, Messages: set}}},
		OffsetsRequest{Topic: "test", Partition: 0, Time: OffsetsLatest, MaxNumOffsets: 1},
		OffsetsRequest{Topic: "test", Partition: 1, Time: OffsetsEarliest, MaxNumOffsets: 10},
		AckedProduceRequest{Acks: AcksAll, TimeoutMs: 10000, Produces: []ProduceRequest{{Topic: "r", Partition: 2, Messages: set}}},
		MetadataRequest{Topics: []string{"r", "test"}},
		ReplicaFetchRequest{ReplicaID: 2, MaxWaitMs: 500, MinBytes: 1, Fetches: []FetchRequest{{Topic: "r", Partition: 0, Offset: 209, MaxSize: 1 << 20}}},
		LeaderAndISRRequest{ControllerID: 1, ControllerEpoch: 3, Brokers: []BrokerAddr{{ID: 1, Host: "h", Port: 9093}},
			Partitions: []PartitionState{{Topic: "r", Partition: 0, Leader: 1, LeaderEpoch: 7, Version: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 0}}}},
		EpochEndOffsetRequest{ReplicaID: 2, Partitions: []EpochQuery{{Topic: "r", Partition: 0, Epoch: 7}}},
	}
}
