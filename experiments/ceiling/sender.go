package ceiling

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/internal/tuning"
)

// senderEnv marks a process started as a probe's sender: the probe runs
// its sender in a process of its own, as the broker is one, so that the
// sender and the reader do not share a Go runtime. Any binary that links
// this package can be that process (it re-executes itself; see init).
const senderEnv = "KAFKAREPRO_CEILING_SENDER"

// sendJob is what a sender process does, passed in its environment as
// "key=value,key=value".
type sendJob struct {
	addr     string // the reader's address
	file     string // consumer probe: the file to sendfile(2)
	messages int64
	size     int
	batch    int // producer probes: messages per write(2)
	fileMsgs int64
}

func (j sendJob) encode() string {
	return fmt.Sprintf("addr=%s,file=%s,messages=%d,size=%d,batch=%d,filemsgs=%d", j.addr, j.file, j.messages, j.size, j.batch, j.fileMsgs)
}

func decodeJob(s string) (sendJob, error) {
	var j sendJob
	for kv := range strings.SplitSeq(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "addr":
			j.addr = v
		case "file":
			j.file = v
		case "messages":
			j.messages, err = strconv.ParseInt(v, 10, 64)
		case "size":
			j.size, err = strconv.Atoi(v)
		case "batch":
			j.batch, err = strconv.Atoi(v)
		case "filemsgs":
			j.fileMsgs, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return j, fmt.Errorf("%s=%q: %w", k, v, err)
		}
	}
	return j, nil
}

func init() {
	if spec := os.Getenv(senderEnv); spec != "" {
		if err := senderMain(spec); err != nil {
			fmt.Fprintln(os.Stderr, "ceiling sender:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// senderMain is the sender process: it dials the reader and sends. It runs
// during package initialisation, which Go runs on the main goroutine locked
// to the main thread; the lock is also taken here, so that it does not
// depend on where senderMain is called: our producer tools lock their send
// loop the same way (internal/tuning.LockSender says why it matters).
func senderMain(spec string) error {
	defer tuning.LockSender()()
	j, err := decodeJob(spec)
	if err != nil {
		return err
	}
	tc, err := dialSender(j)
	if err != nil {
		return err
	}
	defer tc.Close()
	if j.file != "" {
		return sendFile(tc, j)
	}
	return sendSets(tc, j)
}

// dialSender opens a sender's connection to the reader. A producer probe's
// keeps Nagle's algorithm on, as our producer keeps it on a connection whose
// requests get no answer (producer.Config.NagleDisable, false by default)
// and as 0.7's SyncProducer did: with it off (Go's default) the kernel sends
// one segment per one-message write(2), costlier for both sides than what
// our producer does, and the probe would then bound nothing (our batch 1
// measured up to twice such a "ceiling" on one machine, docs/PERFORMANCE.md).
// The consumer probe's sendfile(2) writes whole files and keeps Go's
// default, as the broker's connections do.
func dialSender(j sendJob) (*net.TCPConn, error) {
	c, err := net.Dial("tcp", j.addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	_ = tc.SetWriteBuffer(SocketBuffer)
	if j.file == "" {
		if err := tc.SetNoDelay(false); err != nil {
			tc.Close()
			return nil, fmt.Errorf("turn Nagle's algorithm on: %w", err)
		}
	}
	return tc, nil
}

// sendFile sendfile(2)s j.file from the start as often as it takes.
func sendFile(c *net.TCPConn, j sendJob) error {
	f, err := os.Open(j.file)
	if err != nil {
		return err
	}
	defer f.Close()
	msgBytes := int64(headerSize + j.size)
	for left := j.messages; left > 0; left -= j.fileMsgs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		// io.CopyN of a file to a TCP connection is sendfile(2).
		if _, err := io.CopyN(c, f, min(left, j.fileMsgs)*msgBytes); err != nil {
			return fmt.Errorf("sendfile: %w", err)
		}
	}
	return nil
}

// sendSets builds sets of j.batch messages, a CRC each, and writes each
// set with one write(2).
func sendSets(c *net.TCPConn, j sendJob) error {
	p := compare.Payload(j.size)
	buf := make([]byte, 0, j.batch*(headerSize+j.size))
	for left := j.messages; left > 0; left -= int64(j.batch) {
		buf = buf[:0]
		for range min(left, int64(j.batch)) {
			buf = AppendMessage(buf, p)
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// withSender is how a probe gets its sender: withSenderProcess, except in
// the instruction count of scripts/ceiling-callgrind.sh (count_test.go),
// which keeps both sides in one process because callgrind does not survive
// a traced Go program's child exiting.
var withSender = withSenderProcess

// withSenderProcess listens on loopback, starts a sender process for job
// (this binary, re-executed) and runs receive on the connection it opens. It
// returns when both are done; the first error ends both.
func withSenderProcess(ctx context.Context, job sendJob, receive func(net.Conn) error) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary to run the sender: %w", err)
	}
	job.addr = ln.Addr().String()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), senderEnv+"="+job.encode())
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the sender: %w", err)
	}
	exited := make(chan error, 1)
	var waitErr error
	waited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(waited); exited <- waitErr }()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	var in net.Conn
	select {
	case in = <-accepted:
	case <-waited:
		// A short job's sender may connect, send everything and exit
		// before this select looks at the connection.
		select {
		case in = <-accepted:
		case <-time.After(time.Second):
			return fmt.Errorf("the sender exited before connecting (%v): %s", waitErr, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		return errors.New("the sender did not connect within 30 s")
	}
	_ = in.(*net.TCPConn).SetReadBuffer(SocketBuffer)
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill(); in.Close() })
	defer stop()
	rerr := receive(in)
	in.Close()
	if rerr != nil {
		cmd.Process.Kill()
	}
	serr := <-exited
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rerr != nil {
		return fmt.Errorf("reader: %w", rerr)
	}
	if serr != nil {
		return fmt.Errorf("sender: %v: %s", serr, stderr.String())
	}
	return nil
}
