package machine

import "time"

// Periodic calls a read function now and then every interval in its own
// goroutine until Stop, and keeps what each call returns with ok. The perf
// harness samples its broker with it, a producer test the machine
// (StartActivity).
type Periodic[T any] struct {
	stop, done chan struct{}
	samples    []T // written by the first call, then by the goroutine only
}

// StartPeriodic calls read once before returning and then every interval.
func StartPeriodic[T any](every time.Duration, read func() (T, bool)) *Periodic[T] {
	p := &Periodic[T]{stop: make(chan struct{}), done: make(chan struct{})}
	take := func() {
		if s, ok := read(); ok {
			p.samples = append(p.samples, s)
		}
	}
	take()
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				take()
				return
			case <-t.C:
				take()
			}
		}
	}()
	return p
}

// Stop makes a last call and returns every sample kept, oldest first.
func (p *Periodic[T]) Stop() []T {
	close(p.stop)
	<-p.done
	return p.samples
}

// TenthEnds cuts the span from the first of n samples to the last into ten
// equal parts of time and returns, for each, the index of the first sample
// at or after its end (the last for the last tenth); at gives a sample's
// time. A tenth's change is then sample[ends[i]] less sample[ends[i-1]]
// (sample[0] for the first). Fewer than 11 samples give nil: a tenth would
// not have one of its own.
func TenthEnds(n int, at func(i int) time.Time) []int {
	if n < 11 {
		return nil
	}
	first := at(0)
	span := at(n - 1).Sub(first)
	ends := make([]int, 0, 10)
	j := 0
	for i := 1; i <= 10; i++ {
		end := first.Add(span * time.Duration(i) / 10)
		for j < n-1 && at(j).Before(end) {
			j++
		}
		ends = append(ends, j)
	}
	return ends
}
