package protocol08

import (
	"encoding/binary"
	"strconv"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// API keys of the requests served here (0.8.0's 0–3, 0.8.1's 8–9, 0.8.2's
// 10, and KIP-35's 18).
const (
	KeyProduce          int16 = 0
	KeyFetch            int16 = 1
	KeyOffsets          int16 = 2
	KeyMetadata         int16 = 3
	KeyOffsetCommit     int16 = 8
	KeyOffsetFetch      int16 = 9
	KeyConsumerMetadata int16 = 10
	KeyAPIVersions      int16 = 18
)

// VersionRange is the versions of one request the broker serves.
type VersionRange struct {
	Key, Min, Max int16
}

// Served is what ApiVersions advertises: exactly what the broker answers.
var Served = []VersionRange{
	{KeyProduce, 0, 0},
	{KeyFetch, 0, 0},
	{KeyOffsets, 0, 0},
	{KeyMetadata, 0, 0},
	{KeyOffsetCommit, 0, 1},
	{KeyOffsetFetch, 0, 1},
	{KeyConsumerMetadata, 0, 0},
	{KeyAPIVersions, 0, 0},
}

// Supported reports whether version v of key is served.
func Supported(key, v int16) bool {
	for _, s := range Served {
		if s.Key == key {
			return v >= s.Min && v <= s.Max
		}
	}
	return false
}

// KeyName names an api_key, for logs.
func KeyName(key int16) string {
	switch key {
	case KeyProduce:
		return "Produce"
	case KeyFetch:
		return "Fetch"
	case KeyOffsets:
		return "Offsets"
	case KeyMetadata:
		return "Metadata"
	case KeyOffsetCommit:
		return "OffsetCommit"
	case KeyOffsetFetch:
		return "OffsetFetch"
	case KeyConsumerMetadata:
		return "ConsumerMetadata"
	case KeyAPIVersions:
		return "ApiVersions"
	}
	return "key " + strconv.Itoa(int(key))
}

// Header is a request's header after the api_key.
type Header struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      string
	ClientIDNull  bool
}

// ParseHeader parses the header fields that follow the api_key (rest starts
// at api_version) and returns the body after them.
func ParseHeader(key int16, rest []byte) (Header, []byte, error) {
	r := reader{b: rest, kind: KeyName(key) + " header"}
	h := Header{APIKey: key, APIVersion: r.int16("api_version"), CorrelationID: r.int32("correlation_id")}
	h.ClientID, h.ClientIDNull = r.nullableString("client_id")
	if r.err != nil {
		return h, nil, r.err
	}
	return h, rest[r.off:], nil
}

// Correlation reads the correlation id of a request whose header may not
// parse further (so that even a refused request can be answered); ok is
// false when the bytes are not there.
func Correlation(rest []byte) (int32, bool) {
	if len(rest) < 6 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(rest[2:])), true
}

// Is08 decides, from the first request of a connection, whether the
// connection speaks this protocol or 0.7's (package protocol); id is the
// int16 after the size, rest the bytes after it. The two share a port:
//
//   - api_key 18 (ApiVersions) and 10 (ConsumerMetadata), and any key above
//     0.7's and replication's 0–9, exist only here.
//   - For 0–3, a 0.8 request's next int16 is its api_version, 0 for the
//     versions served; where 0.7 has a topic name's length (PRODUCE, FETCH)
//     or a count (MULTIFETCH, MULTIPRODUCE), and a valid 0.7 request has
//     neither empty. So 0 there is 0.8, anything else 0.7.
//   - 4–9 are 0.7's OFFSETS and replication's requests, which today's
//     clients do not open a connection with; 8 and 9 are also 0.8.1's
//     OffsetCommit and OffsetFetch, and are taken as 0.8's when the rest
//     parses as a 0.8 header with version 0 or 1 followed by a group name
//     and does not parse as replication's request (protocol.DecodeRequest).
func Is08(id int16, rest []byte) bool {
	switch {
	case id == KeyAPIVersions || id == KeyConsumerMetadata || id > protocol.RequestEpochEndOffset || id < 0:
		return true
	case id <= KeyMetadata:
		return len(rest) >= 2 && binary.BigEndian.Uint16(rest) == 0
	case id == KeyOffsetCommit || id == KeyOffsetFetch:
		h, body, err := ParseHeader(id, rest)
		if err != nil || h.APIVersion < 0 || h.APIVersion > 1 {
			return false
		}
		r := reader{b: body}
		if g := r.string("group"); r.err != nil || g == "" {
			return false
		}
		if _, err := protocol.DecodeRequest(id, rest); err == nil {
			return false
		}
		return true
	}
	return false
}
