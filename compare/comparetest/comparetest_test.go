package comparetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
)

// fake is an in-memory compare.System whose "server" can be killed, with knobs that break it the ways
// the suite must catch.
type fake struct {
	ep     compare.Endpoint
	killed chan struct{}
	idle   time.Duration

	mu     sync.Mutex
	queued map[string]int

	noSettings  bool // Settings lacks the fairness keys
	loseOne     bool // Consume stops one message short and says nothing
	anonymous   bool // errors do not name the server log
	ignoreKills bool // Produce and Consume succeed although the server was killed
}

func (f *fake) Name() string { return "fake" }

func (f *fake) Settings() map[string]string {
	if f.noSettings {
		return map[string]string{"protocol": "none"}
	}
	m := map[string]string{}
	for _, k := range []string{"persistence", "flush", "ack", "prefetch", "protocol", "client", "server_version"} {
		m[k] = "fake " + k
	}
	return m
}

func (f *fake) dead(what string) error {
	if f.anonymous {
		return errors.New(what + ": connection reset")
	}
	return fmt.Errorf("%s: connection reset (server log %s)", what, f.ep.LogPath)
}

func (f *fake) isKilled() bool {
	select {
	case <-f.killed:
		return true
	default:
		return false
	}
}

func (f *fake) Produce(ctx context.Context, spec compare.ProduceSpec) (compare.Result, error) {
	start := time.Now()
	for i := range spec.Messages {
		if f.isKilled() {
			if f.ignoreKills {
				break
			}
			return compare.Result{Messages: int64(i)}, f.dead("produce")
		}
		f.mu.Lock()
		f.queued[spec.Topic]++
		f.mu.Unlock()
		if spec.Sent != nil {
			spec.Sent.Add(1)
		}
		if i%100 == 99 {
			time.Sleep(time.Millisecond) // a slow server, so that a kill lands mid-test
		}
	}
	n := int64(spec.Messages)
	return compare.Result{Messages: n, Bytes: n * int64(spec.MessageSize), Elapsed: time.Since(start)}, nil
}

func (f *fake) Consume(ctx context.Context, spec compare.ConsumeSpec) (compare.Result, error) {
	start := time.Now()
	want := spec.Messages
	if f.loseOne {
		want--
	}
	for got := 0; got < want; {
		f.mu.Lock()
		ok := f.queued[spec.Topic] > 0
		if ok {
			f.queued[spec.Topic]--
		}
		f.mu.Unlock()
		if ok {
			got++
			if spec.Received != nil {
				spec.Received.Add(1)
			}
			continue
		}
		select { // empty queue: wait for more, for the server's death or for the idle timeout
		case <-f.killed:
			if f.ignoreKills {
				want = got
				continue
			}
			return compare.Result{Messages: int64(got)}, f.dead("consume")
		case <-time.After(f.idle):
			return compare.Result{Messages: int64(got)}, errors.New("consume: idle")
		}
	}
	n := int64(spec.Messages)
	return compare.Result{Messages: n, Bytes: n * int64(spec.MessageSize), Elapsed: time.Since(start)}, nil
}

func (f *fake) DiskBytes() (int64, error) { return 10 << 20, nil }
func (f *fake) Close() error              { return nil }

// suite is the Suite of a fake configured by setup, with a fake server that Kill ends.
func suite(setup func(*fake)) Suite[*fake] {
	var killed chan struct{} // the server of the test under way: made by Start, handed to the fake by New
	return Suite[*fake]{Service: "fake", Title: "Fake", Kind: "broker",
		Start: func(t testing.TB) Server {
			killed = make(chan struct{})
			ch := killed
			return Server{
				Endpoint: compare.Endpoint{Host: "127.0.0.1", Port: 1, LogPath: t.TempDir() + "/fake.log", Version: "0.1"},
				Kill:     func() error { close(ch); return nil },
			}
		},
		New: func(ep compare.Endpoint) (*fake, error) {
			f := &fake{ep: ep, killed: killed, idle: 2 * time.Minute, queued: map[string]int{}}
			if setup != nil {
				setup(f)
			}
			return f, nil
		},
		SetIdleTimeout: func(f *fake, d time.Duration) { f.idle = d },
	}
}

// recorder is a testing.TB that records failures instead of failing the real test, so that a test
// can check the suite catches a broken adapter. Fatal ends the goroutine, as in package testing.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recorder) add(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}
func (r *recorder) Error(args ...any)                 { r.add(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.add(fmt.Sprintf(format, args...)) }
func (r *recorder) Fatal(args ...any)                 { r.add(fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.add(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// failures runs one suite case against a recorder and returns what it reported.
func failures(t *testing.T, test func(testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		test(r)
	}()
	<-done
	return r.failures
}

func TestSuitePassesAWorkingAdapter(t *testing.T) {
	s := suite(nil)
	for name, test := range map[string]func(testing.TB){
		"ProduceConsume": s.ProduceConsume, "KilledMidConsume": s.KilledMidConsume, "KilledMidProduce": s.KilledMidProduce,
	} {
		if f := failures(t, test); len(f) != 0 {
			t.Errorf("%s failed a working adapter: %q", name, f)
		}
	}
}

func TestSuiteCatchesBrokenAdapters(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*fake)
		test  func(Suite[*fake]) func(testing.TB)
		want  string
	}{
		{"missing settings", func(f *fake) { f.noSettings = true },
			func(s Suite[*fake]) func(testing.TB) { return s.ProduceConsume }, `Settings()["flush"] is empty`},
		{"lost message", func(f *fake) { f.loseOne = true },
			func(s Suite[*fake]) func(testing.TB) { return s.ProduceConsume }, "consumed"},
		{"error without the log", func(f *fake) { f.anonymous = true },
			func(s Suite[*fake]) func(testing.TB) { return s.KilledMidConsume }, "does not name the broker log"},
		{"consume survives a kill", func(f *fake) { f.ignoreKills = true },
			func(s Suite[*fake]) func(testing.TB) { return s.KilledMidConsume }, "Consume succeeded although the broker was killed"},
		{"produce survives a kill", func(f *fake) { f.ignoreKills = true },
			func(s Suite[*fake]) func(testing.TB) { return s.KilledMidProduce }, "Produce succeeded although the broker was killed"},
	}
	for _, c := range cases {
		f := failures(t, c.test(suite(c.setup)))
		if len(f) == 0 || !strings.Contains(strings.Join(f, "\n"), c.want) {
			t.Errorf("%s: the suite reported %q, want a failure containing %q", c.name, f, c.want)
		}
	}
}

func TestThroughputSkipsWithoutASize(t *testing.T) {
	t.Setenv("KAFKAREPRO_MEASURE_MESSAGES", "")
	s := suite(nil)
	t.Run("skip", func(t *testing.T) {
		s.Throughput(t)
		t.Error("Throughput ran without KAFKAREPRO_MEASURE_MESSAGES")
	})
}
