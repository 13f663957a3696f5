package stomp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// ServerError is an ERROR frame received from the server.
type ServerError struct {
	Message string // the "message" header
	Body    string
}

// Error shows the message header and the first line of the body (ActiveMQ puts a Java stack trace there).
func (e *ServerError) Error() string {
	first, _, _ := strings.Cut(e.Body, "\n")
	if first == "" || first == e.Message {
		return "stomp: server ERROR: " + e.Message
	}
	return "stomp: server ERROR: " + e.Message + ": " + first
}

// Is makes errors.Is(err, ErrServer) true for every *ServerError.
func (e *ServerError) Is(target error) bool { return target == ErrServer }

// serverError copies an ERROR frame into an error that outlives the frame.
func serverError(f *Frame) *ServerError {
	msg, _ := f.Get(HdrMessage)
	return &ServerError{Message: string([]byte(msg)), Body: string(f.Body)}
}

// Options configure Dial.
type Options struct {
	Host     string        // the virtual host header; "localhost" if empty
	Login    string        // optional credentials
	Passcode string        //
	Timeout  time.Duration // for the TCP connect and the CONNECTED answer; 30 s if zero
}

// Conn is one STOMP 1.2 connection. It is not safe for concurrent use, except Close.
type Conn struct {
	nc       net.Conn
	r        *Reader
	wbuf     []byte
	version  string
	server   string
	session  string
	receipts int // numbers the receipts of Disconnect
}

// Dial connects to addr (host:port), sends CONNECT and waits for CONNECTED. Heart-beats are off (0,0):
// a killed server is noticed by the reset TCP connection, a hung one by read deadlines.
func Dial(ctx context.Context, addr string, opt Options) (*Conn, error) {
	timeout := opt.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("stomp: dial %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &Conn{nc: nc, r: NewReader(nc), wbuf: make([]byte, 0, 4096)}
	host := opt.Host
	if host == "" {
		host = "localhost"
	}
	f := Frame{Command: CmdConnect, Headers: []Header{
		{HdrAcceptVersion, "1.2"}, {HdrHost, host}, {HdrHeartBeat, "0,0"},
	}}
	if opt.Login != "" {
		f.Headers = append(f.Headers, Header{HdrLogin, opt.Login}, Header{HdrPasscode, opt.Passcode})
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()
	if err := c.Send(&f); err != nil {
		nc.Close()
		return nil, fmt.Errorf("stomp: CONNECT to %s: %w", addr, err)
	}
	got, err := c.r.ReadFrame()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("stomp: waiting for CONNECTED from %s: %w", addr, err)
	}
	switch got.Command {
	case CmdConnected:
	case CmdError:
		nc.Close()
		return nil, fmt.Errorf("stomp: CONNECT to %s: %w", addr, serverError(got))
	default:
		nc.Close()
		return nil, fmt.Errorf("%w: %s answered CONNECT with %s", ErrMalformed, addr, got.Command)
	}
	v, _ := got.Get(HdrVersion)
	s, _ := got.Get(HdrServer)
	id, _ := got.Get(HdrSession)
	c.version, c.server, c.session = string([]byte(v)), string([]byte(s)), string([]byte(id))
	if c.version == "" {
		c.version = "1.0" // STOMP 1.2: a server that omits version speaks 1.0
	}
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

// Version is the protocol version the server chose ("1.2").
func (c *Conn) Version() string { return c.version }

// Server is the server header of CONNECTED, e.g. "ActiveMQ/5.17.2".
func (c *Conn) Server() string { return c.server }

// Session is the session id the server gave.
func (c *Conn) Session() string { return c.session }

// NetConn is the underlying connection (for deadlines).
func (c *Conn) NetConn() net.Conn { return c.nc }

// Buffer appends f to the write buffer without sending it; Flush sends everything buffered in one write.
func (c *Conn) Buffer(f *Frame) { c.wbuf = AppendFrame(c.wbuf, f) }

// Buffered is the number of bytes waiting for Flush.
func (c *Conn) Buffered() int { return len(c.wbuf) }

// Flush writes the buffered frames.
func (c *Conn) Flush() error {
	if len(c.wbuf) == 0 {
		return nil
	}
	_, err := c.nc.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	if err != nil {
		return c.explain(err)
	}
	return nil
}

// Send buffers f and flushes: one frame, one write.
func (c *Conn) Send(f *Frame) error {
	c.Buffer(f)
	return c.Flush()
}

// explain turns a write error into the server's ERROR frame when the server sent one before closing.
func (c *Conn) explain(werr error) error {
	_ = c.nc.SetReadDeadline(time.Now().Add(time.Second))
	f, err := c.r.ReadFrame()
	_ = c.nc.SetReadDeadline(time.Time{})
	if err == nil && f.Command == CmdError {
		return fmt.Errorf("%w (write failed: %v)", serverError(f), werr)
	}
	return fmt.Errorf("stomp: write: %w", werr)
}

// ReadFrame reads the next frame. An ERROR frame becomes a *ServerError (errors.Is(err, ErrServer)).
func (c *Conn) ReadFrame() (*Frame, error) {
	f, err := c.r.ReadFrame()
	if err != nil {
		return nil, err
	}
	if f.Command == CmdError {
		return nil, serverError(f)
	}
	return f, nil
}

// AwaitReceipt reads frames until the RECEIPT whose receipt-id is id. Other frames before it (e.g.
// MESSAGE) are an error, since a caller that awaits a receipt is not consuming.
func (c *Conn) AwaitReceipt(id string) error {
	for {
		f, err := c.ReadFrame()
		if err != nil {
			return fmt.Errorf("stomp: waiting for receipt %q: %w", id, err)
		}
		if f.Command != CmdReceipt {
			return fmt.Errorf("%w: got %s while waiting for receipt %q", ErrMalformed, f.Command, id)
		}
		if got, _ := f.Get(HdrReceiptID); got == id {
			return nil
		}
	}
}

// Subscribe sends SUBSCRIBE for destination with subscription id, acknowledgement mode ack ("auto",
// "client", "client-individual") and extra headers (e.g. activemq.prefetchSize).
func (c *Conn) Subscribe(id, destination, ack string, extra ...Header) error {
	f := Frame{Command: CmdSubscribe, Headers: append([]Header{
		{HdrID, id}, {HdrDestination, destination}, {HdrAck, ack},
	}, extra...)}
	return c.Send(&f)
}

// Unsubscribe sends UNSUBSCRIBE for subscription id.
func (c *Conn) Unsubscribe(id string) error {
	return c.Send(&Frame{Command: CmdUnsubscribe, Headers: []Header{{HdrID, id}}})
}

// Disconnect sends DISCONNECT with a receipt, waits up to timeout for it (frames before it, such as
// in-flight MESSAGEs, are skipped), and closes the connection.
func (c *Conn) Disconnect(timeout time.Duration) error {
	defer c.nc.Close()
	c.receipts++
	id := "disconnect-" + strconv.Itoa(c.receipts)
	if err := c.Send(&Frame{Command: CmdDisconnect, Headers: []Header{{HdrReceipt, id}}}); err != nil {
		return err
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	for {
		f, err := c.ReadFrame()
		if err != nil {
			return fmt.Errorf("stomp: waiting for the DISCONNECT receipt: %w", err)
		}
		if f.Command == CmdReceipt {
			if got, _ := f.Get(HdrReceiptID); got == id {
				return nil
			}
		}
	}
}

// Close closes the connection without DISCONNECT. It may be called concurrently with other methods to
// unblock them.
func (c *Conn) Close() error {
	err := c.nc.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
