package experiments

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kafkarepro/kafkarepro/compare"
)

// threadSystem is a fakeSystem whose producer yields to the scheduler
// between messages, while other goroutines keep every P busy, and records
// the threads it ran on.
type threadSystem struct {
	*fakeSystem
	threads map[int]int // thread id -> messages sent on it
}

func (s *threadSystem) Produce(ctx context.Context, spec compare.ProduceSpec) (compare.Result, error) {
	busy, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for busy.Err() == nil {
				runtime.Gosched()
			}
		})
	}
	defer wg.Wait()
	defer stop()
	for range spec.Messages {
		s.threads[unix.Gettid()]++
		runtime.Gosched() // what a preemption does: onto the global run queue, another thread woken
		spec.Sent.Add(1)
	}
	return compare.Result{Messages: int64(spec.Messages)}, nil
}

// TestProducerTestSendsFromOneThread: every system's producer test runs its
// send loop on one OS thread (tuning.LockSender), as the ceiling probe's
// sender does, however often the scheduler takes the loop off its thread.
func TestProducerTestSendsFromOneThread(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps for a goroutine to have another thread to move to")
	}
	sys := &threadSystem{fakeSystem: &fakeSystem{name: "kafka"}, threads: map[int]int{}}
	tr := runProducer(context.Background(), testConfig(20000), sys, "kafka", "t", 1)
	if !tr.OK() {
		t.Fatalf("producer test failed: %+v", tr)
	}
	if len(sys.threads) != 1 {
		t.Errorf("the send loop ran on %d threads (messages per thread %v), want 1", len(sys.threads), sys.threads)
	}
	n := 0
	for _, c := range sys.threads {
		n += c
	}
	if n != 20000 {
		t.Errorf("counted %d messages, want 20000", n)
	}
}
