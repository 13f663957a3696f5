package protocol08

import (
	"fmt"
	"math"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// Fetch v0:
//
//	int32 replica_id | int32 max_wait_ms | int32 min_bytes |
//	[string topic | [int32 partition | int64 offset | int32 max_bytes]]
//
// replica_id is -1 for a client. The broker answers once min_bytes are there
// to send, or max_wait_ms passed:
//
//	[string topic | [int32 partition | int16 error | int64 high_watermark | int32 set_size | message set]]
//
// offset and high_watermark are logical offsets.

// FetchRequest is a decoded Fetch v0.
type FetchRequest struct {
	ReplicaID int32
	MaxWaitMs int32
	MinBytes  int32
	Parts     []FetchPart
}

// FetchPart is one partition asked for.
type FetchPart struct {
	Topic     string
	Partition int32
	Offset    int64
	MaxBytes  int32
}

// DecodeFetch parses a Fetch v0 body.
func DecodeFetch(body []byte) (FetchRequest, error) {
	r := reader{b: body, kind: "Fetch"}
	f := FetchRequest{ReplicaID: r.int32("replica_id"), MaxWaitMs: r.int32("max_wait_ms"), MinBytes: r.int32("min_bytes")}
	nt := r.count("topic", 2+4)
	for i := 0; i < nt && r.err == nil; i++ {
		topic := r.string("topic")
		np := r.count("partition", 4+8+4)
		for j := 0; j < np && r.err == nil; j++ {
			f.Parts = append(f.Parts, FetchPart{Topic: topic, Partition: r.int32("partition"),
				Offset: r.int64("offset"), MaxBytes: r.int32("max_bytes")})
		}
	}
	return f, r.end()
}

// FetchResult is one partition's answer; Set is a 0.8 message set, or
// the entries after the Sent ones when Sent is not 0.
type FetchResult struct {
	Topic         string
	Partition     int32
	Error         protocol.ErrorCode
	HighWatermark int64
	Set           []byte
	// Sent is the bytes of the set before Set that WriteFetchResponse's
	// send writes: a broker's sendfile of entries kept on disk.
	Sent int64
}

// AppendFetchResponse appends a Fetch v0 answer (results of one topic
// adjacent, none with Sent).
func AppendFetchResponse(dst []byte, correlationID int32, results []FetchResult) []byte {
	WriteFetchResponse(nil, correlationID, results, func(p []byte, _ bool) error {
		dst = append(dst, p...)
		return nil
	}, nil)
	return dst
}

// WriteFetchResponse hands a Fetch v0 answer to write in pieces, without
// copying the sets: the bytes before each set (built in scratch, reused),
// then the set itself; more says whether pieces follow. A result with Sent
// bytes has them written by send(i, more), i its index in results, before
// its Set. So a broker sends the sets from where they were built or kept.
func WriteFetchResponse(scratch []byte, correlationID int32, results []FetchResult, write func(p []byte, more bool) error, send func(i int, more bool) error) error {
	size := int64(4 + 4)
	for i, r := range results {
		if i == 0 || results[i-1].Topic != r.Topic {
			size += 2 + int64(len(r.Topic)) + 4
		}
		size += 4 + 2 + 8 + 4 + int64(len(r.Set)) + r.Sent
	}
	if size > math.MaxInt32 {
		return fmt.Errorf("protocol08: a Fetch answer of %d bytes does not fit its int32 size", size)
	}
	head := appendInt32(scratch[:0], int32(size))
	head = appendInt32(head, correlationID)
	topics := int32(0)
	for i, r := range results {
		if i == 0 || results[i-1].Topic != r.Topic {
			topics++
		}
	}
	head = appendInt32(head, topics)
	for i := 0; i < len(results); {
		t := results[i].Topic
		n := int32(0)
		for j := i; j < len(results) && results[j].Topic == t; j++ {
			n++
		}
		head = appendString(head, t)
		head = appendInt32(head, n)
		for ; i < len(results) && results[i].Topic == t; i++ {
			r := results[i]
			head = appendInt32(head, r.Partition)
			head = appendInt16(head, int16(r.Error))
			head = appendInt64(head, r.HighWatermark)
			head = appendInt32(head, int32(int64(len(r.Set))+r.Sent))
			if len(r.Set) > 0 || r.Sent > 0 {
				if err := write(head, true); err != nil {
					return err
				}
				head = head[:0]
			}
			if r.Sent > 0 {
				if err := send(i, len(r.Set) > 0 || i+1 < len(results)); err != nil {
					return err
				}
			}
			if len(r.Set) > 0 {
				if err := write(r.Set, i+1 < len(results)); err != nil {
					return err
				}
			}
		}
	}
	if len(head) > 0 {
		return write(head, false)
	}
	return nil
}
