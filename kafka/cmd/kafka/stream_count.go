package main

import (
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/stream"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "stream-count",
		Args:    "--zookeeper HOST:PORT --input TOPIC --window 60s --key N (--time N | --audit) --output TOPIC [--group G] [--grace 5s]",
		Summary: "count the messages of each key in tumbling event-time windows and publish each window's counts (paper §6)",
		Run:     streamCount,
	})
}

// streamCount is a stream.Stage with one windowed count (stream.Windowed with stream.Count): the messages of
// the input are split at spaces, field --key is the key and field --time the event time in milliseconds (or,
// with --audit, the time of the audit envelope, paper §4). When a window closes (stream time passes its end
// plus --grace), its counts go to --output as result lines "F <start ms> <end ms> <count> <key>". Several
// processes with the same --group share the input's partitions (Algorithm 1), each partition's state
// checkpointed with its offset: the counts are exact across kill -9, the output at-least-once.
func streamCount(args []string, std stdio) error {
	fs := newFlags(commands["stream-count"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[/chroot]")
	input := fs.String("input", "", "topic to count")
	output := fs.String("output", "", "topic of the window counts")
	group := fs.String("group", "", "consumer group of the processes (default stream-count-<input>)")
	window := fs.Duration("window", time.Minute, "tumbling window length in event time")
	grace := fs.Duration("grace", 5*time.Second, "how long a window waits for late messages after its end")
	key := fs.String("key", "", "the key is this field of the message (0: the first; fields split at spaces)")
	timeField := fs.String("time", "", "the event time (ms since 1970) is this field of the message")
	audit := fs.Bool("audit", false, "the messages are audit envelopes (console-producer --audit): their time is the event time")
	every := fs.Duration("report-every", 10*time.Second, "print the tasks' report this often")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper", "input", "output", "key"); err != nil {
		return err
	}
	if err := checkTimes(*window, *grace, *every); err != nil {
		return err
	}
	if *group == "" {
		*group = "stream-count-" + *input
	}
	if err := checkTopics(map[string]string{"input": *input, "output": *output}); err != nil {
		return err
	}
	if *input == *output {
		return usagef("--output must differ from --input (%q): the counts would be counted", *input)
	}
	if err := checkGroup(*group); err != nil {
		return err
	}
	kf, err := fieldNumber("key", *key)
	if err != nil {
		return err
	}
	st := stream.Stage{Input: *input, Key: stream.KeyField(' ', kf), Envelope: *audit}
	switch {
	case *audit && *timeField != "":
		return usagef("--time and --audit: give one")
	case !*audit && *timeField == "":
		return usagef("--time N or --audit is required: where the event time is")
	case !*audit:
		tf, err := fieldNumber("time", *timeField)
		if err != nil {
			return err
		}
		st.Time = stream.TimeField(' ', tf)
	}
	w, err := stream.Tumbling(*window)
	if err != nil {
		return usagef("%v", err)
	}
	count, err := stream.Windowed(stream.WindowedConfig{Window: w, Grace: *grace, Aggregation: stream.Count(), Output: *output})
	if err != nil {
		return usagef("%v", err)
	}
	st.Processors = []stream.ProcessorFactory{count}

	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	parts, err := partitionsPerBroker(c, *input)
	if err == nil {
		err = ensureTopics(c, *zkConnect, parts, std, *output)
	}
	c.Close()
	if err != nil {
		return err
	}
	return runStages(streamContext, *zkConnect, *group, []stream.Stage{st}, *every, std)
}
