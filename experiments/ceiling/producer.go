package ceiling

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// WriteSize is how many bytes the producer probes' reader collects before
// it writes them to the file (the broker's log buffers 64 KiB).
const WriteSize = 64 << 10

// FlushMessages is how often the producer probes' reader asks for an
// fsync: every 10,000 messages written, as the broker's shipped settings
// do (log.flush.interval, docs/PERFORMANCE.md). An fsync runs in its own
// goroutine and the writes go on meanwhile, as the broker's flusher does.
const FlushMessages = 10_000

// runProducer has a sender build sets of batch messages, CRC each, and
// write each set with one write(2); the reader checks every CRC and writes
// what it read to a file. The clock stops when the file holds everything
// and a last fsync has returned.
func runProducer(ctx context.Context, cfg Config, batch int) (Result, error) {
	path := filepath.Join(cfg.Dir, fmt.Sprintf("ceiling-producer%d.log", batch))
	f, err := os.Create(path)
	if err != nil {
		return Result{}, fmt.Errorf("create the producer probe's file: %w", err)
	}
	defer os.Remove(path)
	defer f.Close()
	fl := newFlusher(f)
	var clk *clock
	var end time.Time
	err = withSender(ctx, sendJob{messages: cfg.Messages, size: cfg.MessageSize, batch: batch}, func(c net.Conn) error {
		// The reader is woken once per WriteSize bytes queued, not per
		// write: a wake-up per request is work a reader can avoid (and
		// what makes a reader that keeps up slow its sender, see
		// docs/PERFORMANCE.md), so the ceiling does without it.
		if err := WakeAt(c, WriteSize); err != nil {
			return fmt.Errorf("SO_RCVLOWAT %d: %w", WriteSize, err)
		}
		clk = newClock(cfg.Messages)
		var written, flushAt int64 = 0, FlushMessages
		msgBytes := int64(headerSize + cfg.MessageSize)
		// The file gets WriteSize bytes per write(2), as a log writes its
		// buffer: when the reader keeps up with one-message writes, each
		// read holds one message, and a write(2) per read would make the
		// probe slower than the broker it bounds.
		pending := make([]byte, 0, WriteSize)
		write := func(b []byte) error {
			if _, err := f.Write(b); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
			written += int64(len(b)) / msgBytes
			if written >= flushAt {
				fl.kick()
				flushAt = (written/FlushMessages + 1) * FlushMessages
			}
			return nil
		}
		drain := func() error {
			err := write(pending)
			pending = pending[:0]
			return err
		}
		err := check(c, cfg.Messages, cfg.MessageSize, cfg.ReadSize, clk, func(b []byte) error {
			if len(pending) > 0 && len(pending)+len(b) > WriteSize {
				if err := drain(); err != nil {
					return err
				}
			}
			if len(b) >= WriteSize {
				return write(b)
			}
			pending = append(pending, b...)
			return nil
		})
		if err == nil && len(pending) > 0 {
			err = drain()
		}
		if err != nil {
			return err
		}
		err = fl.stop()
		end = time.Now()
		return err
	})
	if err != nil {
		fl.stop()
		return Result{}, err
	}
	r := clk.result(end)
	r.Fsyncs = fl.count
	return r, nil
}

// flusher fsyncs a file in its own goroutine whenever kicked; kicks that
// come while an fsync runs fold into one more.
type flusher struct {
	f     *os.File
	req   chan struct{}
	done  chan struct{}
	once  sync.Once
	err   error
	count int64
}

func newFlusher(f *os.File) *flusher {
	fl := &flusher{f: f, req: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(fl.done)
		for range fl.req {
			fl.count++
			if err := f.Sync(); err != nil && fl.err == nil {
				fl.err = err
			}
		}
	}()
	return fl
}

func (fl *flusher) kick() {
	select {
	case fl.req <- struct{}{}:
	default:
	}
}

// stop waits for the fsyncs asked for, then makes the last one.
func (fl *flusher) stop() error {
	fl.once.Do(func() {
		close(fl.req)
		<-fl.done
		fl.count++
		fl.err = errors.Join(fl.err, fl.f.Sync())
	})
	return fl.err
}
