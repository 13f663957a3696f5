package message

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateFixtures = flag.Bool("update", false, "rewrite the snappy fixtures in testdata/")

// v1 builds one magic-1 message by hand from the layout in the package doc:
// N (4 bytes) = 1 magic + 1 attributes + 4 CRC + payload.
func v1(attr byte, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(6+len(payload)))
	b = append(b, 1, attr)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(payload))
	return append(b, payload...)
}

// The inner set of both fixtures: three magic-1 messages (0.7 writes magic 1
// inside wrappers too).
//
//	"kafka"            10 + 5  = 15 bytes, at  0
//	"snappy"           10 + 6  = 16 bytes, at 15
//	"abcdabcdabcdabcd" 10 + 16 = 26 bytes, at 31   (57 in all)
var fixturePayloads = []string{"kafka", "snappy", "abcdabcdabcdabcd"}

func fixtureInner() []byte {
	var set []byte
	for _, p := range fixturePayloads {
		set = append(set, v1(0, []byte(p))...)
	}
	return set
}

// rawBlockFixture is what a non-JVM 0.7 client writes: the 57-byte inner
// set as one raw snappy block, built element by element:
//
//	0x39                  uvarint 57, the decoded length
//	0xb0 + 45 bytes       literal, tag (45-1)<<2 | 0b00: bytes 0..44 (up to the first "abcd")
//	0x2e 0x04 0x00        copy with 2-byte offset, tag (12-1)<<2 | 0b10, offset 4 (little-endian):
//	                      12 bytes from 4 back, overlapping: "abcdabcdabcd"
//
// 1 + 1 + 45 + 3 = 50 bytes.
func rawBlockFixture() []byte {
	in := fixtureInner()
	b := []byte{0x39, 0xb0}
	b = append(b, in[:45]...)
	return append(b, 0x2e, 0x04, 0x00)
}

// streamFixture is what 0.7's JVM client writes: snappy-java's stream
// format, here with two blocks (snappy-java cuts one per flush or 32 KiB):
//
//	82 53 4e 41 50 50 59 00   magic
//	00 00 00 01 00 00 00 01   version 1, compatible version 1
//	00 00 00 21               block 1: 33 bytes =
//	  0x1f 0x78 + 31 bytes      uvarint 31; literal, tag (31-1)<<2: the first two messages
//	00 00 00 13               block 2: 19 bytes =
//	  0x1a 0x34 + 14 bytes      uvarint 26; literal, tag (14-1)<<2: header of message 3 and "abcd"
//	  0x2e 0x04 0x00            copy 12 bytes from offset 4
//
// 16 + 4 + 33 + 4 + 19 = 76 bytes.
func streamFixture() []byte {
	in := fixtureInner()
	b := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	b = append(b, 0, 0, 0, 0x21, 0x1f, 0x78)
	b = append(b, in[:31]...)
	b = append(b, 0, 0, 0, 0x13, 0x1a, 0x34)
	b = append(b, in[31:45]...)
	return append(b, 0x2e, 0x04, 0x00)
}

// fixtureSet is a log's bytes: one plain magic-1 message "before" (16 bytes,
// at offset 0) and then the snappy wrapper (at offset 16, attributes 0x02).
func fixtureSet(payload []byte) []byte {
	return append(v1(0, []byte("before")), v1(2, payload)...)
}

// Both fixtures are checked into testdata/ (go test -run Fixtures -update
// rewrites them) so other tools' tests, and anyone with a hex dump, can use
// them; this test checks the files still hold the bytes built above and
// that both decode to the expected messages and offsets.
func TestSnappyFixtures(t *testing.T) {
	for _, fx := range []struct {
		file    string
		payload []byte
		size    int
	}{
		{"snappy-raw-block.set", rawBlockFixture(), 50},
		{"snappy-java-stream.set", streamFixture(), 76},
	} {
		t.Run(fx.file, func(t *testing.T) {
			if len(fx.payload) != fx.size {
				t.Fatalf("payload is %d bytes, the arithmetic says %d", len(fx.payload), fx.size)
			}
			want := fixtureSet(fx.payload)
			path := filepath.Join("testdata", fx.file)
			if *updateFixtures {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from the bytes built from the format:\n got %x\nwant %x", path, got, want)
			}
			d := NewDeepIterator(got, 0)
			var payloads []string
			var offs, nexts []int64
			for d.Next() {
				if !d.Message().Valid() {
					t.Fatalf("message %d: bad CRC", len(payloads))
				}
				payloads = append(payloads, string(d.Message().Payload()))
				offs = append(offs, d.Offset())
				nexts = append(nexts, d.NextOffset())
			}
			if d.Err() != nil {
				t.Fatal(d.Err())
			}
			end := int64(16 + 10 + fx.size)
			wantP := append([]string{"before"}, fixturePayloads...)
			if strings.Join(payloads, ",") != strings.Join(wantP, ",") {
				t.Fatalf("payloads %q, want %q", payloads, wantP)
			}
			wantOffs, wantNexts := []int64{0, 16, 16, 16}, []int64{16, 16, 16, end}
			for i := range wantOffs {
				if offs[i] != wantOffs[i] || nexts[i] != wantNexts[i] {
					t.Fatalf("offsets %v next %v, want %v %v", offs, nexts, wantOffs, wantNexts)
				}
			}
		})
	}
}

