// Package log is the broker's storage: one append-only log per topic
// partition, kept as a list of segment files addressed by byte offsets.
//
// The name is the paper's ("Kafka: a Distributed Messaging System for Log
// Processing": a partition is a log), kept although it shadows the standard
// library's package log; this module logs with log/slog, so no file needs
// both, and one that did would import this package under another name.
//
// §3.1 "Simple storage": each partition of a topic is one logical log,
// physically a set of segment files of roughly the same size. A producer's
// message set is appended to the last segment only. There are no message ids:
// a message is addressed by its byte offset in the logical log, and the next
// message's offset is this offset plus the message's length (ids increase but
// are not consecutive). The broker keeps the sorted list of segment start
// offsets in memory and binary-searches it to find the segment holding a fetch
// offset; nothing else of the paper's is indexed.
//
// On disk (docs/PROTOCOL.md §3):
//
//	<log.dir>/
//	├── .lock                           flock(2)ed by the Manager from open to Close: one broker per directory
//	├── .kafka_cleanshutdown            written by Manager.Close (each partition's last segment and size), removed at start
//	├── clicks-0/                       topic "clicks", partition 0
//	│   ├── 00000000000000000000.kafka  messages at offsets [0, 536870912)
//	│   ├── 00000000000000000000.index  its 0.8 logical offsets (index.go)
//	│   ├── 00000000000000000000.view   its 0.8 entries, if produced as such (view.go)
//	│   ├── 00000000000536870912.kafka  messages at offsets [536870912, 1073741851)
//	│   └── 00000000001073741851.kafka  the active segment: appends go here
//	└── clicks-1/
//	    └── 00000000000000000000.kafka
//
// The in-memory picture of one partition (the paper's figure 2):
//
//	segment list:  [ 0 | 536870912 | 1073741851 ]      sort.Search(offset)
//	                  │       │            │
//	                  ▼       ▼            ▼
//	               file 0   file 1      file 2 ──────────────┐
//	                                    ◄── flushed ──►◄ written ►◄ buffer ►
//	                                                   ▲          ▲          ▲
//	                                      FlushedEnd    file end   LogEndOffset
//
// §3.1: "A message is only exposed to the consumers after it is flushed."
// Append copies a set into a small user-space buffer (or writes it straight
// to the file when it is large; the buffer of a log whose appends fill it
// grows, writebuffer.go); a flush writes that buffer out, fsyncs, and
// only then moves the high-water mark, the end consumers may read to. A flush
// runs after Config.FlushInterval messages (signalled to a per-log flusher
// goroutine, so the fsync never happens under the append lock) or every
// Config.FlushIntervalMs milliseconds (the Manager's timer). A segment is
// fsynced as it is rolled, so only the last segment of a partition can ever
// hold unflushed bytes.
//
// Crash semantics: bytes still in the user-space buffer are lost if the
// process dies, and bytes in the page cache but not yet fsynced are lost if
// the machine dies. Neither was ever visible to a consumer, and the producer
// of that era never waited for an acknowledgement (paper §5), so no reader
// can observe a message that later disappears.
//
// §3.1 "Stateless broker": the broker does not track what consumers have
// read; a segment is deleted when it is older than the retention time (or the
// partition is larger than the retention size), and a consumer may rewind to
// any offset still on disk.
//
// §3.3: every message carries a CRC. Append refuses a set whose CRCs do not
// match, and after an unclean shutdown (no .kafka_cleanshutdown marker) the
// last segment of every partition is scanned and truncated at the first
// message with a bad length, bad magic or inconsistent CRC. The marker
// records where each partition's last segment ends; after a clean shutdown
// a segment is trusted without a scan only if its file still ends there
// (marker.go).
//
// Storage errors (failure.go): a write that fails or stops short, on a full
// disk say, is undone by truncating the file back to the last whole set and
// fsyncing it, so the log is exactly as before the append. The partition
// then refuses appends with ErrStorage, all of them, so that no later set is
// stored after a refused one (a hole), until a probe finds room for the
// write that failed; after a failed fsync, until the broker restarts.
//
// Beyond the paper, for the Kafka protocol as 0.8 defined it (the broker's
// kafka08*.go): each segment has an index of 0.8's logical offsets, which
// count messages (index.go), and may have a view, the 0.8 entries of the
// messages produced through that protocol, written as they are appended, so
// that a Kafka protocol fetch of them is a sendfile too (view.go). Both are
// rebuilt or dropped, never trusted over the segment.
//
// Read hands out a Chunk, a (file, position, length) window inside one
// segment that the broker passes to sendfile; a Chunk pins its segment's file
// open until Release, even if retention deletes the segment meanwhile.
package log
