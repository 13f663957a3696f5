package hotpath

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// producerSend is the sync producer's Send of one batch: one PRODUCE
// request, one socket write (§5). The other end, a sink process, reads and
// drops the bytes, so the time and the allocations are the client's alone.
type producerSend struct {
	inMemory
	sink  *sink
	p     *producer.SyncProducer
	batch [][]byte
}

func openSend(batch int) func(dir string) (Op, error) {
	return func(string) (Op, error) {
		s, err := newSink()
		if err != nil {
			return nil, err
		}
		cfg := producer.DefaultConfig()
		cfg.BrokerList = "0:" + s.addr
		cfg.Magic = message.MagicV0 // the paper's format, as §5 measures it
		p, err := producer.NewSync(cfg)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("hotpath: producer for %s: %w", cfg.BrokerList, err), s.close())
		}
		o := &producerSend{sink: s, p: p, batch: make([][]byte, batch)}
		for i := range o.batch {
			o.batch[i] = make([]byte, PayloadSize)
		}
		// The first Send dials; the steady state starts after it.
		if err := o.Do(); err != nil {
			return nil, errors.Join(err, o.Close())
		}
		return o, nil
	}
}

func (o *producerSend) Do() error {
	if err := o.p.Send(topic, -1, o.batch...); err != nil {
		return fmt.Errorf("hotpath: producer/send of %d messages: %w", len(o.batch), err)
	}
	return nil
}

func (o *producerSend) Close() error { return errors.Join(o.p.Close(), o.sink.close()) }

// sink is a process that accepts connections on 127.0.0.1 and discards
// what they send: this binary again, started with HOTPATH_SINK=1 (see
// init). It runs apart so that neither its reads nor its scheduling count
// in the client's time, allocations or instructions. An instruction
// counter starts the sink itself, outside valgrind (which follows only the
// process it started and cannot run this one's fork), and names it in
// HOTPATH_SINK_ADDR.
type sink struct {
	addr  string
	cmd   *exec.Cmd // nil for a sink given by HOTPATH_SINK_ADDR
	stdin io.Closer
}

// sinkEnv is set in a sink process's environment; sinkAddrEnv names a
// sink already running.
const (
	sinkEnv     = "HOTPATH_SINK"
	sinkAddrEnv = "HOTPATH_SINK_ADDR"
)

func init() {
	if os.Getenv(sinkEnv) == "1" {
		if err := serveSink(); err != nil {
			fmt.Fprintln(os.Stderr, "hotpath sink:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// serveSink is the sink process: it prints its address, discards what
// every connection sends, and exits when its standard input closes (the
// parent is done or gone).
func serveSink() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
		}
	}()
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

func newSink() (*sink, error) {
	if addr := os.Getenv(sinkAddrEnv); addr != "" {
		return &sink{addr: addr}, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("hotpath: find this binary to start a sink: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), sinkEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("hotpath: start a sink: %w", err)
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stdin.Close()
		cmd.Wait()
		return nil, fmt.Errorf("hotpath: the sink said no address: %w", err)
	}
	return &sink{addr: strings.TrimSpace(addr), cmd: cmd, stdin: stdin}, nil
}

func (s *sink) close() error {
	if s.cmd == nil {
		return nil
	}
	s.stdin.Close()
	return s.cmd.Wait()
}

// consumerIterate is the consumer application's loop: PartitionIterator
// hands out one message at a time, CRC checked, fetching FetchSize bytes
// from a broker on loopback whenever its buffer runs out. It starts over at
// offset 0 before reaching the end, so it never waits for new messages.
type consumerIterate struct {
	inMemory
	lb  *loopback
	c   *consumer.SimpleConsumer
	it  *consumer.PartitionIterator
	end int64
	ctx context.Context
}

func openConsumerIterate(dir string) (Op, error) {
	lb, end, err := startBroker(dir, 2<<20)
	if err != nil {
		return nil, err
	}
	c := consumer.NewSimpleConsumer(lb.addr(), 30*time.Second)
	return &consumerIterate{lb: lb, c: c, it: consumer.NewPartitionIterator(c, topic, 0, 0, FetchSize),
		end: end, ctx: context.Background()}, nil
}

func (o *consumerIterate) Do() error {
	if !o.it.Next(o.ctx) {
		return fmt.Errorf("hotpath: consumer/iterate at %d: %w", o.it.NextOffset(), o.it.Err())
	}
	if o.it.NextOffset() == o.end {
		o.it.SeekTo(0)
	}
	return nil
}

func (o *consumerIterate) Close() error { return errors.Join(o.c.Close(), o.lb.close()) }
