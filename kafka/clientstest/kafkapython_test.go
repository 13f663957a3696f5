package clientstest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
)

// kafka-python 2.0.2, Debian's python3-kafka, with api_version=(0, 8, 2) as
// the README says: asked to guess, it takes a broker that answers
// ApiVersions for 0.10 or later and then speaks 0.10's requests (Produce
// v2, message format 1), which this broker does not serve. With 0.8.2 it
// commits offsets to the broker (GroupCoordinator, OffsetCommit v1) and
// consumes by assignment.
func init() {
	register(client{
		name: "kafka-python",
		produce: func(t *testing.T, addr, topic, codec string, msgs []record) {
			python(t, addr, "produce", topic, codec, msgs)
		},
		consume: func(t *testing.T, addr, topic string, n int) []record {
			var got []record
			for _, r := range python(t, addr, "consume", topic, "", nil)["records"].([]any) {
				f := r.([]any)
				got = append(got, record{int64(f[0].(float64)), f[1].(string), f[2].(string)})
			}
			return got
		},
		offsets: func(t *testing.T, addr, topic string) (int64, int64) {
			o := python(t, addr, "offsets", topic, "", nil)
			return int64(o["earliest"].(float64)), int64(o["latest"].(float64))
		},
		commit: func(t *testing.T, addr, group, topic string, offset int64) int64 {
			o := python(t, addr, "commit", topic, group, []record{{offset: offset}})
			return int64(o["committed"].(float64))
		},
		topics: func(t *testing.T, addr string) []string {
			var out []string
			for _, x := range python(t, addr, "topics", "", "", nil)["topics"].([]any) {
				out = append(out, x.(string))
			}
			return out
		},
	})
}

// pythonScript does one step of the matrix with kafka-python; it reads
// {"addr", "op", "topic", "arg", "records"} as JSON on stdin and prints JSON.
const pythonScript = `
import json, sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
a = json.load(sys.stdin)
v = (0, 8, 2)
tp = TopicPartition(a["topic"], 0)
out = {}
if a["op"] == "produce":
    codec = None if a["arg"] == "none" else a["arg"]
    p = KafkaProducer(bootstrap_servers=a["addr"], api_version=v, compression_type=codec, acks="all", linger_ms=5)
    for r in a["records"]:
        p.send(a["topic"], key=r[1].encode(), value=r[2].encode(), partition=0)
    p.flush()
    p.close()
elif a["op"] == "consume":
    c = KafkaConsumer(bootstrap_servers=a["addr"], api_version=v, enable_auto_commit=False, consumer_timeout_ms=5000)
    c.assign([tp])
    c.seek_to_beginning(tp)
    out["records"] = [[m.offset, m.key.decode(), m.value.decode()] for m in c]
elif a["op"] == "offsets":
    c = KafkaConsumer(bootstrap_servers=a["addr"], api_version=v)
    out["earliest"] = c.beginning_offsets([tp])[tp]
    out["latest"] = c.end_offsets([tp])[tp]
elif a["op"] == "commit":
    c = KafkaConsumer(bootstrap_servers=a["addr"], api_version=v, group_id=a["arg"], enable_auto_commit=False)
    c.assign([tp])
    c.commit({tp: OffsetAndMetadata(a["records"][0][0], "matrix")})
    c2 = KafkaConsumer(bootstrap_servers=a["addr"], api_version=v, group_id=a["arg"], enable_auto_commit=False)
    out["committed"] = c2.committed(tp)
elif a["op"] == "topics":
    c = KafkaConsumer(bootstrap_servers=a["addr"], api_version=v)
    out["topics"] = sorted(c.topics())
json.dump(out, sys.stdout)
`

func python(t *testing.T, addr, op, topic, arg string, records []record) map[string]any {
	t.Helper()
	rs := make([][]any, len(records))
	for i, r := range records {
		rs[i] = []any{r.offset, r.key, r.value}
	}
	in, _ := json.Marshal(map[string]any{"addr": addr, "op": op, "topic": topic, "arg": arg, "records": rs})
	cmd := exec.Command("/usr/bin/python3", "-c", pythonScript)
	cmd.Dir = "/" // this repository's kafka/ directory would shadow the module
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kafka-python %s %s: %v\n%s", op, topic, err, stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("kafka-python %s printed %q: %v", op, out, err)
	}
	return res
}
