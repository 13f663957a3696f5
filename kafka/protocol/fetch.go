package protocol

import "encoding/binary"

// FetchRequest (id 1) pulls up to MaxSize bytes of one partition's log,
// starting at the byte offset Offset (§3.1: a message is addressed by its
// logical offset in the log):
//
//	topic | int32 partition | int64 offset | int32 maxSize
//
// The response is AppendResponseHeader's header followed by raw log bytes,
// which may end in the middle of a message; the consumer keeps the whole
// messages and fetches again from the first byte it did not use.
//
// A negative MaxSize decodes fine: the broker answers it with
// ErrInvalidFetchSize.
type FetchRequest struct {
	Topic     string
	Partition int32
	Offset    int64
	MaxSize   int32
}

const fetchMinBody = 2 + 4 + 8 + 4

// RequestID returns RequestFetch.
func (f FetchRequest) RequestID() int16 { return RequestFetch }

func (f FetchRequest) bodySize() int { return fetchMinBody + len(f.Topic) }

// AppendTo appends the framed request to dst.
func (f FetchRequest) AppendTo(dst []byte) []byte {
	dst = appendRequestHeader(dst, RequestFetch, f.bodySize())
	return f.appendBody(dst)
}

func (f FetchRequest) appendBody(dst []byte) []byte {
	dst = appendString(dst, f.Topic)
	dst = binary.BigEndian.AppendUint32(dst, uint32(f.Partition))
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.Offset))
	return binary.BigEndian.AppendUint32(dst, uint32(f.MaxSize))
}

// Fetch parses a FETCH body, interning topic names (a nil d interns nothing).
func (d *Decoder) Fetch(body []byte) (FetchRequest, error) {
	r := reader{b: body, kind: "FETCH"}
	f := readFetch(&r, d)
	if err := r.end(); err != nil {
		return FetchRequest{}, err
	}
	return f, nil
}

func readFetch(r *reader, d *Decoder) FetchRequest {
	var f FetchRequest
	f.Topic = r.topic(d)
	f.Partition = r.int32("partition")
	f.Offset = r.int64("offset")
	f.MaxSize = r.int32("max size")
	return f
}
