package stomp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"unsafe"
)

// DefaultMaxFrame bounds a frame's header block plus body (64 MiB).
const DefaultMaxFrame = 64 << 20

// Reader decodes frames from a stream without allocating per frame once its buffers have grown.
type Reader struct {
	br       *bufio.Reader
	hdr      []byte // header block, unescaped; Frame.Headers alias it
	offs     []int  // key start, key end, value start, value end per header, offsets into hdr
	body     []byte
	frame    Frame
	MaxFrame int // 0 means DefaultMaxFrame
}

// NewReader reads frames from r through a 64 KiB buffer.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// commandString maps the known commands to constants, so a frame's Command allocates nothing.
func commandString(b []byte) string {
	switch string(b) { // the compiler does not allocate for a switch on string(b)
	case CmdMessage:
		return CmdMessage
	case CmdReceipt:
		return CmdReceipt
	case CmdError:
		return CmdError
	case CmdConnected:
		return CmdConnected
	case CmdSend:
		return CmdSend
	case CmdConnect:
		return CmdConnect
	case CmdStomp:
		return CmdStomp
	case CmdSubscribe:
		return CmdSubscribe
	case CmdUnsubscribe:
		return CmdUnsubscribe
	case CmdDisconnect:
		return CmdDisconnect
	case CmdAck:
		return CmdAck
	case CmdNack:
		return CmdNack
	case CmdBegin:
		return CmdBegin
	case CmdCommit:
		return CmdCommit
	case CmdAbort:
		return CmdAbort
	}
	return string(b)
}

// line returns the next line without its EOL ("\n" or "\r\n"). The slice aliases the bufio buffer.
func (r *Reader) line() ([]byte, error) {
	b, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: a header line longer than %d bytes", ErrFrameTooLarge, r.br.Size())
	}
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1]
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}

// ReadFrame reads the next frame, skipping heart-beat EOLs before it. The frame and everything in it
// stay valid until the next call. An ERROR frame is returned as a frame, not as an error (Conn turns it
// into a *ServerError). At a clean end of stream between frames it returns io.EOF.
func (r *Reader) ReadFrame() (*Frame, error) {
	maxFrame := r.MaxFrame
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	var cmd []byte
	for {
		b, err := r.line()
		if err != nil {
			return nil, err // io.EOF between frames is a clean end
		}
		if len(b) > 0 {
			cmd = b
			break
		}
	}
	f := &r.frame
	f.Command = commandString(cmd)
	esc := escapes(f.Command)

	r.hdr = r.hdr[:0]
	r.offs = r.offs[:0]
	contentLength := -1
	for {
		b, err := r.line()
		if err != nil {
			return nil, unexpected(err, "in the headers of a "+f.Command+" frame")
		}
		if len(b) == 0 {
			break
		}
		colon := bytes.IndexByte(b, ':')
		if colon < 0 {
			return nil, fmt.Errorf("%w: header line %q of a %s frame has no colon", ErrMalformed, b, f.Command)
		}
		if len(r.hdr)+len(b) > maxFrame {
			return nil, fmt.Errorf("%w: headers of a %s frame exceed %d bytes", ErrFrameTooLarge, f.Command, maxFrame)
		}
		ks := len(r.hdr)
		r.hdr = append(r.hdr, b[:colon]...)
		ke := len(r.hdr)
		r.hdr = append(r.hdr, b[colon+1:]...)
		ve := len(r.hdr)
		if esc {
			k, err := unescapeInPlace(r.hdr[ks:ke])
			if err != nil {
				return nil, fmt.Errorf("%w: key %q of a %s frame", err, b[:colon], f.Command)
			}
			v, err := unescapeInPlace(r.hdr[ke:ve])
			if err != nil {
				return nil, fmt.Errorf("%w: value %q of a %s frame", err, b[colon+1:], f.Command)
			}
			// Compact: the value moves left to follow the (possibly shorter) key.
			vs := ks + len(k)
			copy(r.hdr[vs:], v)
			ke, ve = vs, vs+len(v)
			r.hdr = r.hdr[:ve]
		}
		// STOMP 1.2: with repeated headers only the first counts.
		if contentLength < 0 && string(r.hdr[ks:ke]) == HdrContentLength {
			n, err := strconv.Atoi(string(r.hdr[ke:ve]))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w: content-length %q of a %s frame", ErrMalformed, r.hdr[ke:ve], f.Command)
			}
			if n > maxFrame {
				return nil, fmt.Errorf("%w: content-length %d of a %s frame exceeds %d", ErrFrameTooLarge, n, f.Command, maxFrame)
			}
			contentLength = n
		}
		r.offs = append(r.offs, ks, ke, ke, ve)
	}
	// Headers alias r.hdr, which no longer moves until the next ReadFrame.
	f.Headers = f.Headers[:0]
	for i := 0; i < len(r.offs); i += 4 {
		f.Headers = append(f.Headers, Header{
			Key:   aliasString(r.hdr[r.offs[i]:r.offs[i+1]]),
			Value: aliasString(r.hdr[r.offs[i+2]:r.offs[i+3]]),
		})
	}

	if contentLength >= 0 {
		if cap(r.body) < contentLength {
			r.body = make([]byte, contentLength)
		}
		r.body = r.body[:contentLength]
		if _, err := io.ReadFull(r.br, r.body); err != nil {
			return nil, unexpected(err, fmt.Sprintf("in the %d-byte body of a %s frame", contentLength, f.Command))
		}
		nul, err := r.br.ReadByte()
		if err != nil {
			return nil, unexpected(err, "before the NUL ending a "+f.Command+" frame")
		}
		if nul != 0 {
			return nil, fmt.Errorf("%w: %s frame: byte %#x after a %d-byte body where NUL was due", ErrMalformed, f.Command, nul, contentLength)
		}
	} else {
		r.body = r.body[:0]
		for {
			b, err := r.br.ReadSlice(0)
			if len(r.body)+len(b) > maxFrame {
				return nil, fmt.Errorf("%w: body of a %s frame exceeds %d bytes", ErrFrameTooLarge, f.Command, maxFrame)
			}
			r.body = append(r.body, b...)
			if err == nil {
				r.body = r.body[:len(r.body)-1] // the NUL
				break
			}
			if err != bufio.ErrBufferFull {
				return nil, unexpected(err, "in the body of a "+f.Command+" frame")
			}
		}
	}
	f.Body = r.body
	return f, nil
}

// aliasString views b as a string without copying. The Reader never writes into bytes it has handed
// out until the next ReadFrame, which is the documented lifetime of a Frame.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func unexpected(err error, where string) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("stomp: reading %s: %w", where, err)
}
