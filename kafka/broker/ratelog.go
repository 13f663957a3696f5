package broker

import (
	"sync"
	"time"
)

// logInterval is how often each kind of warning a client can provoke at
// will (a bad request, a refused connection, a set refused on a full disk,
// running out of descriptors) is logged: once per interval, the line saying
// how many like it were held back since the last one. A flood of bad
// requests then costs a line every few seconds, not a line per request.
const logInterval = 5 * time.Second

// logLimiter lets one log line through per interval and counts the others.
type logLimiter struct {
	every time.Duration

	mu   sync.Mutex
	next time.Time
	held int
}

// allow reports whether to log now and, if so, how many lines were held
// back since the last one that was logged.
func (r *logLimiter) allow() (ok bool, held int) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Before(r.next) {
		r.held++
		return false, 0
	}
	r.next = now.Add(r.every)
	held, r.held = r.held, 0
	return true, held
}

// limiters are the broker's rate-limited warnings, one per kind.
type limiters struct {
	badRequest  logLimiter // a connection closed for a malformed, oversized or unknown request
	dropped     logLimiter // a produce dropped: bad topic, partition or message set
	storage     logLimiter // a set refused because its partition has a storage error
	refused     logLimiter // a connection refused by max.connections or max.connections.per.ip
	descriptors logLimiter // accept failed: out of file descriptors
	idle        logLimiter // a connection closed after connections.max.idle.ms without a request
}

func newLimiters(every time.Duration) *limiters {
	l := &limiters{}
	for _, r := range []*logLimiter{&l.badRequest, &l.dropped, &l.storage, &l.refused, &l.descriptors, &l.idle} {
		r.every = every
	}
	return l
}
