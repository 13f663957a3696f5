package stream_test

import (
	"fmt"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/stream"
)

// One task counting page views per minute: "page,time-ms" messages, one of them out of order within the
// grace period, one too late, one without a time.
func ExampleNewTask() {
	w, _ := stream.Tumbling(time.Minute)
	count, err := stream.Windowed(stream.WindowedConfig{Window: w, Grace: 10 * time.Second,
		Aggregation: stream.Count(), Output: "page-views-per-minute"})
	if err != nil {
		panic(err)
	}
	st := stream.Stage{Input: "page-views", Key: stream.KeyField(',', 0), Time: stream.TimeField(',', 1),
		Processors: []stream.ProcessorFactory{count}}
	out := &stream.MemoryEmitter{}
	task, err := stream.NewTask(st, "0-0", out)
	if err != nil {
		panic(err)
	}
	for i, m := range []string{
		"home,1000", "about,2000", "home,61000", // the first window stays open until 70000
		"home,59000",   // out of order, in the grace period: counted
		"home,125000",  // closes [0, 60000)
		"about,30000",  // too late: counted as late
		"home,no-time", // skipped, with its reason
		"home,999999",  // closes [60000, 120000)
	} {
		if err := task.Process(int64(i)*100, int64(i+1)*100, []byte(m)); err != nil {
			panic(err)
		}
	}
	for _, e := range out.Out {
		fmt.Printf("%s: %s\n", e.Topic, e.Value)
	}
	fmt.Println(task.Report())
	fmt.Println(task.Report().Reasons[0])
	// Output:
	// page-views-per-minute: F 0 60000 2 home
	// page-views-per-minute: F 0 60000 1 about
	// page-views-per-minute: F 60000 120000 1 home
	// page-views-per-minute: F 120000 180000 1 home
	// read 8, skipped 1 (key 0, time 1, other 0), late 1 (partly 0), emitted 4
	// offset 600: stream: message skipped: time: field 1 is "no-time", not milliseconds
}
