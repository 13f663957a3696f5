package message

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// Fixed bytes, as they stand in a producer's request, in a segment file and
// in a fetch response (docs/PROTOCOL.md §2), with the arithmetic written out.
// Unlike a test that compares AppendV0's output with a CRC computed by the
// same code, these fail if the format changes. The CRCs are CRC-32 IEEE
// (the polynomial of zlib, gzip and Java's java.util.zip.CRC32) of the
// payload alone; any of those tools recomputes them, e.g.
// python3 -c 'import zlib; print(hex(zlib.crc32(b"hello")))'.

// helloV0 is the magic-0 message holding "hello":
//
//	length N = 1 + 4 + len("hello") = 10     00 00 00 0a
//	magic 0                                  00
//	CRC-32 IEEE of "hello" = 0x3610a686      36 10 a6 86
//	payload "hello"                          68 65 6c 6c 6f
//
// 4 + N = 14 bytes: the payload's 5 and the paper's 9 of overhead (§5).
const helloV0 = "00 00 00 0a  00  36 10 a6 86  68 65 6c 6c 6f"

// emptyV0 is the magic-0 message with an empty payload:
//
//	length N = 1 + 4 + 0 = 5                 00 00 00 05
//	magic 0                                  00
//	CRC-32 IEEE of "" = 0x00000000           00 00 00 00
const emptyV0 = "00 00 00 05  00  00 00 00 00"

// helloV1 is the magic-1 message holding "hello", uncompressed:
//
//	length N = 1 + 1 + 4 + len("hello") = 11 00 00 00 0b
//	magic 1                                  01
//	attributes: codec none (low two bits 0)  00
//	CRC-32 IEEE of "hello" = 0x3610a686      36 10 a6 86
//	payload "hello"                          68 65 6c 6c 6f
const helloV1 = "00 00 00 0b  01  00  36 10 a6 86  68 65 6c 6c 6f"

// setABC is the message set "a", "bc": two magic-0 messages back to back,
// with no header of its own.
//
//	offset 0:  N = 1 + 4 + 1 = 6             00 00 00 06
//	           magic 0                       00
//	           CRC-32 IEEE of "a" = 0xe8b7be43  e8 b7 be 43
//	           "a"                           61
//	offset 10 = 0 + 4 + 6:
//	           N = 1 + 4 + 2 = 7             00 00 00 07
//	           magic 0                       00
//	           CRC-32 IEEE of "bc" = 0xc2a92b38 c2 a9 2b 38
//	           "bc"                          62 63
//	end 21 = 10 + 4 + 7
const setABC = "00 00 00 06  00  e8 b7 be 43  61" + "  00 00 00 07  00  c2 a9 2b 38  62 63"

// unhex decodes hex written with spaces.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func TestFixedBytesV0(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    string
		crc     uint32
	}{
		{"hello", helloV0, 0x3610a686},
		{"", emptyV0, 0},
	} {
		want := unhex(t, c.want)
		if got := AppendV0(nil, []byte(c.payload)); !bytes.Equal(got, want) {
			t.Errorf("AppendV0(%q) =\n% x\nwant\n% x", c.payload, got, want)
		}
		if SizeV0(len(c.payload)) != len(want) {
			t.Errorf("SizeV0(%d) = %d, want %d", len(c.payload), SizeV0(len(c.payload)), len(want))
		}
		// Decoding the fixed bytes, not our own output.
		m := Message(want)
		if m.Size() != len(want) || m.Magic() != MagicV0 || m.Codec() != CodecNone || m.Checksum() != c.crc ||
			string(m.Payload()) != c.payload || !m.Valid() {
			t.Errorf("Message(% x): size %d magic %d codec %v crc %08x payload %q valid %v; want %d 0 none %08x %q true",
				want, m.Size(), m.Magic(), m.Codec(), m.Checksum(), m.Payload(), m.Valid(), len(want), c.crc, c.payload)
		}
	}
}

func TestFixedBytesV1(t *testing.T) {
	want := unhex(t, helloV1)
	if got := AppendV1(nil, CodecNone, []byte("hello")); !bytes.Equal(got, want) {
		t.Errorf("AppendV1(none, hello) =\n% x\nwant\n% x", got, want)
	}
	m := Message(want)
	if m.Size() != 15 || m.Magic() != MagicV1 || m.Codec() != CodecNone || m.Checksum() != 0x3610a686 ||
		string(m.Payload()) != "hello" || !m.Valid() {
		t.Errorf("Message(% x): size %d magic %d codec %v crc %08x payload %q valid %v",
			want, m.Size(), m.Magic(), m.Codec(), m.Checksum(), m.Payload(), m.Valid())
	}
	// The codec is the attributes' low two bits: gzip is 1, snappy 2
	// (byte 5); the CRC still covers the payload only.
	for codec, attr := range map[Codec]byte{CodecGzip: 0x01, CodecSnappy: 0x02} {
		want[5] = attr
		if got := AppendV1(nil, codec, []byte("hello")); !bytes.Equal(got, want) {
			t.Errorf("AppendV1(%v, hello) =\n% x\nwant\n% x", codec, got, want)
		}
		if Message(want).Codec() != codec {
			t.Errorf("attributes %02x: codec %v, want %v", attr, Message(want).Codec(), codec)
		}
	}
}

