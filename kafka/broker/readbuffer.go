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
// kernel holds: when, after an unanswered request, the connection has
// nothing left to read and its last read filled all the room it was given.
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
// as much.
type fillReader struct {
	c    net.Conn
	full bool
}

func (f *fillReader) Read(p []byte) (int, error) {
	n, err := f.c.Read(p)
	if n > 0 && n == len(p) {
		f.full = true
	}
	return n, err
}

// growRead is called between requests, after one that gets no answer and
// with nothing buffered: it gives the connection the grown buffer if a
// read since the last call filled the room it had and the budget allows.
// Nothing buffered means nothing to carry over to the new buffer.
func (cn *conn) growRead() {
	full := cn.src.full
	cn.src.full = false
	if !full || cn.grown || cn.r.Buffered() != 0 {
		return
	}
	if !cn.b.mem.reserveRead(grownReadBufferSize) {
		cn.b.reads.refused.Add(1)
		return
	}
	cn.grown = true
	cn.r = bufio.NewReaderSize(cn.src, grownReadBufferSize)
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
