package stomp

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// fakeServer accepts one connection and runs script on it with a Reader of the client's frames.
func fakeServer(t *testing.T, script func(r *Reader, w net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		script(NewReader(c), c)
	}()
	return l.Addr().String()
}

func expect(r *Reader, cmd string) (*Frame, error) {
	f, err := r.ReadFrame()
	if err != nil {
		return nil, err
	}
	if f.Command != cmd {
		return nil, errors.New("got " + f.Command + ", want " + cmd)
	}
	return f, nil
}

func TestDialSendReceipt(t *testing.T) {
	serverErr := make(chan error, 1)
	addr := fakeServer(t, func(r *Reader, w net.Conn) {
		f, err := expect(r, CmdConnect)
		if err != nil {
			serverErr <- err
			return
		}
		if v, _ := f.Get(HdrAcceptVersion); v != "1.2" {
			serverErr <- errors.New("accept-version " + v)
			return
		}
		io.WriteString(w, "CONNECTED\nversion:1.2\nserver:Fake/1.0\nsession:s1\n\n\x00")
		for i := 0; i < 3; i++ {
			f, err := expect(r, CmdSend)
			if err != nil {
				serverErr <- err
				return
			}
			if id, ok := f.Get(HdrReceipt); ok {
				io.WriteString(w, "\n\nRECEIPT\nreceipt-id:"+id+"\n\n\x00") // with heart-beat EOLs first
			}
		}
		serverErr <- nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Version() != "1.2" || c.Server() != "Fake/1.0" || c.Session() != "s1" {
		t.Fatalf("version %q server %q session %q", c.Version(), c.Server(), c.Session())
	}
	f := Frame{Command: CmdSend, Headers: []Header{{HdrDestination, "/queue/q"}}, Body: []byte("x")}
	c.Buffer(&f)
	c.Buffer(&f) // two frames in one write
	f.Set(HdrReceipt, "r-9")
	if err := c.Send(&f); err != nil {
		t.Fatal(err)
	}
	if err := c.AwaitReceipt("r-9"); err != nil {
		t.Fatal(err)
	}
	if err := <-serverErr; err != nil {
		t.Fatal(err)
	}
}

func TestDialRejected(t *testing.T) {
	addr := fakeServer(t, func(r *Reader, w net.Conn) {
		r.ReadFrame()
		io.WriteString(w, "ERROR\nmessage:login failed\n\n\x00")
	})
	_, err := Dial(context.Background(), addr, Options{Login: "u", Passcode: "p"})
	if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "login failed") {
		t.Fatalf("err = %v, want the server's ERROR", err)
	}
}

func TestReadAfterServerCloses(t *testing.T) {
	addr := fakeServer(t, func(r *Reader, w net.Conn) {
		r.ReadFrame()
		io.WriteString(w, "CONNECTED\nversion:1.2\n\n\x00MESSAGE\ncontent-length:5\n\nab") // then dies mid-frame
	})
	c, err := Dial(context.Background(), addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.ReadFrame()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestDialHonoursContext(t *testing.T) {
	addr := fakeServer(t, func(r *Reader, w net.Conn) {
		r.ReadFrame()
		time.Sleep(5 * time.Second) // never answers
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Dial(ctx, addr, Options{}); err == nil {
		t.Fatal("Dial succeeded without CONNECTED")
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("Dial took %v after its context ended", d)
	}
}
