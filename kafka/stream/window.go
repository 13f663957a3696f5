package stream

import (
	"fmt"
	"time"
)

// WindowKind is the shape of a window.
type WindowKind uint8

// The window kinds of §6's "different windowing functions".
const (
	// KindTumbling: back-to-back windows of one length, [k·size, (k+1)·size); each message is in one.
	KindTumbling WindowKind = iota + 1
	// KindHopping: windows of one length starting every advance, [k·advance, k·advance+size); a message is in
	// size/advance of them (rounded up).
	KindHopping
	// KindSession: per key, the messages closer than gap to one another; a session ends after gap without a
	// message of its key, and two sessions merge when a message falls within gap of both.
	KindSession
)

func (k WindowKind) String() string {
	switch k {
	case KindTumbling:
		return "tumbling"
	case KindHopping:
		return "hopping"
	case KindSession:
		return "session"
	}
	return fmt.Sprintf("WindowKind(%d)", k)
}

// Window is a window specification, made by Tumbling, Hopping or Session. Lengths are whole milliseconds,
// the unit of event time. The zero Window is invalid.
type Window struct {
	kind    WindowKind
	size    int64 // ms: the length (tumbling, hopping) or the gap (session)
	advance int64 // ms: the hop; = size for tumbling, 0 for session
}

// Tumbling returns back-to-back windows of length size. A size of zero, negative, or not a whole number of
// milliseconds is ErrBadWindow.
func Tumbling(size time.Duration) (Window, error) {
	ms, err := windowMs("tumbling window length", size)
	if err != nil {
		return Window{}, err
	}
	return Window{kind: KindTumbling, size: ms, advance: ms}, nil
}

// Hopping returns windows of length size starting every advance: 0 < advance ≤ size; advance = size is a
// tumbling window.
func Hopping(size, advance time.Duration) (Window, error) {
	ms, err := windowMs("hopping window length", size)
	if err != nil {
		return Window{}, err
	}
	adv, err := windowMs("hopping window advance", advance)
	if err != nil {
		return Window{}, err
	}
	if adv > ms {
		return Window{}, fmt.Errorf("%w: hopping window advance %v is longer than its length %v (messages between windows would be in none)",
			ErrBadWindow, advance, size)
	}
	if (ms+adv-1)/adv > MaxWindowsPerMessage {
		return Window{}, fmt.Errorf("%w: hopping window of %v every %v puts each message in %d windows, more than %d",
			ErrBadWindow, size, advance, (ms+adv-1)/adv, MaxWindowsPerMessage)
	}
	return Window{kind: KindHopping, size: ms, advance: adv}, nil
}

// MaxWindowsPerMessage bounds the windows a hopping window puts one message in (length / advance), since
// each costs an update per message.
const MaxWindowsPerMessage = 1000

// Session returns session windows closed after gap without a message of their key.
func Session(gap time.Duration) (Window, error) {
	ms, err := windowMs("session gap", gap)
	if err != nil {
		return Window{}, err
	}
	return Window{kind: KindSession, size: ms}, nil
}

func windowMs(what string, d time.Duration) (int64, error) {
	switch {
	case d <= 0:
		return 0, fmt.Errorf("%w: %s %v: must be positive", ErrBadWindow, what, d)
	case d%time.Millisecond != 0:
		return 0, fmt.Errorf("%w: %s %v: not a whole number of milliseconds (event time is in ms)", ErrBadWindow, what, d)
	}
	return d.Milliseconds(), nil
}

// Kind is the window's shape.
func (w Window) Kind() WindowKind { return w.kind }

// Size is the window's length (a session window's gap).
func (w Window) Size() time.Duration { return time.Duration(w.size) * time.Millisecond }

// Advance is the distance between window starts (0 for session windows).
func (w Window) Advance() time.Duration { return time.Duration(w.advance) * time.Millisecond }

func (w Window) String() string {
	switch w.kind {
	case KindTumbling:
		return fmt.Sprintf("tumbling %v", w.Size())
	case KindHopping:
		return fmt.Sprintf("hopping %v every %v", w.Size(), w.Advance())
	case KindSession:
		return fmt.Sprintf("session gap %v", w.Size())
	}
	return "no window"
}

func (w Window) valid() error {
	if w.kind == 0 || w.size <= 0 || (w.kind != KindSession && (w.advance <= 0 || w.advance > w.size)) {
		return fmt.Errorf("%w: %v (make one with Tumbling, Hopping or Session)", ErrBadWindow, w)
	}
	return nil
}

// lastStart is the start of the last window (tumbling, hopping) holding t: the largest multiple of advance ≤ t.
func (w Window) lastStart(t int64) int64 {
	return t - ((t%w.advance)+w.advance)%w.advance
}
