// Package protocol is the wire protocol between Kafka clients and brokers in
// the 0.6/0.7 form the NetDB'11 paper describes (docs/PROTOCOL.md §4).
//
// §3.1 "efficient transfer": a producer sends a whole message set in one
// PRODUCE (or several sets, one per partition, in one MULTIPRODUCE) and does
// not wait for an answer; a consumer pulls with FETCH (or MULTIFETCH) naming a
// byte offset and a maximum size, and gets back raw log bytes. The message set
// travels as the same bytes in the producer's request, in the segment file and
// in the fetch response, so nothing here parses or copies it: decoders return
// sub-slices of the request body, and encoders append to a caller's buffer.
//
// Every request on the wire is
//
//	int32 size (bytes after this field) | int16 request id | body
//
// and every response is
//
//	int32 size (bytes after this field) | int16 error code | payload
//
// with big-endian integers and strings written as an int16 length followed by
// UTF-8 bytes. The broker reads a request's header with ReadRequestHeader (or
// ParseRequestHeader where the bytes are buffered) and its body with
// ReadBody, and parses the body with a per-connection Decoder, which also
// avoids allocating topic names. ReadRequest and DecodeRequest do both at once,
// allocating, for tools and for the fake brokers of tests. ReadResponse and the
// DecodeXxxResponse functions are the client side.
//
// Decoders are strict and total: they never panic, reject negative lengths and
// counts and any byte left over after the body, and wrap ErrMalformed with what
// was wrong and where. A negative fetch size is not malformed: it is a request
// the broker answers with ErrInvalidFetchSize (error code 4).
package protocol

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Request ids (docs/PROTOCOL.md §4).
const (
	RequestProduce      int16 = 0
	RequestFetch        int16 = 1
	RequestMultiFetch   int16 = 2
	RequestMultiProduce int16 = 3
	RequestOffsets      int16 = 4

	// Replication's requests (docs/PROTOCOL.md §10), after 0.7's five,
	// which stay byte-identical.
	RequestAckedProduce   int16 = 5 // PRODUCE with acks, answered per partition
	RequestMetadata       int16 = 6 // which broker leads each partition
	RequestReplicaFetch   int16 = 7 // a follower's fetch, answered with the high watermark
	RequestLeaderAndISR   int16 = 8 // the controller tells a broker to lead or follow
	RequestEpochEndOffset int16 = 9 // where a leader epoch ends (leader epochs, KIP-101)

	// requestLast is the highest id a broker accepts.
	requestLast = RequestEpochEndOffset
)

// DefaultMaxRequestSize is 0.7's max.socket.request.bytes (100 MiB): a request
// announcing a larger size closes the connection.
const DefaultMaxRequestSize = 100 << 20

// MaxResponseSize bounds what ReadResponse accepts (1 GiB) so a corrupt size
// field cannot make a client allocate without limit.
const MaxResponseSize = 1 << 30

// Request is what every request type implements; DecodeRequest returns one.
type Request interface {
	// RequestID is the id written after the size field.
	RequestID() int16
	// AppendTo appends the whole framed request (size, id, body) to dst.
	AppendTo(dst []byte) []byte
}

// RequestName returns the name of a request id, for logs.
func RequestName(id int16) string {
	switch id {
	case RequestProduce:
		return "PRODUCE"
	case RequestFetch:
		return "FETCH"
	case RequestMultiFetch:
		return "MULTIFETCH"
	case RequestMultiProduce:
		return "MULTIPRODUCE"
	case RequestOffsets:
		return "OFFSETS"
	case RequestAckedProduce:
		return "ACKED_PRODUCE"
	case RequestMetadata:
		return "METADATA"
	case RequestReplicaFetch:
		return "REPLICA_FETCH"
	case RequestLeaderAndISR:
		return "LEADER_AND_ISR"
	case RequestEpochEndOffset:
		return "EPOCH_END_OFFSET"
	}
	return fmt.Sprintf("request-%d", id)
}

