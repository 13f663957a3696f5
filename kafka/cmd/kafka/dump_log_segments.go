package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

func init() {
	register(&command{
		Name:       "dump-log-segments",
		Positional: true,
		Args:       "[--print-payload] [--deep-iteration] FILE...",
		Summary:    "print every message of segment files: offset (and 0.8's logical offset), size, magic, codec, key, CRC validity (and what wrappers hold)",
		Run:        dumpLogSegments,
	})
}

func dumpLogSegments(args []string, std stdio) error {
	fs := newFlags(commands["dump-log-segments"], std.Err)
	payload := fs.Bool("print-payload", false, "also print each payload (quoted)")
	deep := fs.Bool("deep-iteration", false, "also decompress each gzip or snappy wrapper and print its inner messages, indented")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("no segment file given")
	}
	out := bufio.NewWriter(std.Out)
	defer out.Flush()
	for _, path := range fs.Args() {
		if err := dumpSegment(path, dumpOptions{payload: *payload, deep: *deep}, out); err != nil {
			return err
		}
	}
	return nil
}

type dumpOptions struct {
	payload bool // print payloads
	deep    bool // print what compressed wrappers hold
}

// dumpSegment streams one segment file, so a 1 GiB segment needs no more
// memory than its largest message. It never stops at corruption: a CRC
// mismatch is reported and skipped over (the length is still usable), a
// partial tail or an impossible header ends the dump with a note.
func dumpSegment(path string, opt dumpOptions, out *bufio.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	// docs/PROTOCOL.md §3: a segment is named by the offset of its first byte.
	base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(path), ".kafka"), 10, 64)
	if err != nil {
		base = 0
	}
	// docs/PROTOCOL.md §12: the segment's index names the logical offset of
	// its first message; without one, logical offsets are not shown.
	logical := int64(-1)
	if ib, err := os.ReadFile(strings.TrimSuffix(path, ".kafka") + ".index"); err == nil && len(ib) >= 8 {
		logical = int64(binary.BigEndian.Uint64(ib))
		fmt.Fprintf(out, "Dumping %s (starting offset %d, logical offset %d, %d bytes)\n", path, base, logical, st.Size())
	} else {
		fmt.Fprintf(out, "Dumping %s (starting offset %d, %d bytes; no index: logical offsets not shown)\n", path, base, st.Size())
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var buf, inner []byte
	var pos int64
	count, bad := 0, 0
	for {
		var hdr [4]byte
		n, err := io.ReadFull(r, hdr[:])
		if n == 0 && err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintf(out, "partial message at offset %d: only %d of 4 length bytes\n", base+pos, n)
			break
		}
		size := int64(binary.BigEndian.Uint32(hdr[:]))
		if size < 5 || size > st.Size()-pos-4 {
			if size >= 5 {
				fmt.Fprintf(out, "partial message at offset %d: length %d but only %d bytes left in the file\n", base+pos, size, st.Size()-pos-4)
			} else {
				fmt.Fprintf(out, "corrupt message at offset %d: length %d is below the 5-byte minimum; stopping\n", base+pos, size)
			}
			break
		}
		if int64(cap(buf)) < 4+size {
			buf = make([]byte, 4+size)
		}
		m := buf[:4+size]
		copy(m, hdr[:])
		if _, err := io.ReadFull(r, m[4:]); err != nil {
			return fmt.Errorf("%s: reading message at offset %d: %w", path, base+pos, err)
		}
		if err := describe(out, "", message.Message(m), base+pos, &logical, opt.payload); err != nil {
			fmt.Fprintf(out, "corrupt message at offset %d: %v; stopping\n", base+pos, err)
			break
		}
		if !message.Message(m).Valid() {
			bad++
		} else if opt.deep && message.Message(m).Codec() != message.CodecNone {
			inner = describeInner(out, message.Message(m), base+pos, opt.payload, inner[:0])
		}
		count++
		pos += 4 + size
	}
	fmt.Fprintf(out, "%d messages, %d with an invalid CRC, %d of %d bytes in whole messages\n", count, bad, pos, st.Size())
	return nil
}

// describeInner decompresses wrapper m (at offset) into buf and prints one
// indented line per inner message, or why it cannot be unpacked. Inner
// messages report their byte position inside the wrapper's inner set.
func describeInner(out *bufio.Writer, m message.Message, offset int64, printPayload bool, buf []byte) []byte {
	buf, err := message.AppendDecompressed(buf, m)
	if err != nil {
		fmt.Fprintf(out, "  cannot unpack the wrapper at offset %d: %v\n", offset, err)
		return buf
	}
	it := message.NewIterator(buf, 0)
	n := 0
	for it.Next() {
		noLogical := int64(-1)
		if err := describe(out, "  inner ", it.Message(), it.Offset(), &noLogical, printPayload); err != nil {
			fmt.Fprintf(out, "  corrupt inner message at byte %d: %v\n", it.Offset(), err)
			return buf
		}
		n++
	}
	fmt.Fprintf(out, "  %d inner messages, %d bytes uncompressed from %d\n", n, len(buf), len(m.Payload()))
	return buf
}

// describe prints one line for m, or returns an error for an unknown magic
// or a magic-1 message too short for its header. *logical, unless -1, is
// 0.8's logical offset of m (of its first inner message, for a wrapper), and
// is moved past m.
func describe(out *bufio.Writer, prefix string, m message.Message, offset int64, logical *int64, printPayload bool) error {
	magic := m.Magic()
	if magic != message.MagicV0 && magic != message.MagicV1 {
		return fmt.Errorf("unknown magic %d", magic)
	}
	if magic == message.MagicV1 && len(m) < message.HeaderSizeV1 {
		return fmt.Errorf("magic 1 with length %d, below the 6-byte minimum", len(m)-4)
	}
	valid := "true"
	if !m.Valid() {
		valid = fmt.Sprintf("false (stored %08x, computed %08x)", m.Checksum(), crc32.ChecksumIEEE(m.Payload()))
	}
	fmt.Fprintf(out, "%soffset: %d", prefix, offset)
	if *logical >= 0 {
		n := int64(1)
		if m.Codec() != message.CodecNone {
			k, err := message.InnerCount(m)
			if err != nil {
				k = 1
			}
			n = int64(k)
		}
		if n == 1 {
			fmt.Fprintf(out, " logical: %d", *logical)
		} else {
			fmt.Fprintf(out, " logical: %d-%d", *logical, *logical+n-1)
		}
		*logical += n
	}
	fmt.Fprintf(out, " size: %d magic: %d codec: %s", len(m), magic, m.Codec())
	key, value, kerr := m.KeyValue()
	if m.Keyed() {
		if kerr != nil {
			fmt.Fprintf(out, " key: (%v)", kerr)
		} else {
			fmt.Fprintf(out, " key: %q", key)
		}
	}
	fmt.Fprintf(out, " crc valid: %s", valid)
	if printPayload {
		if kerr != nil {
			value = m.Payload()
		}
		fmt.Fprintf(out, " payload: %q", value)
	}
	return out.WriteByte('\n')
}