func TestFixedBytesSet(t *testing.T) {
	want := unhex(t, setABC)
	if got := AppendV0(AppendV0(nil, []byte("a")), []byte("bc")); !bytes.Equal(got, want) {
		t.Fatalf("set a, bc =\n% x\nwant\n% x", got, want)
	}
	// In a partition whose log holds this set from byte 1000, the
	// messages are at 1000 and 1010, and the next one goes at 1021 (§3.1).
	it := NewIterator(want, 1000)
	for _, w := range []struct {
		off, next int64
		payload   string
	}{{1000, 1010, "a"}, {1010, 1021, "bc"}} {
		if !it.Next() {
			t.Fatalf("iterator stopped before offset %d: %v", w.off, it.Err())
		}
		if it.Offset() != w.off || it.NextOffset() != w.next || string(it.Message().Payload()) != w.payload {
			t.Fatalf("offset %d next %d payload %q; want %d %d %q",
				it.Offset(), it.NextOffset(), it.Message().Payload(), w.off, w.next, w.payload)
		}
	}
	if it.Next() || it.Err() != nil || it.Consumed() != 21 || it.Remaining() != 0 {
		t.Fatalf("after two messages: next, err %v, consumed %d, remaining %d; want the end at 21", it.Err(), it.Consumed(), it.Remaining())
	}
	if valid, n, err := Validate(want); valid != 21 || n != 2 || err != nil {
		t.Fatalf("Validate: %d bytes, %d messages, %v; want 21, 2, nil", valid, n, err)
	}
}

// Corruption of the fixed bytes, byte by named byte: what Validate keeps
// (the whole good messages before the damage) and which error it reports.
func TestFixedBytesCorruption(t *testing.T) {
	cases := []struct {
		name      string
		set       string
		at        int  // byte to overwrite
		to        byte // its new value
		cut       int  // > 0: keep only the first cut bytes instead
		valid     int
		n         int
		want      error // from Validate
		wantWhole error // from ValidateWhole
	}{
		// 'h' -> 'j': "jello" has CRC 0x4cd0f5e6, the stored one is 0x3610a686.
		{name: "payload byte", set: helloV0, at: 9, to: 'j', want: ErrChecksum, wantWhole: ErrChecksum},
		{name: "CRC byte", set: helloV0, at: 5, to: 0x37, want: ErrChecksum, wantWhole: ErrChecksum},
		{name: "magic 2", set: helloV0, at: 4, to: 2, want: ErrBadMagic, wantWhole: ErrBadMagic},
		// N = 4 < 1 + 4: no room for magic and CRC.
		{name: "N below magic 0's minimum", set: helloV0, at: 3, to: 4, want: ErrCorrupt, wantWhole: ErrCorrupt},
		// N = 5 < 1 + 1 + 4: no room for magic, attributes and CRC.
		{name: "N below magic 1's minimum", set: helloV1, at: 3, to: 5, want: ErrCorrupt, wantWhole: ErrCorrupt},
		// The attributes byte (byte 5 of a magic-1 message) is outside the
		// CRC, which covers the payload only, so Validate checks it on its
		// own: 0x00 ^ 0x5a = 0x5a sets bits above the codec's two (0x03),
		// and 0x03 names no codec (0 none, 1 gzip, 2 snappy).
		{name: "attributes bit above the codec", set: helloV1, at: 5, to: 0x5a, want: ErrCorrupt, wantWhole: ErrCorrupt},
		{name: "attributes codec 3", set: helloV1, at: 5, to: 0x03, want: ErrUnsupportedCodec, wantWhole: ErrUnsupportedCodec},
		// N = 0x7f00000a: a message longer than the set is a partial tail
		// (a fetch cut it), whole-message input is truncated.
		{name: "N past the end", set: helloV0, at: 0, to: 0x7f, wantWhole: ErrTruncated},
		{name: "cut in the payload", set: helloV0, cut: 13, wantWhole: ErrTruncated},
		{name: "cut in the length", set: helloV0, cut: 3, wantWhole: ErrTruncated},
		// The second message's "b" (byte 10 + 9 = 19) becomes "c": the first
		// message, 10 bytes, is kept.
		{name: "second message's payload", set: setABC, at: 19, to: 'c', valid: 10, n: 1, want: ErrChecksum, wantWhole: ErrChecksum},
		{name: "cut in the second message", set: setABC, cut: 20, valid: 10, n: 1, wantWhole: ErrTruncated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := unhex(t, c.set)
			if c.cut > 0 {
				b = b[:c.cut]
			} else {
				b[c.at] = c.to
			}
			valid, n, err := Validate(b)
			if valid != c.valid || n != c.n || !errors.Is(err, c.want) {
				t.Errorf("Validate(% x) = %d bytes, %d messages, %v; want %d, %d, %v", b, valid, n, err, c.valid, c.n, c.want)
			}
			if _, err := ValidateWhole(b); !errors.Is(err, c.wantWhole) {
				t.Errorf("ValidateWhole(% x) = %v, want %v", b, err, c.wantWhole)
			}
		})
	}
}
