package protocol08

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

// The client's side, for tests and tools: requests framed with their
// header, responses read and decoded (the layouts are in each request's
// file). Request bodies are built with the Append*Body functions.

// AppendRequest appends a whole request: size, header h, body.
func AppendRequest(dst []byte, h Header, body []byte) []byte {
	dst, start := beginRequest(dst, h)
	dst = append(dst, body...)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// AppendProduceBody appends a Produce v0 body with one set per part.
func AppendProduceBody(dst []byte, acks int16, timeoutMs int32, parts []ProducePart) []byte {
	dst = appendInt16(dst, acks)
	dst = appendInt32(dst, timeoutMs)
	return groupByTopic(dst, len(parts), func(i int) string { return parts[i].Topic }, func(dst []byte, i int) []byte {
		dst = appendInt32(dst, parts[i].Partition)
		return appendBytes(dst, parts[i].Set)
	})
}

// AppendFetchBody appends a Fetch v0 body of a client (replica_id -1).
func AppendFetchBody(dst []byte, maxWaitMs, minBytes int32, parts []FetchPart) []byte {
	dst = appendInt32(dst, -1)
	dst = appendInt32(dst, maxWaitMs)
	dst = appendInt32(dst, minBytes)
	return groupByTopic(dst, len(parts), func(i int) string { return parts[i].Topic }, func(dst []byte, i int) []byte {
		dst = appendInt32(dst, parts[i].Partition)
		dst = appendInt64(dst, parts[i].Offset)
		return appendInt32(dst, parts[i].MaxBytes)
	})
}

// AppendOffsetsBody appends an Offsets v0 body of a client.
func AppendOffsetsBody(dst []byte, parts []OffsetsPart) []byte {
	dst = appendInt32(dst, -1)
	return groupByTopic(dst, len(parts), func(i int) string { return parts[i].Topic }, func(dst []byte, i int) []byte {
		dst = appendInt32(dst, parts[i].Partition)
		dst = appendInt64(dst, parts[i].Time)
		return appendInt32(dst, parts[i].MaxOffsets)
	})
}

// AppendMetadataBody appends a Metadata v0 body.
func AppendMetadataBody(dst []byte, topics []string) []byte {
	dst = appendInt32(dst, int32(len(topics)))
	for _, t := range topics {
		dst = appendString(dst, t)
	}
	return dst
}

// ReadResponse reads one response (at most maxSize bytes) and returns its
// correlation id and body, in memory of its own.
func ReadResponse(r io.Reader, maxSize int) (int32, []byte, error) {
	corr, body, _, err := ReadResponseInto(r, nil, maxSize)
	return corr, body, err
}

// ReadResponseInto is ReadResponse reading into buf, grown when the
// response is larger; it returns the buffer to pass next time, so that a
// client reading many responses allocates once.
func ReadResponseInto(r io.Reader, buf []byte, maxSize int) (corr int32, body, newBuf []byte, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, buf, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 4 || n > maxSize {
		return 0, nil, buf, fmt.Errorf("%w: response size %d", ErrMalformed, n)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	b := buf[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, buf, err
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:], buf, nil
}

// topicParts walks [string topic | [part]] calling part for each partition.
func topicParts(r *reader, minPart int, part func(topic string)) {
	nt := r.count("topic", 2+4)
	for i := 0; i < nt && r.err == nil; i++ {
		t := r.string("topic")
		np := r.count("partition", minPart)
		for j := 0; j < np && r.err == nil; j++ {
			part(t)
		}
	}
}

// DecodeProduceResponse decodes a Produce v0 answer.
func DecodeProduceResponse(body []byte) ([]ProduceResult, error) {
	r := reader{b: body, kind: "Produce response"}
	var out []ProduceResult
	topicParts(&r, 14, func(t string) {
		out = append(out, ProduceResult{Topic: t, Partition: r.int32("partition"), Error: errCode(r.int16("error")), Offset: r.int64("offset")})
	})
	return out, r.end()
}

// DecodeFetchResponse decodes a Fetch v0 answer; sets are sub-slices of body.
func DecodeFetchResponse(body []byte) ([]FetchResult, error) {
	r := reader{b: body, kind: "Fetch response"}
	var out []FetchResult
	topicParts(&r, 18, func(t string) {
		res := FetchResult{Topic: t, Partition: r.int32("partition"), Error: errCode(r.int16("error")), HighWatermark: r.int64("high_watermark")}
		res.Set = r.bytes("message set")
		out = append(out, res)
	})
	return out, r.end()
}

// DecodeOffsetsResponse decodes an Offsets v0 answer.
func DecodeOffsetsResponse(body []byte) ([]OffsetsResult, error) {
	r := reader{b: body, kind: "Offsets response"}
	var out []OffsetsResult
	topicParts(&r, 10, func(t string) {
		res := OffsetsResult{Topic: t, Partition: r.int32("partition"), Error: errCode(r.int16("error"))}
		n := r.count("offset", 8)
		for k := 0; k < n; k++ {
			res.Offsets = append(res.Offsets, r.int64("offset"))
		}
		out = append(out, res)
	})
	return out, r.end()
}

// DecodeAPIVersionsResponse decodes an ApiVersions v0 answer.
func DecodeAPIVersionsResponse(body []byte) (errorCode int16, served []VersionRange, err error) {
	r := reader{b: body, kind: "ApiVersions response"}
	errorCode = r.int16("error")
	n := r.count("api", 6)
	for i := 0; i < n; i++ {
		served = append(served, VersionRange{r.int16("api_key"), r.int16("min_version"), r.int16("max_version")})
	}
	return errorCode, served, r.end()
}

// DecodeMetadataResponse decodes a Metadata v0 answer.
func DecodeMetadataResponse(body []byte) ([]Broker, []TopicMetadata, error) {
	r := reader{b: body, kind: "Metadata response"}
	var brokers []Broker
	nb := r.count("broker", 10)
	for i := 0; i < nb && r.err == nil; i++ {
		brokers = append(brokers, Broker{NodeID: r.int32("node_id"), Host: r.string("host"), Port: r.int32("port")})
	}
	var topics []TopicMetadata
	nt := r.count("topic", 8)
	for i := 0; i < nt && r.err == nil; i++ {
		tm := TopicMetadata{Error: errCode(r.int16("error")), Topic: r.string("topic")}
		np := r.count("partition", 18)
		for j := 0; j < np && r.err == nil; j++ {
			pm := PartitionMetadata{Error: errCode(r.int16("error")), Partition: r.int32("partition"), Leader: r.int32("leader")}
			pm.Replicas = readInt32s(&r, "replica")
			pm.ISR = readInt32s(&r, "isr")
			tm.Partitions = append(tm.Partitions, pm)
		}
		topics = append(topics, tm)
	}
	return brokers, topics, r.end()
}

func readInt32s(r *reader, what string) []int32 {
	n := r.count(what, 4)
	out := make([]int32, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.int32(what))
	}
	return out
}

// Call sends one request to addr on a connection of its own, closed after, and returns the answer's body
// (at most maxSize bytes); the whole exchange must take less than timeout.
func Call(addr string, timeout time.Duration, h Header, body []byte, maxSize int) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(AppendRequest(nil, h, body)); err != nil {
		return nil, fmt.Errorf("%s to %s: %w", KeyName(h.APIKey), addr, err)
	}
	corr, resp, err := ReadResponse(c, maxSize)
	if err != nil {
		return nil, fmt.Errorf("%s answer from %s: %w", KeyName(h.APIKey), addr, err)
	}
	if corr != h.CorrelationID {
		return nil, fmt.Errorf("%w: %s answer from %s has correlation id %d, not %d", ErrMalformed, KeyName(h.APIKey), addr, corr, h.CorrelationID)
	}
	return resp, nil
}
