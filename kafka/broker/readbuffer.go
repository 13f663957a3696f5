package broker

import (
	"bufio"
	"net"
	"sync/atomic"
)

// This file is the size of a connection's read buffer. Every connection
// starts with readBufferSize (64 KiB). A producer whose requests get no
// answer and that outruns the broker keeps more than that queued in its
// socket, and each read(2) then takes 64 KiB: a system call, and a window
// update the producer's kernel must process, per 64 KiB. Such a connection's
// buffer grows once, to grownReadBufferSize, so that one read takes what the
// kernel holds: after an unanswered request, when a read since the last
// request filled all the room it was given. The part of the next request
// already read moves to the new buffer (fillReader.carry), so growth does
// not wait for a read to end on a request's boundary, which requests of a
// size that does not divide 64 KiB (a batch of 50 messages is about 10 KiB)
// may never do.
//
// A grown buffer is kept for the connection's life and charged to the
// request memory budget (queued.max.request.bytes, memory.go); the grown
// buffers together hold at most its reserve, an eighth of it (32 MiB of the
// default 256 MiB, 32 such producers). When it is spent, or a large request
// is waiting for memory, the connection keeps its 64 KiB.

// grownReadBufferSize is a grown read buffer: the socket receive buffer of
// the shipped settings (socket.receive.buffer), so that one read can take
// about everything the kernel queues for the connection.
const grownReadBufferSize = 1 << 20

// fillReader is the connection as its read buffer sees it: it notes when a
// read filled all the room it was given, that is, the socket held at least
// as much. carry is what the buffer held when it was replaced by a larger
// one (growRead): the first read of the new buffer takes it.
type fillReader struct {
	c     net.Conn
	full  bool
	carry []byte
}

func (f *fillReader) Read(p []byte) (int, error) {
	if len(f.carry) > 0 {
		n := copy(p, f.carry)
		f.carry = f.carry[n:]
		return n, nil
	}
	n, err := f.c.Read(p)
	if n > 0 && n == len(p) {
		f.full = true
	}
	return n, err
}

// growRead is called between requests, after one that gets no answer and
// with no body held in the buffer (releaseBody), when a read since the last
// call filled the room it had (the loop tests src.full first, so a request
// pays a flag test): it gives the connection the grown buffer if the budget
// allows. The bytes still buffered, the start of the
// requests to come, are carried into the new buffer at once, so that
// r.Buffered() keeps counting them (the loop sleeps only when it is 0).
func (cn *conn) growRead() {
	full := cn.src.full
	cn.src.full = false
	if !full || cn.grown {
		return
	}
	if !cn.b.mem.reserveRead(grownReadBufferSize) {
		cn.b.reads.refused.Add(1)
		return
	}
	n := cn.r.Buffered()
	cn.src.carry, _ = cn.r.Peek(n) // buffered: cannot fail; the old buffer is not read again
	cn.grown = true
	cn.r = bufio.NewReaderSize(cn.src, grownReadBufferSize)
	if n > 0 {
		cn.r.Peek(n) // one Read, which takes all of carry from fillReader: cannot fail
	}
	cn.b.reads.grown.Add(1)
}

// releaseRead gives a grown buffer's charge back to the budget as the
// connection ends.
func (cn *conn) releaseRead() {
	if cn.grown {
		cn.grown = false
		cn.b.mem.releaseRead(grownReadBufferSize)
	}
}

// readBuffers counts the read buffers grown, and those the budget refused,
// since the start.
type readBuffers struct {
	grown, refused atomic.Int64
}

// ReadBufferStats returns how many connections' read buffers have grown to
// grownReadBufferSize since the start, and how many times the request
// memory budget refused one.
func (b *Broker) ReadBufferStats() (grown, refused int64) {
	return b.reads.grown.Load(), b.reads.refused.Load()
}
