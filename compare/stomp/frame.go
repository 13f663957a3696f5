// Package stomp is a small STOMP 1.2 client, written for the paper's §5 comparison with ActiveMQ.
//
// The paper measured ActiveMQ 5.4 through its Java (JMS/OpenWire) client. This reproduction is written in
// Go, and no Go STOMP or OpenWire library is served here, so we speak STOMP 1.2 ourselves: it is a text
// protocol simple enough to implement in a few hundred lines, and ActiveMQ serves it natively from the same
// broker core, store (KahaDB) and queues as OpenWire.
//
// A frame is a command line, header lines "key:value", an empty line, a body and a NUL byte
// (https://stomp.github.io/stomp-specification-1.2.html):
//
//	SEND
//	destination:/queue/test
//	persistent:true
//	content-length:5
//
//	hello^@
//
// Header keys and values are escaped (\r \n \c \\) in every frame except CONNECT and CONNECTED. A body
// with a content-length header may contain NUL bytes; without it the body ends at the first NUL. Between
// frames a peer may send end-of-lines as heart-beats.
//
// Hot paths allocate nothing per frame: Writer appends into one reused buffer, and Reader returns a Frame
// whose header strings and body alias the Reader's buffers until the next ReadFrame (like
// bufio.Scanner.Bytes); copy what you keep.
package stomp

import (
	"strconv"
)

// Commands used by this client (client frames, then server frames).
const (
	CmdConnect     = "CONNECT"
	CmdStomp       = "STOMP"
	CmdSend        = "SEND"
	CmdSubscribe   = "SUBSCRIBE"
	CmdUnsubscribe = "UNSUBSCRIBE"
	CmdAck         = "ACK"
	CmdNack        = "NACK"
	CmdBegin       = "BEGIN"
	CmdCommit      = "COMMIT"
	CmdAbort       = "ABORT"
	CmdDisconnect  = "DISCONNECT"
	CmdConnected   = "CONNECTED"
	CmdMessage     = "MESSAGE"
	CmdReceipt     = "RECEIPT"
	CmdError       = "ERROR"
)

// Header names used by this client.
const (
	HdrAcceptVersion = "accept-version"
	HdrHost          = "host"
	HdrLogin         = "login"
	HdrPasscode      = "passcode"
	HdrHeartBeat     = "heart-beat"
	HdrVersion       = "version"
	HdrServer        = "server"
	HdrSession       = "session"
	HdrDestination   = "destination"
	HdrContentLength = "content-length"
	HdrContentType   = "content-type"
	HdrReceipt       = "receipt"
	HdrReceiptID     = "receipt-id"
	HdrID            = "id"
	HdrAck           = "ack"
	HdrSubscription  = "subscription"
	HdrMessageID     = "message-id"
	HdrMessage       = "message"
	HdrPersistent    = "persistent"
	// HdrActiveMQPrefetch is ActiveMQ's SUBSCRIBE extension: how many messages the broker may push
	// before the client acknowledges (with ack:auto, before it has received them).
	HdrActiveMQPrefetch = "activemq.prefetchSize"
)

// Header is one header line.
type Header struct {
	Key, Value string
}

// Frame is one STOMP frame. A Frame from Reader.ReadFrame aliases the Reader's buffers (Command is a
// constant for the known server commands) and is valid until the next ReadFrame.
type Frame struct {
	Command string
	Headers []Header
	Body    []byte
}

// Get returns the value of the first header named key (STOMP 1.2: the first of repeated headers wins).
func (f *Frame) Get(key string) (string, bool) {
	for i := range f.Headers {
		if f.Headers[i].Key == key {
			return f.Headers[i].Value, true
		}
	}
	return "", false
}

// Set replaces the first header named key, or appends it.
func (f *Frame) Set(key, value string) {
	for i := range f.Headers {
		if f.Headers[i].Key == key {
			f.Headers[i].Value = value
			return
		}
	}
	f.Headers = append(f.Headers, Header{key, value})
}

// Del removes every header named key.
func (f *Frame) Del(key string) {
	h := f.Headers[:0]
	for _, x := range f.Headers {
		if x.Key != key {
			h = append(h, x)
		}
	}
	f.Headers = h
}

// escapes reports whether frames of this command escape their headers (all but CONNECT and CONNECTED).
func escapes(command string) bool {
	return command != CmdConnect && command != CmdConnected && command != CmdStomp
}

// AppendFrame appends the wire form of f to dst. Headers are escaped as STOMP 1.2 requires, and a
// content-length header is added when f has a body and no content-length of its own, so bodies may hold
// NUL bytes. It allocates nothing when dst has room.
func AppendFrame(dst []byte, f *Frame) []byte {
	dst = append(dst, f.Command...)
	dst = append(dst, '\n')
	esc := escapes(f.Command)
	hasLength := false
	for _, h := range f.Headers {
		if h.Key == HdrContentLength {
			hasLength = true
		}
		dst = appendHeaderText(dst, h.Key, esc)
		dst = append(dst, ':')
		dst = appendHeaderText(dst, h.Value, esc)
		dst = append(dst, '\n')
	}
	if len(f.Body) > 0 && !hasLength {
		dst = append(dst, HdrContentLength...)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, int64(len(f.Body)), 10)
		dst = append(dst, '\n')
	}
	dst = append(dst, '\n')
	dst = append(dst, f.Body...)
	return append(dst, 0)
}

func appendHeaderText(dst []byte, s string, esc bool) []byte {
	if !esc {
		return append(dst, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\n':
			dst = append(dst, '\\', 'n')
		case ':':
			dst = append(dst, '\\', 'c')
		case '\\':
			dst = append(dst, '\\', '\\')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// unescapeInPlace decodes STOMP 1.2 header escapes in b, returning the shorter prefix of b that holds
// the result.
func unescapeInPlace(b []byte) ([]byte, error) {
	w := 0
	for r := 0; r < len(b); r++ {
		c := b[r]
		if c == '\\' {
			if r+1 >= len(b) {
				return nil, ErrBadEscape
			}
			r++
			switch b[r] {
			case 'r':
				c = '\r'
			case 'n':
				c = '\n'
			case 'c':
				c = ':'
			case '\\':
				c = '\\'
			default:
				return nil, ErrBadEscape
			}
		}
		b[w] = c
		w++
	}
	return b[:w], nil
}
