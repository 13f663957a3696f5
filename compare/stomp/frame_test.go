package stomp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func read(t *testing.T, wire string) *Frame {
	t.Helper()
	f, err := NewReader(strings.NewReader(wire)).ReadFrame()
	if err != nil {
		t.Fatalf("ReadFrame(%q): %v", wire, err)
	}
	return f
}

func TestAppendFrameSend(t *testing.T) {
	f := Frame{Command: CmdSend, Headers: []Header{{HdrDestination, "/queue/a"}, {HdrPersistent, "true"}}, Body: []byte("hello")}
	got := string(AppendFrame(nil, &f))
	want := "SEND\ndestination:/queue/a\npersistent:true\ncontent-length:5\n\nhello\x00"
	if got != want {
		t.Fatalf("AppendFrame = %q, want %q", got, want)
	}
}

func TestAppendFrameNoBodyNoLength(t *testing.T) {
	got := string(AppendFrame(nil, &Frame{Command: CmdDisconnect, Headers: []Header{{HdrReceipt, "r1"}}}))
	if want := "DISCONNECT\nreceipt:r1\n\n\x00"; got != want {
		t.Fatalf("AppendFrame = %q, want %q", got, want)
	}
}

func TestAppendFrameKeepsExplicitContentLength(t *testing.T) {
	f := Frame{Command: CmdSend, Headers: []Header{{HdrContentLength, "3"}}, Body: []byte("abc")}
	if got := string(AppendFrame(nil, &f)); strings.Count(got, "content-length") != 1 {
		t.Fatalf("content-length written twice: %q", got)
	}
}

func TestEscaping(t *testing.T) {
	f := Frame{Command: CmdSend, Headers: []Header{{"a:b", "x\ny\rz\\w:v"}}}
	wire := string(AppendFrame(nil, &f))
	if want := "SEND\na\\cb:x\\ny\\rz\\\\w\\cv\n\n\x00"; wire != want {
		t.Fatalf("escaped = %q, want %q", wire, want)
	}
	back := read(t, wire)
	if len(back.Headers) != 1 || back.Headers[0] != f.Headers[0] {
		t.Fatalf("round trip headers = %q, want %q", back.Headers, f.Headers)
	}
}

func TestConnectFramesAreNotEscaped(t *testing.T) {
	f := Frame{Command: CmdConnect, Headers: []Header{{"passcode", `a\b:c`}}}
	wire := string(AppendFrame(nil, &f))
	if !strings.Contains(wire, "passcode:a\\b:c\n") {
		t.Fatalf("CONNECT header was escaped: %q", wire)
	}
	g := read(t, "CONNECTED\nserver:x\\y\nversion:1.2\n\n\x00")
	if v, _ := g.Get("server"); v != `x\y` {
		t.Fatalf("CONNECTED server = %q, want %q (no unescaping)", v, `x\y`)
	}
}

func TestBadEscape(t *testing.T) {
	_, err := NewReader(strings.NewReader("MESSAGE\nk:a\\tb\n\n\x00")).ReadFrame()
	if !errors.Is(err, ErrBadEscape) {
		t.Fatalf("err = %v, want ErrBadEscape", err)
	}
}

func TestContentLengthBodyWithNULs(t *testing.T) {
	body := []byte{'a', 0, 'b', 0, 0, 'c'}
	f := Frame{Command: CmdMessage, Headers: []Header{{HdrMessageID, "m1"}}, Body: body}
	wire := AppendFrame(nil, &f)
	wire = append(wire, AppendFrame(nil, &Frame{Command: CmdReceipt, Headers: []Header{{HdrReceiptID, "7"}}})...)
	r := NewReader(bytes.NewReader(wire))
	got, err := r.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if got.Command != CmdMessage || !bytes.Equal(got.Body, body) {
		t.Fatalf("got %s body %q, want MESSAGE body %q", got.Command, got.Body, body)
	}
	if id, _ := got.Get(HdrMessageID); id != "m1" {
		t.Fatalf("message-id = %q", id)
	}
	got, err = r.ReadFrame()
	if err != nil || got.Command != CmdReceipt {
		t.Fatalf("second frame = %v, %v; want RECEIPT", got, err)
	}
	if _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame err = %v, want io.EOF", err)
	}
}

func TestBodyWithoutContentLengthEndsAtNUL(t *testing.T) {
	r := NewReader(strings.NewReader("MESSAGE\nk:v\n\nabc\x00\n\r\nRECEIPT\nreceipt-id:1\n\n\x00"))
	f, err := r.ReadFrame()
	if err != nil || string(f.Body) != "abc" {
		t.Fatalf("body = %q, %v; want abc", f.Body, err)
	}
	f, err = r.ReadFrame() // heart-beat EOLs in between are skipped
	if err != nil || f.Command != CmdReceipt {
		t.Fatalf("frame after heart-beats = %v, %v", f, err)
	}
}

