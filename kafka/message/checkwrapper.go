package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
)

// Checking a wrapper without holding its inner set. The broker checks every wrapper a producer sends
// before it appends it (ValidateWholeDeep), and so does a follower with what it copies and recovery with a
// log's tail. Only the answer is needed, not the inner messages, so a gzip payload is inflated 32 KiB at a
// time and each piece is checked as it comes (innerCheck keeps a message's header bytes and a running CRC
// across pieces): a 60 KiB gzip stream that inflates to 60 MiB costs the checker 32 KiB, not 60 MiB. A
// snappy block states its decoded length and is decoded whole; the bytes of the blocks being decoded at
// once, in the whole process, are bounded by inflating (at most MaxDecompressedSize, which any legal
// block fits in), so many connections sending snappy at once wait for each other rather than each
// holding its own inflated copy.

// checkChunk is how much of a gzip stream is inflated at a time.
const checkChunk = 32 << 10

// checkWrapper is validateOther's check of wrapper m (codec gzip or snappy; its own CRC already checked):
// its payload decodes within MaxDecompressedSize into whole, uncompressed messages with right CRCs. Its
// errors are Unpack's.
func checkWrapper(m Message) error {
	_, err := checkWrapperCount(m)
	return err
}

// checkWrapperCount is checkWrapper that also counts the inner messages.
func checkWrapperCount(m Message) (int, error) {
	var c innerCheck
	var err error
	switch codec := m.Codec(); codec {
	case CodecGzip:
		err = c.gunzip(m.Payload())
	case CodecSnappy:
		err = c.unsnappy(m.Payload())
	default:
		return 0, fmt.Errorf("%w: %v", ErrUnsupportedCodec, codec)
	}
	if err == nil {
		err = c.end()
	}
	if err != nil {
		return 0, fmt.Errorf("%v wrapper of %d bytes: %w", m.Codec(), len(m), err)
	}
	return c.count, nil
}

// innerCheck checks an inner set handed to it in pieces (write), as checkInner(set, true) does a whole one:
// whole messages, none compressed, every CRC right.
type innerCheck struct {
	hdr   [HeaderSizeV1]byte
	nhdr  int    // bytes of the current message's header gathered in hdr
	want  int    // its header's size once the magic is known (0 before)
	left  int    // its payload bytes still to come, once the header is whole
	crc   uint32 // running CRC of its payload
	start int    // its byte in the inner set
	pos   int    // bytes written so far
	count int    // whole messages checked
}

// write checks the next piece of the inner set.
func (c *innerCheck) write(p []byte) error {
	for len(p) > 0 {
		if c.want == 0 || c.nhdr < c.want { // gathering a header
			if c.nhdr == 0 {
				c.start = c.pos
			}
			need := LengthSize + 1
			if c.want > 0 {
				need = c.want
			}
			n := copy(c.hdr[c.nhdr:need], p)
			c.nhdr += n
			c.pos += n
			p = p[n:]
			if c.nhdr < need {
				return nil
			}
			if c.want == 0 {
				if err := c.magic(); err != nil {
					return err
				}
				continue
			}
			if c.want == HeaderSizeV1 {
				// The whole header: its attributes byte, as Unpack's checkHeader checks it.
				if _, err := checkHeader(c.hdr[:HeaderSizeV1], int64(c.start)); err != nil {
					return fmt.Errorf("%w: inner set: %w", ErrBadPayload, err)
				}
				if codec := Codec(c.hdr[5] & codecMask); codec != CodecNone {
					return fmt.Errorf("%w: inner message at byte %d has codec %v", ErrNestedWrapper, c.start, codec)
				}
			}
			c.crc = 0
			if c.left == 0 {
				if err := c.finish(); err != nil {
					return err
				}
			}
			continue
		}
		n := min(c.left, len(p))
		c.crc = crc32.Update(c.crc, crc32.IEEETable, p[:n])
		c.left -= n
		c.pos += n
		p = p[n:]
		if c.left == 0 {
			if err := c.finish(); err != nil {
				return err
			}
		}
	}
	return nil
}

// magic reads the length and magic gathered so far and sets how long the header and payload are.
func (c *innerCheck) magic() error {
	// The length and magic, as Unpack's checkHeader checks them.
	if _, err := checkHeader(c.hdr[:LengthSize+1], int64(c.start)); err != nil {
		return fmt.Errorf("%w: inner set: %w", ErrBadPayload, err)
	}
	n := int64(binary.BigEndian.Uint32(c.hdr[:]))
	minBody := int64(minBodyV0)
	c.want = HeaderSizeV0
	if c.hdr[LengthSize] == MagicV1 {
		c.want, minBody = HeaderSizeV1, minBodyV1
	}
	if n > MaxDecompressedSize {
		return fmt.Errorf("%w: inner set: message length %d runs past the end of the set", ErrBadPayload, n)
	}
	c.left = int(n - minBody)
	return nil
}

// finish checks the CRC of the message just completed and starts the next.
func (c *innerCheck) finish() error {
	stored := binary.BigEndian.Uint32(c.hdr[c.want-4 : c.want])
	if c.crc != stored {
		return fmt.Errorf("%w: inner message at byte %d (stored %08x)", ErrChecksum, c.start, stored)
	}
	c.nhdr, c.want = 0, 0
	c.count++
	return nil
}

