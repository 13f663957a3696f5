package log

import "sync/atomic"

// This file is the size of a log's write buffer, the user-space buffer in
// front of the active segment (writeBufferSize). Every log starts with
// 64 KiB. A log whose appends fill it, one written faster than its flushes
// empty the buffer, reaches the page cache in 64 KiB writes. Such a log's
// buffer grows once, to grownWriteBufferSize, at the first append that
// finds it full: one write(2) then copies up to 1 MiB into the page cache,
// and the flush, which writes out whatever the buffer holds when it runs,
// does more of that copy on the flusher's goroutine, beside the appends.
// A set of at least writeBufferSize bytes is still written straight to the
// file, grown buffer or not: its write(2) is large enough already.
//
// The grown buffers of a Manager's logs are at most
// Config.GrownWriteBuffers (log.grown.buffers.max, default 32: 32 MiB); a
// log opened on its own (Open) may grow its one buffer unless that is 0. A
// grown buffer is kept for the log's life and handed back at Close.

// grownWriteBufferSize is a grown write buffer: as large as the broker's
// grown read buffer, so that one read's requests to one partition reach the
// page cache in one write.
const grownWriteBufferSize = 1 << 20

// DefaultGrownWriteBuffers is log.grown.buffers.max's default.
const DefaultGrownWriteBuffers = 32

// writeBuffers counts a Manager's grown write buffers.
type writeBuffers struct {
	max     int64 // Config.GrownWriteBuffers
	held    atomic.Int64
	refused atomic.Int64
}

// take reserves a grown buffer; nil (a log opened on its own) always can.
func (w *writeBuffers) take() bool {
	if w == nil {
		return true
	}
	for {
		n := w.held.Load()
		if n >= w.max {
			w.refused.Add(1)
			return false
		}
		if w.held.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// give hands a grown buffer back.
func (w *writeBuffers) give() {
	if w != nil {
		w.held.Add(-1)
	}
}

// growBufferLocked gives the log the grown buffer, if it has not got it and
// the bound allows. It is called by an append that found the buffer full,
// just after the drain, so the buffer is empty. l.mu is held.
func (l *Log) growBufferLocked() {
	if l.bufGrown || len(l.buf) != 0 || l.cfg.GrownWriteBuffers <= 0 || !l.bufs.take() {
		return
	}
	l.bufGrown = true
	l.buf = make([]byte, 0, grownWriteBufferSize)
}

// WriteBufferStats returns how many of the Manager's logs hold a grown write
// buffer now, and how many times the bound refused one since the start.
func (m *Manager) WriteBufferStats() (held, refused int64) {
	return m.bufs.held.Load(), m.bufs.refused.Load()
}
