package experiments

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Progress draws one progress line for a long step on a terminal: a bar,
// the count, the current rate and the time left, rewritten in place with
// \r. When the writer is not a terminal it prints a plain line every few
// seconds instead, so logs stay readable.
type Progress struct {
	mu        sync.Mutex
	w         io.Writer
	tty       bool
	label     string
	total     int64
	start     time.Time
	lastPlain time.Time
	width     int
}

// NewProgress returns a progress display on w (nil: no output). It draws
// in place only when w is a terminal.
func NewProgress(w io.Writer) *Progress {
	p := &Progress{w: w, width: 30}
	if f, ok := w.(*os.File); ok {
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		p.tty = err == nil
	}
	return p
}

// Begin starts a new step of total units.
func (p *Progress) Begin(label string, total int64) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.total, p.start, p.lastPlain = label, total, time.Now(), time.Now()
	if !p.tty {
		fmt.Fprintf(p.w, "%s: started (%d messages)\n", label, total)
	}
}

// Update shows done units at the given rate (units per second).
func (p *Progress) Update(done int64, rate float64) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := p.line(done, rate)
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		return
	}
	if time.Since(p.lastPlain) >= 5*time.Second {
		p.lastPlain = time.Now()
		fmt.Fprintln(p.w, line)
	}
}

// End finishes the step with a final message.
func (p *Progress) End(msg string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K")
	}
	fmt.Fprintf(p.w, "%s: %s\n", p.label, msg)
}

func (p *Progress) line(done int64, rate float64) string {
	frac := 0.0
	if p.total > 0 {
		frac = min(float64(done)/float64(p.total), 1)
	}
	filled := int(frac * float64(p.width))
	bar := strings.Repeat("#", filled) + strings.Repeat(".", p.width-filled)
	// The time left uses the average rate so far: steadier than the last
	// interval's, which can be 0 while a server stalls.
	left := "?"
	elapsed := time.Since(p.start)
	avg := float64(done) / max(elapsed.Seconds(), 1e-9)
	if done >= p.total {
		left = "0s"
	} else if done > 0 && avg > 0 {
		left = fmtDuration(time.Duration(float64(p.total-done) / avg * float64(time.Second)))
	}
	// The last interval's rate can be 0 while a server holds back its
	// client for a moment; the average says how the test is going.
	return fmt.Sprintf("%-28s [%s] %5.1f%% %d/%d  %.0f msg/s now, %.0f avg  elapsed %s  left %s",
		p.label, bar, 100*frac, done, p.total, rate, avg, fmtDuration(elapsed), left)
}

func fmtDuration(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
