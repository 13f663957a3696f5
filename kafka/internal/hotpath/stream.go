package hotpath

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/stream"
)

// streamCount is §6's count over windows on one task (kafka/stream): a
// fetched set of 200-byte messages "key-NNN,<ms>,<padding>" of 1,000 keys,
// 100 per millisecond of event time, each message found and its CRC
// checked as message/iterate does, then its key and time parsed and its
// tumbling window's count (one second) updated; closed windows publish
// their 1,000 results to an emitter that only counts. Every pass moves
// event time on by the set's span, so windows keep opening and closing.
type streamCount struct {
	inMemory
	set  []byte
	span int64
	base int64
	task *stream.Task
	out  *countingEmitter
}

type countingEmitter struct{ n int }

func (c *countingEmitter) Emit(string, []byte, []byte) error { c.n++; return nil }

// keyedSet is message/iterate's set with keys and times: 1,500 messages
// "key-NNN,<ms>,<padding>" of PayloadSize bytes, and the event time it spans.
func keyedSet() (set []byte, span int64) {
	var p []byte
	for i := range iterateMessages {
		p = fmt.Appendf(p[:0], "key-%03d,", (i*7919)%1000)
		p = strconv.AppendInt(p, int64(i/100), 10)
		p = append(p, ',')
		for len(p) < PayloadSize {
			p = append(p, 'x')
		}
		set = message.AppendV0(set, p)
	}
	return set, int64((iterateMessages + 99) / 100)
}

func openStreamCount(string) (Op, error) {
	o := &streamCount{out: &countingEmitter{}}
	o.set, o.span = keyedSet()
	task, err := countTask(&o.base, o.out)
	if err != nil {
		return nil, err
	}
	o.task = task
	if err := warm(task, o.set, &o.base, o.span); err != nil {
		return nil, err
	}
	return o, nil
}

// warm feeds the task three seconds of event time (300,000 messages), so
// that the windows a measurement sees open and close reuse the memory of
// earlier ones: what is measured is the steady state.
func warm(task *stream.Task, set []byte, base *int64, span int64) error {
	for range 3000 / span {
		it := message.NewIterator(set, 0)
		for it.Next() {
			if err := task.Process(it.Offset(), it.NextOffset(), it.Message().Payload()); err != nil {
				return fmt.Errorf("hotpath: warming the stream task: %w", err)
			}
		}
		*base += span
	}
	return nil
}

// countTask is the task both stream paths run: a tumbling count of one
// second, event time the payload's plus *base.
func countTask(base *int64, out stream.Emitter) (*stream.Task, error) {
	w, err := stream.Tumbling(time.Second)
	if err != nil {
		return nil, err
	}
	count, err := stream.Windowed(stream.WindowedConfig{Window: w, Aggregation: stream.Count(), Output: "counts"})
	if err != nil {
		return nil, err
	}
	timeOf := stream.TimeField(',', 1)
	st := stream.Stage{Input: topic, Key: stream.KeyField(',', 0), Time: func(p []byte) (int64, error) {
		t, err := timeOf(p)
		return t + *base, err
	}, Processors: []stream.ProcessorFactory{count}}
	return stream.NewTask(st, "0-0", out)
}

func (o *streamCount) Do() error {
	it := message.NewIterator(o.set, 0)
	n := 0
	for it.Next() {
		m := it.Message()
		if !m.Valid() {
			return fmt.Errorf("hotpath: stream/count-tumbling: bad CRC at offset %d", it.Offset())
		}
		if err := o.task.Process(it.Offset(), it.NextOffset(), m.Payload()); err != nil {
			return fmt.Errorf("hotpath: stream/count-tumbling: %w", err)
		}
		n++
	}
	o.base += o.span
	if n != iterateMessages {
		return fmt.Errorf("hotpath: stream/count-tumbling: %d messages, want %d", n, iterateMessages)
	}
	if r := o.task.Report(); r.Skips() != 0 || r.Late != 0 {
		return fmt.Errorf("hotpath: stream/count-tumbling: %v", r)
	}
	return nil
}

// streamConsumeCount is consumer/iterate with the count of stream/count-tumbling
// after each message: PartitionIterator over a broker on loopback holding
// keyed sets (2 MB), each message handed to the task. Beside consumer/iterate
// it is what counting costs a consumer.
type streamConsumeCount struct {
	inMemory
	lb   *loopback
	c    *consumer.SimpleConsumer
	it   *consumer.PartitionIterator
	end  int64
	span int64
	base int64
	task *stream.Task
	ctx  context.Context
}

func openStreamConsumeCount(dir string) (Op, error) {
	cfg, err := shippedConfig(dir)
	if err != nil {
		return nil, err
	}
	lb, _, err := serveBroker(cfg, 0)
	if err != nil {
		return nil, err
	}
	l, err := lb.b.Logs().GetOrCreate(topic, 0)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("hotpath: create %s-0: %w", topic, err), lb.close())
	}
	set, span := keyedSet()
	o := &streamConsumeCount{lb: lb, ctx: context.Background()}
	for l.LogEndOffset() < 2<<20 {
		if _, err := l.Append(set); err != nil {
			return nil, errors.Join(fmt.Errorf("hotpath: fill %s-0: %w", topic, err), lb.close())
		}
	}
	if err := l.Flush(); err != nil {
		return nil, errors.Join(fmt.Errorf("hotpath: flush %s-0: %w", topic, err), lb.close())
	}
	o.end = l.FlushedEnd()
	o.span = span // each set's times start again at 0: base moves on after each set
	if o.task, err = countTask(&o.base, &countingEmitter{}); err != nil {
		return nil, errors.Join(err, lb.close())
	}
	if err := warm(o.task, set, &o.base, span); err != nil {
		return nil, errors.Join(err, lb.close())
	}
	o.c = consumer.NewSimpleConsumer(lb.addr(), 30*time.Second)
	o.it = consumer.NewPartitionIterator(o.c, topic, 0, 0, FetchSize)
	return o, nil
}

func (o *streamConsumeCount) Do() error {
	if !o.it.Next(o.ctx) {
		return fmt.Errorf("hotpath: stream/consume-count at %d: %w", o.it.NextOffset(), o.it.Err())
	}
	if err := o.task.Process(o.it.Offset(), o.it.NextOffset(), o.it.Payload()); err != nil {
		return fmt.Errorf("hotpath: stream/consume-count: %w", err)
	}
	if o.it.Offset()%int64(iterateMessages*wire) == int64((iterateMessages-1)*wire) {
		o.base += o.span // the end of a set: the next one's times follow this one's
	}
	if o.it.NextOffset() == o.end {
		o.it.SeekTo(0)
	}
	return nil
}

func (o *streamConsumeCount) Close() error { return errors.Join(o.c.Close(), o.lb.close()) }
