package protocol

import "encoding/binary"

// ReplicaFetchRequest (id 7) is a follower fetching from its leader
// (docs/PROTOCOL.md §10): MULTIFETCH with the follower's broker id and a wait.
//
//	int32 replica id | int32 max wait ms | int32 min bytes | int16 count | count FETCH bodies
//
// Each FETCH body's offset is the follower's log end offset, which is how the
// leader learns how far the follower has got. The leader holds the request
// until MinBytes bytes are there to send or MaxWaitMs has passed. The answer
// is the response header (error 0) and
//
//	int16 count | count × (topic | int32 partition | int16 error | int64 high watermark |
//	                       int16 n | n × (int32 leader epoch | int64 start offset) |
//	                       int32 size | size bytes of the leader's log)
//
// The epochs are the leader's (epoch, start) pairs that start inside the
// returned bytes, plus the one the first byte belongs to: the follower
// records them with the bytes (leader epochs, docs/PROTOCOL.md §10). The log
// bytes go from the leader's segment file to the socket with sendfile.
type ReplicaFetchRequest struct {
	ReplicaID int32
	MaxWaitMs int32
	MinBytes  int32
	Fetches   []FetchRequest
}

const replicaFetchMinBody = 4 + 4 + 4 + 2

// RequestID returns RequestReplicaFetch.
func (f ReplicaFetchRequest) RequestID() int16 { return RequestReplicaFetch }

// AppendTo appends the framed request to dst; it allocates only if dst must
// grow.
func (f ReplicaFetchRequest) AppendTo(dst []byte) []byte {
	size := replicaFetchMinBody
	for i := range f.Fetches {
		size += f.Fetches[i].bodySize()
	}
	dst = appendRequestHeader(dst, RequestReplicaFetch, size)
	dst = binary.BigEndian.AppendUint32(dst, uint32(f.ReplicaID))
	dst = binary.BigEndian.AppendUint32(dst, uint32(f.MaxWaitMs))
	dst = binary.BigEndian.AppendUint32(dst, uint32(f.MinBytes))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(f.Fetches)))
	for i := range f.Fetches {
		dst = f.Fetches[i].appendBody(dst)
	}
	return dst
}

// ReplicaFetch decodes a REPLICA_FETCH body reusing d's memory; a nil d
// allocates.
func (d *Decoder) ReplicaFetch(body []byte) (ReplicaFetchRequest, error) {
	r := reader{b: body, kind: "REPLICA_FETCH"}
	f := ReplicaFetchRequest{ReplicaID: r.int32("replica id"), MaxWaitMs: r.int32("max wait"), MinBytes: r.int32("min bytes")}
	f.Fetches = d.readFetches(&r)
	if err := r.end(); err != nil {
		return ReplicaFetchRequest{}, err
	}
	return f, nil
}

// EpochEntry is one (leader epoch, start offset) pair of a replica's epoch
// history: the first message written in that epoch has offset Start.
type EpochEntry struct {
	Epoch int32
	Start int64
}

// ReplicaFetchPartSize is the size of one part's header in a REPLICA_FETCH
// answer, without the log bytes.
func ReplicaFetchPartSize(topic string, epochs int) int {
	return 2 + len(topic) + 4 + 2 + 8 + 2 + epochs*(4+8) + 4
}

// AppendReplicaFetchPart appends one part's header; setSize bytes of log
// follow it on the wire.
func AppendReplicaFetchPart(dst []byte, topic string, partition int32, code ErrorCode, hw int64, epochs []EpochEntry, setSize int) []byte {
	dst = appendString(dst, topic)
	dst = binary.BigEndian.AppendUint32(dst, uint32(partition))
	dst = binary.BigEndian.AppendUint16(dst, uint16(code))
	dst = binary.BigEndian.AppendUint64(dst, uint64(hw))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(epochs)))
	for _, e := range epochs {
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.Epoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.Start))
	}
	return binary.BigEndian.AppendUint32(dst, uint32(setSize))
}

// ReplicaFetchPart is one partition's answer to a REPLICA_FETCH. Topic, Set
// and Epochs alias the response buffer.
type ReplicaFetchPart struct {
	Topic         []byte
	Partition     int32
	Error         ErrorCode
	HighWatermark int64
	Epochs        []EpochEntry // valid until the next part is decoded
	Set           []byte
}

// DecodeReplicaFetchResponse walks the payload of a REPLICA_FETCH answer and
// calls fn for each part in order, decoded into p, whose Epochs slice is
// reused (keep p between calls). It allocates nothing once p.Epochs is large
// enough.
func DecodeReplicaFetchResponse(payload []byte, p *ReplicaFetchPart, fn func(i int, p *ReplicaFetchPart) error) error {
	r := reader{b: payload, kind: "REPLICA_FETCH response"}
	n := r.count(2 + 4 + 2 + 8 + 2 + 4)
	scratch := p.Epochs
	for i := 0; i < n && r.err == nil; i++ {
		tn := r.int16("topic length")
		if r.err == nil && tn < 0 {
			r.fail("negative topic length", int64(tn))
		}
		p.Topic = r.bytes(int(tn), "topic")
		p.Partition = r.int32("partition")
		p.Error = ErrorCode(r.int16("error"))
		p.HighWatermark = r.int64("high watermark")
		ne := r.count(4 + 8)
		scratch = scratch[:0]
		for j := 0; j < ne && r.err == nil; j++ {
			scratch = append(scratch, EpochEntry{Epoch: r.int32("epoch"), Start: r.int64("epoch start")})
		}
		p.Epochs = scratch
		size := r.int32("set size")
		if r.err == nil && size < 0 {
			r.fail("negative set size", int64(size))
		}
		p.Set = r.bytes(int(size), "log bytes")
		if r.err != nil {
			break
		}
		if err := fn(i, p); err != nil {
			return err
		}
	}
	return r.end()
}
