package ceiling

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// check reads n messages of size payload bytes from r, ReadSize bytes at a
// time, checking every CRC, and hands each read's whole messages to sink
// (nil: drop them). It marks the tenths on clk as messages are checked.
// This is all a reader must do: find each message and check it.
func check(r io.Reader, n int64, size, readSize int, clk *clock, sink func([]byte) error) error {
	buf := make([]byte, max(readSize, 2*(headerSize+size)))
	want := uint32(1 + 4 + size) // length field: magic, CRC, payload
	have := 0
	var done int64
	for done < n {
		m, rerr := r.Read(buf[have:])
		clk.reads++
		have += m
		pos := 0
		for have-pos >= headerSize && done < n {
			msg := buf[pos:have]
			if l := binary.BigEndian.Uint32(msg); l != want || msg[4] != 0 {
				return fmt.Errorf("%w: message %d: length %d magic %d, want length %d magic 0", ErrFraming, done, l, msg[4], want)
			}
			end := 4 + int(want)
			if end > len(msg) {
				break // the rest comes with the next read
			}
			if crc32.ChecksumIEEE(msg[headerSize:end]) != binary.BigEndian.Uint32(msg[5:]) {
				return fmt.Errorf("%w: message %d", ErrChecksum, done)
			}
			pos += end
			done++
			clk.observe(done)
		}
		if sink != nil && pos > 0 {
			if err := sink(buf[:pos]); err != nil {
				return err
			}
		}
		have = copy(buf, buf[pos:have])
		if rerr != nil && done < n {
			return fmt.Errorf("read after %d of %d messages: %w", done, n, rerr)
		}
	}
	return nil
}