// DecodeRequest parses the body of a request with the given id. It allocates
// the returned value; the broker's hot path uses a Decoder instead.
func DecodeRequest(id int16, body []byte) (Request, error) {
	var d *Decoder
	switch id {
	case RequestProduce:
		r, err := d.Produce(body)
		return r, err
	case RequestFetch:
		r, err := d.Fetch(body)
		return r, err
	case RequestMultiFetch:
		r, err := d.MultiFetch(body)
		return r, err
	case RequestMultiProduce:
		r, err := d.MultiProduce(body)
		return r, err
	case RequestOffsets:
		r, err := d.Offsets(body)
		return r, err
	case RequestAckedProduce:
		r, err := d.AckedProduce(body)
		return r, err
	case RequestMetadata:
		r, err := DecodeMetadata(body)
		return r, err
	case RequestReplicaFetch:
		r, err := d.ReplicaFetch(body)
		return r, err
	case RequestLeaderAndISR:
		r, err := DecodeLeaderAndISR(body)
		return r, err
	case RequestEpochEndOffset:
		r, err := DecodeEpochEndOffset(body)
		return r, err
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownRequest, id)
}

// ReadRequest reads one framed request from r. buf is scratch memory reused
// across calls (it may be nil); the returned body aliases newBuf, which the
// caller passes back on the next call. maxSize <= 0 means
// DefaultMaxRequestSize.
//
// Errors: io.EOF when r ends cleanly before a request starts;
// io.ErrUnexpectedEOF (wrapped) when it ends inside one; ErrRequestTooLarge
// when the size field exceeds maxSize; ErrMalformed when it is smaller than
// the id; ErrUnknownRequest for an id other than 0-9 (the body is then left
// unread, since the connection is to be closed). The buffer grows only as
// bytes actually arrive, so a lying size field costs no memory up front.
func ReadRequest(r io.Reader, buf []byte, maxSize int) (id int16, body []byte, newBuf []byte, err error) {
	if cap(buf) < 512 {
		buf = make([]byte, 0, 512)
	}
	id, n, err := ReadRequestHeader(r, buf[:RequestHeaderSize], maxSize)
	if err != nil {
		return id, nil, buf, err
	}
	body, buf, err = ReadBody(r, buf, n)
	if err != nil {
		return id, nil, buf, fmt.Errorf("protocol: reading %d-byte %s body: %w", n, RequestName(id), err)
	}
	return id, body, buf, nil
}

// RequestHeaderSize is the size field and the request id.
const RequestHeaderSize = 6

// ReadRequestHeader reads the size field and the id of the next request
// from r into hdr (RequestHeaderSize bytes of scratch) and checks them as
// ReadRequest does, returning the length of the body that follows. It is
// ReadRequest's first half, for a server that decides where the body goes
// once it knows its length (the broker waits for its request memory budget
// before it reads a large body into a buffer of exactly that size).
func ReadRequestHeader(r io.Reader, hdr []byte, maxSize int) (id int16, bodyLen int, err error) {
	id, bodyLen, err = ReadRequestFrame(r, hdr, maxSize)
	if err != nil {
		return id, bodyLen, err
	}
	return checkRequestID(id, int64(bodyLen)+2)
}

// ReadRequestFrame is ReadRequestHeader without the check of the id: a
// broker that serves another protocol on the same port (package
// protocol08, whose api_key sits where the id does) decides by itself.
func ReadRequestFrame(r io.Reader, hdr []byte, maxSize int) (id int16, bodyLen int, err error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxRequestSize
	}
	hdr = hdr[:RequestHeaderSize]
	// io.ReadFull's error is io.EOF only if nothing was read, and
	// io.ErrUnexpectedEOF for a part; another (a deadline, a reset) is kept
	// so the caller can tell an idle connection from a torn request.
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		if err == io.EOF {
			return 0, 0, io.EOF
		}
		return 0, 0, fmt.Errorf("protocol: reading request size: %w", err)
	}
	size := int64(int32(binary.BigEndian.Uint32(hdr)))
	if err := checkRequestSize(size, maxSize); err != nil {
		return 0, 0, err
	}
	if _, err := io.ReadFull(r, hdr[4:6]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, fmt.Errorf("protocol: reading request id: %w", err)
	}
	return int16(binary.BigEndian.Uint16(hdr[4:])), int(size - 2), nil
}

// ParseRequestHeader checks the RequestHeaderSize bytes of a request's
// size field and id already in memory (a server's read buffer), as
// ReadRequestHeader does after reading them, and returns the id and the
// length of the body that follows.
func ParseRequestHeader(hdr []byte, maxSize int) (id int16, bodyLen int, err error) {
	id, bodyLen, err = ParseRequestFrame(hdr, maxSize)
	if err != nil {
		return id, bodyLen, err
	}
	return checkRequestID(id, int64(bodyLen)+2)
}

