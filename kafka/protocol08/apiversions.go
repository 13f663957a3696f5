package protocol08

import "github.com/kafkarepro/kafkarepro/kafka/protocol"

// ErrUnsupportedVersion (35) answers an ApiVersions of a version newer than
// 0, in version 0's layout, as Kafka's brokers from 2.4 on do; the client
// then asks again at a version it shares.
const ErrUnsupportedVersion protocol.ErrorCode = 35

// ApiVersions v0 (Kafka 0.10's KIP-35): an empty body. The answer lists every
// served key with its versions:
//
//	int16 error | [int16 api_key | int16 min_version | int16 max_version]
//
// A request of a later version may carry a body of its own (v3 has client
// software name and version); it is not read, since the answer is v0's.

// AppendAPIVersionsResponse appends the answer to h: error 0 for version 0,
// ErrUnsupportedVersion (with the same list) for any other.
func AppendAPIVersionsResponse(dst []byte, h Header) []byte {
	dst, start := beginResponse(dst, h.CorrelationID)
	code := protocol.ErrNone
	if h.APIVersion != 0 {
		code = ErrUnsupportedVersion
	}
	dst = appendInt16(dst, int16(code))
	dst = appendInt32(dst, int32(len(Served)))
	for _, s := range Served {
		dst = appendInt16(dst, s.Key)
		dst = appendInt16(dst, s.Min)
		dst = appendInt16(dst, s.Max)
	}
	return endResponse(dst, start)
}
