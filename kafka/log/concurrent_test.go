package log

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// TestConcurrentAppendReadRetention runs a producer, background flushes,
// consumers and retention at once for a short while (meant for -race). The
// consumers check every CRC and every offset they see; a Chunk whose file
// was closed under it, a torn read or a data race fails the test.
func TestConcurrentAppendReadRetention(t *testing.T) {
	cfg := testConfig()
	cfg.FileSize = 4 << 10
	cfg.FlushInterval = 20
	cfg.RetentionSize = 16 << 10
	l := openLog(t, t.TempDir(), cfg, false)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var appended, read, deleted atomic.Int64
	fail := make(chan error, 16)
	report := func(err error) {
		select {
		case fail <- err:
		default:
		}
	}

	wg.Add(1)
	go func() { // producer
		defer wg.Done()
		set := make([]byte, 0, 64<<10)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			set = set[:0]
			n := 1 + i%30
			for j := range n {
				set = message.AppendV0(set, payload(i+j, 50+(i+j)%200))
			}
			if _, err := l.Append(set); err != nil {
				report(err)
				return
			}
			appended.Add(int64(n))
		}
	}()

	for r := range 3 {
		wg.Add(1)
		go func() { // consumer
			defer wg.Done()
			offset := l.Offsets(-2, 1)[0]
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := l.Read(offset, 1000+r*3000)
				if errors.Is(err, ErrOffsetOutOfRange) {
					offset = l.Offsets(-2, 1)[0] // retention passed us: rewind to earliest
					continue
				}
				if err != nil {
					report(err)
					return
				}
				if c.Len == 0 {
					time.Sleep(100 * time.Microsecond)
					continue
				}
				b := make([]byte, c.Len)
				time.Sleep(time.Duration(r) * 50 * time.Microsecond) // let retention run under the Chunk
				_, err = c.ReadAt(b)
				c.Release()
				if err != nil {
					report(err)
					return
				}
				it := message.NewIterator(b, offset)
				for it.Next() {
					if !it.Message().Valid() {
						report(errors.New("consumer saw a bad CRC"))
						return
					}
					read.Add(1)
				}
				if it.Err() != nil || it.Consumed() == 0 && c.Len >= 250+9 {
					report(errors.New("consumer got a fetch without a whole message"))
					return
				}
				offset += int64(it.Consumed())
			}
		}()
	}

	wg.Add(1)
	go func() { // retention
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			n, err := l.DeleteOldSegments(time.Now())
			if err != nil {
				report(err)
				return
			}
			deleted.Add(int64(n))
		}
	}()

	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	select {
	case err := <-fail:
		t.Fatal(err)
	default:
	}
	t.Logf("appended %d messages, consumers read %d, retention deleted %d segments", appended.Load(), read.Load(), deleted.Load())
	if appended.Load() == 0 || read.Load() == 0 || deleted.Load() == 0 {
		t.Fatalf("the test did not exercise everything: appended %d, read %d, deleted %d", appended.Load(), read.Load(), deleted.Load())
	}
	if l.Size() > cfg.RetentionSize+cfg.FileSize+64<<10 {
		t.Errorf("size %d well above the retention size %d", l.Size(), cfg.RetentionSize)
	}
}