// end reports a set that stops inside a message.
func (c *innerCheck) end() error {
	if c.nhdr > 0 || c.want > 0 {
		return fmt.Errorf("%w: inner set of %d bytes ends in a partial message of %d bytes", ErrBadPayload, c.pos, c.pos-c.start)
	}
	return nil
}

// gunzip inflates p a chunk at a time into write, stopping with ErrTooLarge once more than
// MaxDecompressedSize bytes have come out.
func (c *innerCheck) gunzip(p []byte) error {
	g := checkGunzips.Get().(*checkGunzip)
	defer checkGunzips.Put(g)
	g.br.Reset(p)
	if err := g.zr.Reset(&g.br); err != nil {
		return fmt.Errorf("%w: gzip header: %v", ErrBadPayload, err)
	}
	total := 0
	for {
		n, err := g.zr.Read(g.buf[:])
		if total += n; total > MaxDecompressedSize {
			return fmt.Errorf("%w: gzip stream of %d bytes inflates past %d bytes", ErrTooLarge, len(p), MaxDecompressedSize)
		}
		if werr := c.write(g.buf[:n]); werr != nil {
			return werr
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: gzip: %v", ErrBadPayload, err)
		}
	}
}

// checkGunzip is a gzip reader, the reader of the payload it reads and the chunk it inflates into, pooled
// together.
type checkGunzip struct {
	gunzip
	buf [checkChunk]byte
}

var checkGunzips = sync.Pool{New: func() any { return new(checkGunzip) }}

// unsnappy decodes p (snappy-java's stream format or one raw block, as appendUnsnappy reads them) one block
// at a time into write, within MaxDecompressedSize in all.
func (c *innerCheck) unsnappy(p []byte) error {
	if !isSnappyStream(p) {
		_, err := c.snappyBlock(p, 0, MaxDecompressedSize, "raw snappy block")
		return err
	}
	if len(p) < snappyHeaderSize {
		return fmt.Errorf("%w: snappy stream of %d bytes is shorter than its %d-byte header", ErrBadPayload, len(p), snappyHeaderSize)
	}
	if compat := binary.BigEndian.Uint32(p[12:]); compat != 1 {
		return fmt.Errorf("%w: snappy stream needs reader version %d, we read version 1", ErrBadPayload, compat)
	}
	total := 0
	for pos := snappyHeaderSize; pos < len(p); {
		if len(p)-pos < 4 {
			return fmt.Errorf("%w: snappy stream ends in a %d-byte block length at byte %d", ErrBadPayload, len(p)-pos, pos)
		}
		n := int(binary.BigEndian.Uint32(p[pos:]))
		pos += 4
		if n > len(p)-pos || n == 0 {
			return fmt.Errorf("%w: snappy block at byte %d claims %d bytes, %d left", ErrBadPayload, pos-4, n, len(p)-pos)
		}
		d, err := c.snappyBlock(p[pos:pos+n], pos-4, MaxDecompressedSize-total, "snappy block")
		if err != nil {
			return err
		}
		total += d
		pos += n
	}
	return nil
}

// snappyBlock decodes one snappy block (at byte at of the payload) of at most limit bytes into write, once
// inflating admits its decoded length, and returns that length.
func (c *innerCheck) snappyBlock(b []byte, at, limit int, what string) (int, error) {
	d, err := s2.DecodedLen(b)
	if err != nil {
		return 0, fmt.Errorf("%w: %s at byte %d: %v", ErrBadPayload, what, at, err)
	}
	if d > limit {
		return 0, fmt.Errorf("%w: %s at byte %d claims %d bytes, limit %d", ErrTooLarge, what, at, d, limit)
	}
	inflating.acquire(d)
	defer inflating.release(d)
	buf := unpackBuffers.Get().(*[]byte)
	*buf = growTo((*buf)[:0], d)
	if _, err := s2.Decode((*buf)[:d], b); err != nil {
		err = fmt.Errorf("%w: %s at byte %d: %v", ErrBadPayload, what, at, err)
		putUnpackBuffer(buf)
		return 0, err
	}
	err = c.write((*buf)[:d])
	putUnpackBuffer(buf)
	return d, err
}

func putUnpackBuffer(buf *[]byte) {
	if cap(*buf) <= maxPooledBuffer {
		unpackBuffers.Put(buf)
	}
}

// inflating bounds the bytes of snappy blocks being decoded at once by checkWrapper, process-wide.
var inflating = byteSemaphore{limit: MaxDecompressedSize}

// byteSemaphore hands out up to limit bytes at a time; a request that does not fit waits until it does.
type byteSemaphore struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int
	used  int
}

func (s *byteSemaphore) acquire(n int) {
	n = min(n, s.limit)
	s.mu.Lock()
	if s.cond == nil {
		s.cond = sync.NewCond(&s.mu)
	}
	for s.used+n > s.limit {
		s.cond.Wait()
	}
	s.used += n
	s.mu.Unlock()
}

func (s *byteSemaphore) release(n int) {
	n = min(n, s.limit)
	s.mu.Lock()
	s.used -= n
	if s.cond != nil {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}
