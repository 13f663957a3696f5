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
// grow. It is AppendProduceHeader, the set, and Finish.
func (p ProduceRequest) AppendTo(dst []byte) []byte {
	dst, f := AppendProduceHeader(dst, p.Topic, p.Partition)
	dst = append(dst, p.Messages...)
	return f.Finish(dst)
}

// ProduceFrame is a PRODUCE being framed in place at the end of a caller's
// buffer: AppendProduceHeader writes everything up to the message set with
// the two sizes left open, the caller appends the set straight into the
// buffer (message.AppendV0 per message, no copy through a second buffer),
// and Finish writes the sizes. ProduceRequest.AppendTo is the same three
// steps, so a client framing in place sends exactly its bytes.
type ProduceFrame struct {
	start int // offset of the request's size field in the buffer
	set   int // offset of the message set's size field
}

// AppendProduceHeader appends a PRODUCE's size, id, topic, partition and set
// size, the sizes as placeholders, and returns the frame to Finish once the
// message set has been appended after them. It allocates only if dst must
// grow.
func AppendProduceHeader(dst []byte, topic string, partition int32) ([]byte, ProduceFrame) {
	f := ProduceFrame{start: len(dst)}
	dst = appendRequestHeader(dst, RequestProduce, 0)
	dst, f.set = appendProduceHead(dst, topic, partition)
	return dst, f
}

// Finish writes the sizes of the request and of its message set, which is
// everything appended to dst after AppendProduceHeader, and returns dst.
func (f ProduceFrame) Finish(dst []byte) []byte {
	finishProduceSet(dst, f.set)
	finishRequest(dst, f.start)
	return dst
}

// appendBody appends a whole PRODUCE body (as MULTIPRODUCE and
// ACKED_PRODUCE hold it).
func (p ProduceRequest) appendBody(dst []byte) []byte {
	dst, set := appendProduceHead(dst, p.Topic, p.Partition)
	dst = append(dst, p.Messages...)
	finishProduceSet(dst, set)
	return dst
}

// appendProduceHead appends a PRODUCE body up to its message set, with a
// placeholder set size, and returns where that size field is.
func appendProduceHead(dst []byte, topic string, partition int32) ([]byte, int) {
	dst = appendString(dst, topic)
	dst = binary.BigEndian.AppendUint32(dst, uint32(partition))
	return append(dst, 0, 0, 0, 0), len(dst)
}

// finishProduceSet writes the size of the message set that follows the size
// field at offset at, up to the end of dst.
func finishProduceSet(dst []byte, at int) {
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
}

// Produce parses a PRODUCE body, interning topic names (a nil d interns
// nothing). Messages is a sub-slice of body: the message set is not copied
// (and not validated: the log checks every CRC before it appends).
func (d *Decoder) Produce(body []byte) (ProduceRequest, error) {
	// A well-formed body, what a producer sends at every message of batch
	// 1, is read in one pass; any other takes the reader, which says what
	// is wrong with it. Both accept exactly the same bodies
	// (TestProduceFastPath).
	if len(body) >= produceMinBody {
		tl := int(int16(binary.BigEndian.Uint16(body)))
		if set := produceMinBody + tl; tl >= 0 && set <= len(body) &&
			int64(int32(binary.BigEndian.Uint32(body[set-4:]))) == int64(len(body)-set) {
			return ProduceRequest{
				Topic:     d.topic(body[2 : 2+tl]),
				Partition: int32(binary.BigEndian.Uint32(body[2+tl:])),
				Messages:  body[set:len(body):len(body)],
			}, nil
		}
	}
	return d.produceSlow(body)
}

// produceSlow is Produce through the reader.
func (d *Decoder) produceSlow(body []byte) (ProduceRequest, error) {
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
