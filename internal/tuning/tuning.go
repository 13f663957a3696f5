// Package tuning holds the settings the throughput tools read a partition with (consumer-perf, figure 5's
// consumer in compare/ours, the consumer/ranges hot path) and send with (producer-perf, figure 4's
// producer tests): choices of a benchmark on this project's machines, not of the consumer and producer
// libraries, whose defaults stay 0.7's.
package tuning

import "runtime"

// RangesInFlight is how many byte ranges the throughput tools keep in flight (consumer.Ranges,
// consumer-perf's --fetches-in-flight): as many as 0.7's consumer queues fetched chunks ahead of the
// application (queuedchunks.max, 10), 3 MB of 300 KiB ranges, within the consumer's 4 MiB receive buffer
// (consumer.ReceiveBuffer), topped up five at a time: enough that the broker always has a request to serve
// while the consumer checks an answer.
const RangesInFlight = 10

// ReaderProcs is the GOMAXPROCS the throughput tools read one partition with (consumer-perf's --procs,
// figure 5's consumer in compare/ours while it reads). Their reading is one goroutine; with a second P, Go's
// scheduler wakes a thread to look for work each time that goroutine blocks on the socket and is readied
// again, and on a 2-core machine that thread takes its time from the broker serving the fetches.
const ReaderProcs = 1

// LockSender locks the calling goroutine, a throughput tool's send loop (producer-perf's, and each
// system's producer test in the harness), to its OS thread, and returns what undoes it. Such a loop calls
// write(2) back to back and seldom blocks; every 10 ms Go's scheduler preempts it onto the global run queue
// and wakes another thread, which may take it, so the loop moves between threads, and between the cores it
// shares with the broker on a 2-core machine. The ceiling probe's sender runs locked (experiments/ceiling),
// so the two are measured alike; a program that sends from a goroutine it does not lock gets the unlocked
// figure (producer-perf --lock-thread=false).
func LockSender() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
