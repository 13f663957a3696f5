// Package messagetest holds fixtures for the tests of the packages that
// store and read message sets: compressed wrappers (docs/PROTOCOL.md §2)
// whose own CRC is right, so that only unpacking them shows what is wrong.
// A broker must refuse each at produce (kafka/broker), the log must refuse
// each in Append and keep everything else through recovery (kafka/log),
// and message.Unpack names the reason (kafka/message).
package messagetest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"sync"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// BadWrapper is one compressed wrapper that does not unpack.
type BadWrapper struct {
	Name string
	// Message is the whole wrapper: a magic-1 message with a codec and a
	// CRC that matches its payload.
	Message message.Message
	// Want is the sentinel error message.Unpack wraps for it.
	Want error
}

// innerBadCRC is a magic-0 message holding "hello" whose stored CRC,
// de ad be ef, is not the payload's (36 10 a6 86).
var innerBadCRC = []byte{0, 0, 0, 10, 0, 0xde, 0xad, 0xbe, 0xef, 'h', 'e', 'l', 'l', 'o'}

// BadWrappers returns one wrapper of each kind a client could send that a
// reader cannot unpack. All but the gzip bomb are fixed bytes.
func BadWrappers() []BadWrapper {
	return []BadWrapper{
		{"gzip garbage", v1(message.CodecGzip, []byte("this is not gzip")), message.ErrBadPayload},
		// A valid gzip header (RFC 1952), then a deflate block of the
		// reserved type 3.
		{"gzip header then garbage", v1(message.CodecGzip, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 0x07, 0, 0, 0}), message.ErrBadPayload},
		{"snappy garbage", v1(message.CodecSnappy, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), message.ErrBadPayload},
		// snappy-java's stream header, then a block length of 4096 with 3
		// bytes after it.
		{"snappy stream block cut short", v1(message.CodecSnappy, []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0,
			0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0x10, 0, 1, 2, 3}), message.ErrBadPayload},
		{"snappy inner CRC mismatch", v1(message.CodecSnappy, RawLiteral(innerBadCRC)), message.ErrChecksum},
		{"gzip inner CRC mismatch", gzipped(innerBadCRC), message.ErrChecksum},
		{"inner set ends in a partial message", v1(message.CodecSnappy, RawLiteral(innerBadCRC[:7])), message.ErrBadPayload},
		{"wrapper inside a wrapper", v1(message.CodecSnappy, RawLiteral(
			message.AppendV1(nil, message.CodecSnappy, RawLiteral([]byte("x"))))), message.ErrNestedWrapper},
		// A raw snappy block whose length varint claims 1 GiB.
		{"snappy claims 1 GiB", v1(message.CodecSnappy, []byte{0x80, 0x80, 0x80, 0x80, 0x04, 0}), message.ErrTooLarge},
		{"gzip inflating past the limit", v1(message.CodecGzip, GzipBomb()), message.ErrTooLarge},
	}
}

// RawLiteral is a raw snappy block (the format other 0.7 clients write)
// holding b as one literal: the length as a varint, then the literal's tag,
// then b. b must be 1 to 60 bytes.
func RawLiteral(b []byte) []byte {
	if len(b) < 1 || len(b) > 60 {
		panic("messagetest: RawLiteral takes 1 to 60 bytes")
	}
	return append([]byte{byte(len(b)), byte(len(b)-1) << 2}, b...)
}

func v1(c message.Codec, payload []byte) message.Message {
	return message.AppendV1(nil, c, payload)
}

func gzipped(b []byte) message.Message {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return v1(message.CodecGzip, buf.Bytes())
}

var bomb = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	m := message.AppendV0(nil, make([]byte, 1000))
	for n := 0; n <= message.MaxDecompressedSize+1<<20; n += len(m) {
		zw.Write(m)
	}
	zw.Close()
	return buf.Bytes()
})

// GzipBomb is a gzip stream of about 65 KB that inflates to 1 MiB past
// message.MaxDecompressedSize: valid magic-0 messages of 1,000 zero bytes,
// so that only the size is wrong, however far a reader checks as it
// inflates. It is made once per process.
func GzipBomb() []byte { return bomb() }

// PlainSet is n magic-0 messages whose payloads are prefix followed by
// their index: "a0", "a1", ...
func PlainSet(prefix string, n int) []byte {
	var set []byte
	for i := range n {
		set = message.AppendV0(set, fmt.Appendf(nil, "%s%d", prefix, i))
	}
	return set
}