// What our writer produces is the stream format, byte for byte as the
// package doc draws it: the header, then one block per 32 KiB of input.
func TestSnappyWriterStreamFormat(t *testing.T) {
	inner := bytes.Repeat(fixtureInner(), 1500) // 85,500 bytes: 3 blocks of at most 32 KiB
	w, err := Compress(CodecSnappy, inner)
	if err != nil {
		t.Fatal(err)
	}
	m := Message(w)
	if m.Magic() != 1 || m.Codec() != CodecSnappy || !m.Valid() {
		t.Fatalf("wrapper header %x", w[:10])
	}
	p := m.Payload()
	if !bytes.Equal(p[:16], []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}) {
		t.Fatalf("stream header %x", p[:16])
	}
	blocks := 0
	for pos := 16; pos < len(p); blocks++ {
		n := int(binary.BigEndian.Uint32(p[pos:]))
		pos += 4 + n
		if pos > len(p) {
			t.Fatalf("block %d overruns the payload", blocks)
		}
	}
	if want := (len(inner) + 32<<10 - 1) / (32 << 10); blocks != want {
		t.Fatalf("%d blocks, want %d", blocks, want)
	}
	back, err := Decompress(m)
	if err != nil || !bytes.Equal(back, inner) {
		t.Fatalf("round trip: %v", err)
	}
}

func TestCompressRoundTrip(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecGzip, CodecSnappy} {
		for _, n := range []int{0, 1, 200, 40000} {
			var inner []byte
			for i := 0; i < n; i++ {
				inner = AppendV1(inner, CodecNone, []byte(strings.Repeat("x", i%300)))
			}
			w, err := Compress(codec, inner)
			if err != nil {
				t.Fatal(err)
			}
			// Appending after a prefix gives the same wrapper bytes.
			w2, err := AppendCompressed([]byte("prefix"), codec, inner)
			if err != nil || !bytes.Equal(w2[6:], w) {
				t.Fatalf("%v: AppendCompressed after a prefix differs (%v)", codec, err)
			}
			back, err := AppendDecompressed([]byte("pre"), Message(w))
			if err != nil {
				t.Fatalf("%v, %d messages: %v", codec, n, err)
			}
			if !bytes.Equal(back[3:], inner) || string(back[:3]) != "pre" {
				t.Fatalf("%v, %d messages: round trip differs", codec, n)
			}
		}
	}
}

// Bad input gets a clear error naming what failed; none of it panics.
func TestDecompressBadInput(t *testing.T) {
	inner := fixtureInner()
	gz, _ := Compress(CodecGzip, inner)
	sn, _ := Compress(CodecSnappy, inner)
	nestedG, _ := Compress(CodecGzip, sn)
	nestedS, _ := Compress(CodecSnappy, gz)
	var partial bytes.Buffer
	zw := gzip.NewWriter(&partial)
	zw.Write(inner[:20]) // a message cut after 20 of its 15+16 bytes
	zw.Close()
	cases := []struct {
		name string
		m    []byte
		want error
	}{
		{"gzip garbage", AppendV1(nil, CodecGzip, []byte("this is not gzip")), ErrBadPayload},
		{"snappy garbage", AppendV1(nil, CodecSnappy, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), ErrBadPayload},
		{"snappy raw block cut short", AppendV1(nil, CodecSnappy, rawBlockFixture()[:30]), ErrBadPayload},
		{"snappy stream cut in a block length", AppendV1(nil, CodecSnappy, streamFixture()[:18]), ErrBadPayload},
		{"snappy stream cut in a block", AppendV1(nil, CodecSnappy, streamFixture()[:60]), ErrBadPayload},
		{"snappy stream header only, truncated", AppendV1(nil, CodecSnappy, streamFixture()[:12]), ErrBadPayload},
		{"gzip inside gzip", nestedG, ErrNestedWrapper},
		{"gzip inside snappy", nestedS, ErrNestedWrapper},
		{"inner set ends in a partial message", AppendV1(nil, CodecGzip, partial.Bytes()), ErrBadPayload},
		{"codec 3", AppendV1(nil, Codec(3), []byte("x")), ErrUnsupportedCodec},
		{"magic 0", AppendV0(nil, []byte("x")), ErrNotWrapper},
	}
	for _, c := range cases {
		_, err := Decompress(Message(c.m))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		// The deep iterator stops at it with the wrapper's offset.
		d := NewDeepIterator(append(AppendV0(nil, []byte("ok")), c.m...), 0)
		n := 0
		for d.Next() {
			n++
		}
		if c.want != ErrNotWrapper && c.want != ErrUnsupportedCodec && (n != 1 || !errors.Is(d.Err(), c.want) || !strings.Contains(d.Err().Error(), "offset 11")) {
			t.Errorf("%s: deep iterator gave %d messages, err %v", c.name, n, d.Err())
		}
	}
}