func TestCRLFAndRepeatedHeaders(t *testing.T) {
	f := read(t, "MESSAGE\r\nfoo:first\r\nfoo:second\r\n\r\nx\x00")
	if v, _ := f.Get("foo"); v != "first" {
		t.Fatalf("foo = %q, want first (the first repeated header wins)", v)
	}
	if len(f.Headers) != 2 || string(f.Body) != "x" {
		t.Fatalf("headers %q body %q", f.Headers, f.Body)
	}
}

func TestErrorFrame(t *testing.T) {
	wire := "ERROR\nmessage:malformed frame received\ncontent-type:text/plain\ncontent-length:10\n\nsee below!\x00"
	f := read(t, wire)
	if f.Command != CmdError {
		t.Fatalf("command = %q", f.Command)
	}
	err := error(serverError(f))
	if !errors.Is(err, ErrServer) {
		t.Fatalf("errors.Is(%v, ErrServer) = false", err)
	}
	if !strings.Contains(err.Error(), "malformed frame received") || !strings.Contains(err.Error(), "see below!") {
		t.Fatalf("error text %q lacks the message or body", err)
	}
}

func TestMalformedFrames(t *testing.T) {
	for name, wire := range map[string]string{
		"no colon":          "MESSAGE\nnocolon\n\n\x00",
		"bad length":        "MESSAGE\ncontent-length:x\n\n\x00",
		"no NUL after body": "MESSAGE\ncontent-length:1\n\nab\x00",
		"truncated body":    "MESSAGE\ncontent-length:10\n\nab",
		"truncated headers": "MESSAGE\nk:v\n",
	} {
		if _, err := NewReader(strings.NewReader(wire)).ReadFrame(); err == nil {
			t.Errorf("%s: ReadFrame(%q) succeeded", name, wire)
		}
	}
}

func TestFrameTooLarge(t *testing.T) {
	r := NewReader(strings.NewReader("MESSAGE\ncontent-length:100\n\n" + strings.Repeat("x", 100) + "\x00"))
	r.MaxFrame = 50
	if _, err := r.ReadFrame(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v, want ErrFrameTooLarge", err)
	}
}

func TestSetDel(t *testing.T) {
	var f Frame
	f.Set("a", "1")
	f.Set("b", "2")
	f.Set("a", "3")
	f.Del("b")
	if len(f.Headers) != 1 || f.Headers[0] != (Header{"a", "3"}) {
		t.Fatalf("headers = %q", f.Headers)
	}
}

// TestReadFrameAllocatesNothing: the consumer's hot path reuses the Reader's buffers.
func TestReadFrameAllocatesNothing(t *testing.T) {
	msg := AppendFrame(nil, &Frame{Command: CmdMessage, Headers: []Header{
		{HdrMessageID, "ID:host-1:1:1:1"}, {HdrDestination, "/queue/t"}, {HdrSubscription, "0"},
	}, Body: bytes.Repeat([]byte{'x'}, 200)})
	src := &loop{frame: msg}
	r := NewReader(src)
	if _, err := r.ReadFrame(); err != nil { // warm up the buffers
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := r.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ReadFrame allocates %.1f times per frame, want 0", allocs)
	}
}

func TestAppendFrameAllocatesNothing(t *testing.T) {
	f := Frame{Command: CmdSend, Headers: []Header{{HdrDestination, "/queue/t"}, {HdrPersistent, "true"}}, Body: make([]byte, 200)}
	buf := make([]byte, 0, 1024)
	if allocs := testing.AllocsPerRun(1000, func() { buf = AppendFrame(buf[:0], &f) }); allocs != 0 {
		t.Fatalf("AppendFrame allocates %.1f times per frame, want 0", allocs)
	}
}

// loop is an endless stream repeating one frame.
type loop struct {
	frame []byte
	off   int
}

func (l *loop) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.frame[l.off:])
		n += c
		l.off = (l.off + c) % len(l.frame)
	}
	return n, nil
}

func BenchmarkReadFrame(b *testing.B) {
	msg := AppendFrame(nil, &Frame{Command: CmdMessage, Headers: []Header{
		{HdrMessageID, "ID:host-1:1:1:1"}, {HdrDestination, "/queue/t"}, {HdrSubscription, "0"},
	}, Body: bytes.Repeat([]byte{'x'}, 200)})
	r := NewReader(&loop{frame: msg})
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendFrame(b *testing.B) {
	f := Frame{Command: CmdSend, Headers: []Header{{HdrDestination, "/queue/t"}, {HdrPersistent, "true"}}, Body: make([]byte, 200)}
	buf := AppendFrame(nil, &f)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFrame(buf[:0], &f)
	}
}