// ParseRequestFrame is ParseRequestHeader without the check of the id (see
// ReadRequestFrame).
func ParseRequestFrame(hdr []byte, maxSize int) (id int16, bodyLen int, err error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxRequestSize
	}
	hdr = hdr[:RequestHeaderSize]
	size := int64(int32(binary.BigEndian.Uint32(hdr)))
	if err := checkRequestSize(size, maxSize); err != nil {
		return 0, 0, err
	}
	return int16(binary.BigEndian.Uint16(hdr[4:])), int(size - 2), nil
}

// CheckRequestID refuses an id no 0.7 broker serves (ErrUnknownRequest).
func CheckRequestID(id int16) error {
	if id < RequestProduce || id > requestLast {
		return fmt.Errorf("%w: %d", ErrUnknownRequest, id)
	}
	return nil
}

// checkRequestSize refuses a size field above maxSize or below the 2-byte id.
func checkRequestSize(size int64, maxSize int) error {
	if size > int64(maxSize) {
		return fmt.Errorf("%w: size field %d exceeds the limit of %d bytes", ErrRequestTooLarge, size, maxSize)
	}
	if size < 2 {
		return fmt.Errorf("%w: size field %d is smaller than the 2-byte request id", ErrMalformed, size)
	}
	return nil
}

// checkRequestID refuses an id no broker serves and returns the body's length.
func checkRequestID(id int16, size int64) (int16, int, error) {
	if id < RequestProduce || id > requestLast {
		return id, 0, fmt.Errorf("%w: %d (size field %d)", ErrUnknownRequest, id, size)
	}
	return id, int(size - 2), nil
}

// ReadBody reads exactly n bytes into buf, growing it geometrically as data
// arrives rather than trusting n up front, so a lying size field costs no
// memory. It returns the bytes and the buffer (grown or not) to reuse; the
// error is io.ErrUnexpectedEOF if r ends first.
func ReadBody(r io.Reader, buf []byte, n int) (body []byte, newBuf []byte, err error) {
	if cap(buf) >= n {
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return nil, buf, io.ErrUnexpectedEOF
		}
		return buf[:n], buf, nil
	}
	buf = buf[:0]
	for len(buf) < n {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(max(2*cap(buf), 64<<10), n))
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, buf, io.ErrUnexpectedEOF
		}
	}
	return buf, buf, nil
}

// AppendResponseHeader appends the 6-byte header of a response whose payload
// (what follows the error code) is payloadLen bytes long.
func AppendResponseHeader(dst []byte, payloadLen int, code ErrorCode) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(payloadLen+2))
	return binary.BigEndian.AppendUint16(dst, uint16(code))
}

// ResponseHeaderSize is the size of AppendResponseHeader's output.
const ResponseHeaderSize = 6

// ReadResponse reads one response from r (client side). The payload aliases
// newBuf, which the caller passes back next time. A size field below 2 or
// above MaxResponseSize is ErrMalformed.
func ReadResponse(r io.Reader, buf []byte) (code ErrorCode, payload []byte, newBuf []byte, err error) {
	if cap(buf) < 512 {
		buf = make([]byte, 0, 512)
	}
	hdr := buf[:6]
	if n, err := io.ReadFull(r, hdr); err != nil {
		if err == io.EOF && n == 0 {
			return 0, nil, buf, io.EOF
		}
		return 0, nil, buf, fmt.Errorf("protocol: reading response header: %w", io.ErrUnexpectedEOF)
	}
	size := int64(int32(binary.BigEndian.Uint32(hdr)))
	if size < 2 || size > MaxResponseSize {
		return 0, nil, buf, fmt.Errorf("%w: response size field %d outside [2, %d]", ErrMalformed, size, MaxResponseSize)
	}
	code = ErrorCode(int16(binary.BigEndian.Uint16(hdr[4:])))
	payload, buf, err = ReadBody(r, buf, int(size-2))
	if err != nil {
		return code, nil, buf, fmt.Errorf("protocol: reading %d-byte response payload: %w", size-2, err)
	}
	return code, payload, buf, nil
}

// appendRequestHeader appends the size and id of a request whose body is
// bodyLen bytes long. A request framed before its size is known passes 0 and
// calls finishRequest at the end.
func appendRequestHeader(dst []byte, id int16, bodyLen int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(bodyLen+2))
	return binary.BigEndian.AppendUint16(dst, uint16(id))
}

// finishRequest writes the size field of the request that starts at offset
// start of dst and ends at its end.
func finishRequest(dst []byte, start int) {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
}

// appendString writes s as int16 length + bytes. Callers validate topic names
// (at most a few hundred bytes) before encoding; a longer s would not fit the
// int16 and is the caller's bug.
func appendString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}