// A wrapper that would inflate past MaxDecompressedSize is refused at the
// limit instead of followed until memory runs out.
func TestDecompressLimit(t *testing.T) {
	// A raw snappy block that claims 1 GiB: refused from its first bytes.
	claim := binary.AppendUvarint(nil, 1<<30)
	_, err := Decompress(Message(AppendV1(nil, CodecSnappy, append(claim, 0))))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("1 GiB raw block: %v", err)
	}
	// A stream whose blocks add up past the limit: 2,100 blocks of 32 KiB
	// of zeros, about 3 bytes each compressed.
	stream := append([]byte{}, snappyMagic[:]...)
	stream = append(stream, 0, 0, 0, 1, 0, 0, 0, 1)
	zeros := appendSnappyStream(nil, make([]byte, 32<<10))[snappyHeaderSize:]
	for i := 0; i < MaxDecompressedSize/(32<<10)+1; i++ {
		stream = append(stream, zeros...)
	}
	if _, err := Decompress(Message(AppendV1(nil, CodecSnappy, stream))); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("stream of %d bytes: %v", len(stream), err)
	}
	// A gzip bomb: 65 MiB of zeros in about 65 KB.
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zw.Write(make([]byte, MaxDecompressedSize+1<<20))
	zw.Close()
	out, err := AppendDecompressed(nil, Message(AppendV1(nil, CodecGzip, bomb.Bytes())))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("gzip bomb of %d bytes: %v", bomb.Len(), err)
	}
	if cap(out) > MaxDecompressedSize+1 {
		t.Fatalf("gzip bomb grew the buffer to %d bytes, limit %d", cap(out), MaxDecompressedSize)
	}
	// The writer refuses to build what the reader would refuse.
	if _, err := Compress(CodecSnappy, make([]byte, MaxDecompressedSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("compressing past the limit: %v", err)
	}
}

// Decompressing into a reused buffer allocates nothing for snappy.
func TestSnappyDecompressAllocs(t *testing.T) {
	w, _ := Compress(CodecSnappy, buildSet(50, 200))
	var buf []byte
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		buf, err = AppendDecompressed(buf[:0], Message(w))
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per decompression", allocs)
	}
}

func benchCompress(b *testing.B, codec Codec) {
	set := buildSet(50, 200)
	var buf []byte
	b.SetBytes(int64(len(set)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf, _ = AppendCompressed(buf[:0], codec, set)
	}
}

func benchDecompress(b *testing.B, codec Codec) {
	set := buildSet(50, 200)
	w, _ := Compress(codec, set)
	var buf []byte
	b.SetBytes(int64(len(set)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf, _ = AppendDecompressed(buf[:0], Message(w))
	}
}

func BenchmarkCompressGzip(b *testing.B)     { benchCompress(b, CodecGzip) }
func BenchmarkCompressSnappy(b *testing.B)   { benchCompress(b, CodecSnappy) }
func BenchmarkDecompressGzip(b *testing.B)   { benchDecompress(b, CodecGzip) }
func BenchmarkDecompressSnappy(b *testing.B) { benchDecompress(b, CodecSnappy) }

// The broker's check of a produced set (ValidateWholeDeep): 200 messages
// of 200 bytes, plain or in one wrapper, as the compression experiment
// sends them. ns/msg is what the check costs the broker per message.
func benchValidateDeep(b *testing.B, codec Codec) {
	const n = 200
	set := buildSet(n, 200)
	if codec != CodecNone {
		set, _ = Compress(codec, set)
	}
	b.SetBytes(int64(len(set)))
	b.ReportAllocs()
	for b.Loop() {
		if c, err := ValidateWholeDeep(set); err != nil || (codec == CodecNone && c != n) {
			b.Fatal(c, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}

func BenchmarkValidateDeepNone(b *testing.B)   { benchValidateDeep(b, CodecNone) }
func BenchmarkValidateDeepGzip(b *testing.B)   { benchValidateDeep(b, CodecGzip) }
func BenchmarkValidateDeepSnappy(b *testing.B) { benchValidateDeep(b, CodecSnappy) }
