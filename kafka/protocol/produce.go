package protocol

import "encoding/binary"

// RandomPartition in a PRODUCE asks the broker to pick a partition of the
// topic at random (docs/PROTOCOL.md §4, §7: producers configured with a broker list).
const RandomPartition int32 = -1

// ProduceRequest (id 0) appends one message set to one partition:
//
//	topic | int32 partition | int32 set size | message set
//
// It has no response: §5, "the Kafka producer currently doesn't wait for
// acknowledgements from the broker".
type ProduceRequest struct {
	Topic     string
	Partition int32  // or RandomPartition
	Messages  []byte // a message set, exactly as it will be stored (§3.1)
}

// produceMinBody is the size of a PRODUCE body with an empty topic and set.
const produceMinBody = 2 + 4 + 4

// RequestID returns RequestProduce.
func (p ProduceRequest) RequestID() int16 { return RequestProduce }

// bodySize is the encoded size of the body (after the id).
func (p ProduceRequest) bodySize() int { return produceMinBody + len(p.Topic) + len(p.Messages) }

// AppendTo appends the framed request to dst. It allocates only if dst must
// grow.
func (p ProduceRequest) AppendTo(dst []byte) []byte {
	dst = appendRequestHeader(dst, RequestProduce, p.bodySize())
	return p.appendBody(dst)
}

func (p ProduceRequest) appendBody(dst []byte) []byte {
	dst = appendString(dst, p.Topic)
	dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(p.Messages)))
	return append(dst, p.Messages...)
}

// DecodeProduce parses a PRODUCE body. Messages is a sub-slice of body: the
// message set is not copied (and not validated: the log checks every CRC
// before it appends).
func DecodeProduce(body []byte) (ProduceRequest, error) {
	var d *Decoder
	return d.Produce(body)
}

// Produce is DecodeProduce with interned topic names.
func (d *Decoder) Produce(body []byte) (ProduceRequest, error) {
	r := reader{b: body, kind: "PRODUCE"}
	p := readProduce(&r, d)
	if err := r.end(); err != nil {
		return ProduceRequest{}, err
	}
	return p, nil
}

func readProduce(r *reader, d *Decoder) ProduceRequest {
	var p ProduceRequest
	p.Topic = r.topic(d)
	p.Partition = r.int32("partition")
	n := r.int32("message set size")
	if r.err != nil {
		return p
	}
	if n < 0 {
		r.fail("negative message set size", int64(n))
		return p
	}
	p.Messages = r.bytes(int(n), "message set")
	return p
}
