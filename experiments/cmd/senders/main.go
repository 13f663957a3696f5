// Command senders tells a batch-1 producer's own cost from its broker's: it
// runs our producer, or the batch-1 ceiling probe's sender, into a reader that
// does nothing but read (docs/PERFORMANCE.md, "The producer probes' sender").
//
//	senders -mode read [-addr A] [-lowat 65536] [-rsize 1048576]
//	senders -mode probe|probereq|ours [-addr A] [-n 4000000]
//
// read listens on -addr, sets SO_RCVBUF 4 MiB (experiments/ceiling's
// SocketBuffer) and SO_RCVLOWAT -lowat on each connection it accepts, reads it
// -rsize bytes at a time into a buffer it discards, and prints its reads and
// bytes per read when the sender hangs up. probe sends -n magic-0 messages of
// 200 bytes, one write(2) each with Nagle's algorithm on, built as the
// ceiling probe builds them (ceiling.AppendMessage); probereq sends the
// probe's message inside the PRODUCE request our producer sends
// (protocol.AppendProduceHeader), 23 bytes more a message, so that what the
// request's framing costs can be told from the rest of ours; ours sends them with
// producer.SyncProducer.Send, one message a call, magic 0, as producer-perf
// does. A sender prints its rate and its own CPU time (getrusage) per message.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/experiments/ceiling"
	"github.com/kafkarepro/kafkarepro/internal/tuning"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "senders:", err)
		os.Exit(1)
	}
}

func run() error {
	mode := flag.String("mode", "read", "read, probe, probereq or ours")
	addr := flag.String("addr", "127.0.0.1:19999", "the reader's address")
	n := flag.Int("n", 4_000_000, "messages a sender sends")
	lowat := flag.Int("lowat", ceiling.WriteSize, "the reader's SO_RCVLOWAT")
	rsize := flag.Int("rsize", 1<<20, "the reader's read(2) size")
	flag.Parse()
	payload := make([]byte, 200)
	switch *mode {
	case "read":
		return read(*addr, *lowat, *rsize)
	case "probe", "probereq":
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.(*net.TCPConn).SetNoDelay(false); err != nil {
			return err
		}
		buf := make([]byte, 0, 512)
		if *mode == "probereq" {
			return timed("probereq", *n, func() error {
				b, f := protocol.AppendProduceHeader(buf[:0], "senders", -1)
				_, err := c.Write(f.Finish(ceiling.AppendMessage(b, payload)))
				return err
			})
		}
		return timed("probe", *n, func() error {
			_, err := c.Write(ceiling.AppendMessage(buf[:0], payload))
			return err
		})
	case "ours":
		cfg := producer.DefaultConfig()
		cfg.BrokerList = "0:" + *addr
		cfg.Magic = message.MagicV0
		p, err := producer.NewSync(cfg)
		if err != nil {
			return err
		}
		defer p.Close()
		if err := p.Send("senders", -1, payload); err != nil { // dials
			return err
		}
		return timed("ours", *n, func() error { return p.Send("senders", -1, payload) })
	}
	return fmt.Errorf("-mode %q: want read, probe, probereq or ours", *mode)
}

// timed calls send n times, on one thread as every sender of the throughput
// tools does (tuning.LockSender), and prints the rate and this process's CPU
// per message.
func timed(name string, n int, send func() error) error {
	defer tuning.LockSender()()
	c0, t0 := cpu(), time.Now()
	for range n {
		if err := send(); err != nil {
			return err
		}
	}
	el, used := time.Since(t0), cpu()-c0
	fmt.Printf("%s: %.0f msg/s, cpu %.3f us/msg, %.2f cores\n", name, float64(n)/el.Seconds(),
		used.Seconds()*1e6/float64(n), used.Seconds()/el.Seconds())
	return nil
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// read serves connections until killed.
func read(addr string, lowat, rsize int) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		_ = c.(*net.TCPConn).SetReadBuffer(ceiling.SocketBuffer)
		if err := ceiling.WakeAt(c, lowat); err != nil {
			return fmt.Errorf("SO_RCVLOWAT %d: %w", lowat, err)
		}
		go func() {
			defer c.Close()
			buf := make([]byte, rsize)
			var reads, bytes int64
			for {
				m, err := c.Read(buf)
				reads++
				bytes += int64(m)
				if err != nil {
					fmt.Fprintf(os.Stderr, "reader: %d reads, %d bytes, %.0f bytes/read\n", reads, bytes, float64(bytes)/float64(reads))
					return
				}
			}
		}()
	}
}
