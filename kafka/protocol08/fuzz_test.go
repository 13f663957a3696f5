package protocol08

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// FuzzDecode08 feeds arbitrary bytes to everything the broker runs on a
// Kafka protocol request before it touches a log: the first-request rule,
// the header, each request's decoder and the translation of a produced set.
// None may panic; a set the translation accepts must be one the log accepts,
// with as many messages; a request a decoder accepts must not have bytes
// left over (the decoders are strict); a message's quick parse agrees with
// its spelled-out one (key -2).
func FuzzDecode08(f *testing.F) {
	f.Add(int16(KeyMetadata), AppendRequest(nil, Header{APIKey: KeyMetadata, CorrelationID: 1, ClientID: "c"}, AppendMetadataBody(nil, []string{"t"}))[6:])
	set := AppendEntry(AppendEntry(nil, 0, []byte("k"), []byte("v")), 1, nil, []byte("w"))
	f.Add(int16(KeyProduce), AppendRequest(nil, Header{APIKey: KeyProduce, CorrelationID: 2},
		AppendProduceBody(nil, 1, 1000, []ProducePart{{Topic: "t", Partition: 0, Set: set}}))[6:])
	f.Add(int16(KeyFetch), AppendRequest(nil, Header{APIKey: KeyFetch, CorrelationID: 3},
		AppendFetchBody(nil, 100, 1, []FetchPart{{Topic: "t", Partition: 0, Offset: 5, MaxBytes: 1 << 20}}))[6:])
	f.Add(int16(KeyOffsets), AppendRequest(nil, Header{APIKey: KeyOffsets, CorrelationID: 4},
		AppendOffsetsBody(nil, []OffsetsPart{{Topic: "t", Partition: 0, Time: -1, MaxOffsets: 1}}))[6:])
	f.Add(int16(KeyAPIVersions), []byte{0, 3, 0, 0, 0, 5, 0, 0})
	f.Add(int16(KeyOffsetCommit), []byte{0, 1, 0, 0, 0, 6, 0, 0, 0, 1, 'g', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0})
	if w, err := message.Compress(message.CodecGzip, set); err == nil {
		f.Add(int16(-1), AppendEntryCodec(nil, 0, message.CodecGzip, message.Message(w).Payload()))
	}
	for _, e := range [][]byte{AppendEntry(nil, 0, []byte("k"), []byte("v")), AppendEntry(nil, 0, nil, nil), AppendEntry(nil, 0, []byte{}, []byte{})} {
		f.Add(int16(-2), e[12:])
	}
	f.Fuzz(func(t *testing.T, key int16, rest []byte) {
		Is08(key, rest)
		Correlation(rest)
		if key == -2 && len(rest) >= 14 { // rest is one message, CRC onwards: made to check out
			binary.BigEndian.PutUint32(rest, crc32.ChecksumIEEE(rest[4:]))
			fast, errFast := parseMessage(rest)
			slow, errSlow := parseMessageSlow(rest)
			if (errFast == nil) != (errSlow == nil) || errFast == nil && (fast.Attributes != slow.Attributes ||
				(fast.Key == nil) != (slow.Key == nil) || string(fast.Key) != string(slow.Key) ||
				(fast.Value == nil) != (slow.Value == nil) || string(fast.Value) != string(slow.Value)) {
				t.Fatalf("parseMessage %+v, %v; parseMessageSlow %+v, %v", fast, errFast, slow, errSlow)
			}
			return
		}
		if key == -1 { // rest is a message set
			out, n, err := Convert08To07(nil, rest)
			if err != nil {
				return
			}
			count, err := message.ValidateWholeDeep(out)
			if err != nil {
				t.Fatalf("Convert08To07 accepted a set the log refuses: %v", err)
			}
			deep := 0
			it := message.NewDeepIterator(out, 0)
			for it.Next() {
				deep++
			}
			if deep != n || count > n {
				t.Fatalf("Convert08To07 says %d messages, the log holds %d (%d outer)", n, deep, count)
			}
			var a Appender
			a.Reset(0, 0, 1<<30)
			mi := message.NewIterator(out, 0)
			for mi.Next() {
				if _, err := a.Add(mi.Message()); err != nil {
					t.Fatalf("Appender refused what the log holds: %v", err)
				}
			}
			if a.Next() != int64(n) {
				t.Fatalf("Appender numbered %d messages, want %d", a.Next(), n)
			}
			return
		}
		h, body, err := ParseHeader(key, rest)
		if err != nil {
			return
		}
		switch key {
		case KeyProduce:
			if p, err := DecodeProduce(body); err == nil {
				for _, part := range p.Parts {
					Convert08To07(nil, part.Set)
				}
			}
		case KeyFetch:
			DecodeFetch(body)
		case KeyOffsets:
			DecodeOffsets(body)
		case KeyMetadata:
			DecodeMetadata(body)
		case KeyOffsetCommit:
			DecodeOffsetCommit(h.APIVersion, body)
		case KeyOffsetFetch:
			DecodeOffsetFetch(body)
		case KeyConsumerMetadata:
			DecodeConsumerMetadata(body)
		case KeyAPIVersions:
			b := AppendAPIVersionsResponse(nil, h)
			if int(binary.BigEndian.Uint32(b)) != len(b)-4 {
				t.Fatalf("ApiVersions answer's size %d for %d bytes", binary.BigEndian.Uint32(b), len(b)-4)
			}
		}
	})
}
