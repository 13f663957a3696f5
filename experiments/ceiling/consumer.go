package ceiling

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/kafkarepro/kafkarepro/compare"
	"net"
	"os"
	"path/filepath"
)

// runConsumer writes a file of message sets, then sendfile(2)s it, from the
// start again as often as needed, to a reader that checks every CRC.
func runConsumer(ctx context.Context, cfg Config) (Result, error) {
	path := filepath.Join(cfg.Dir, "ceiling-consumer.set")
	fileMsgs := min(cfg.Messages, cfg.FileMessages)
	if err := writeSetFile(path, fileMsgs, cfg.MessageSize); err != nil {
		return Result{}, err
	}
	defer os.Remove(path)
	var clk *clock
	err := withSender(ctx, sendJob{file: path, messages: cfg.Messages, size: cfg.MessageSize, fileMsgs: fileMsgs}, func(c net.Conn) error {
		clk = newClock(cfg.Messages)
		return check(c, cfg.Messages, cfg.MessageSize, cfg.ReadSize, clk, nil)
	})
	if err != nil {
		return Result{}, err
	}
	return clk.result(clk.marks[9]), nil
}

// writeSetFile writes n messages of size bytes to path and syncs it, so
// that the probe reads clean pages from the page cache.
func writeSetFile(path string, n int64, size int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create the consumer probe's file: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	p := compare.Payload(size)
	msg := AppendMessage(nil, p)
	for range n {
		if _, err := w.Write(msg); err != nil {
			break
		}
	}
	err = errors.Join(w.Flush(), f.Sync(), f.Close())
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write the consumer probe's file %s: %w", path, err)
	}
	return nil
}

// SocketBuffer is the probes' socket buffers, sending and receiving
// (SO_SNDBUF, SO_RCVBUF, capped by the kernel): as large as our consumer's
// (consumer.ReceiveBuffer) and larger than the broker's, so that a buffer
// never bounds a ceiling.
const SocketBuffer = 4 << 20
