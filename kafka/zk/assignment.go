package zk

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A replicated topic's node /brokers/topics/<topic> holds its replica lists as JSON (docs/PROTOCOL.md §10),
// {"version":1,"partitions":{"0":[1,2,0],"1":[2,0,1]}}; a 0.7 topic's node holds nothing. Replication
// writes and reads it; the group consumer reads it to tell the kinds apart.

type assignmentJSON struct {
	Version    int                `json:"version"`
	Partitions map[string][]int32 `json:"partitions"`
}

// MarshalReplicaAssignment is the node's data for the replica lists a (a[p] lists partition p's replicas).
func MarshalReplicaAssignment(a [][]int32) []byte {
	j := assignmentJSON{Version: 1, Partitions: map[string][]int32{}}
	for p, rs := range a {
		j.Partitions[strconv.Itoa(p)] = rs
	}
	b, _ := json.Marshal(j) // map keys come out sorted
	return b
}

// ParseReplicaAssignment reads a topic node's data: ok is false for empty data (a 0.7 topic), and data that
// is neither is ErrBadRegistration.
func ParseReplicaAssignment(topic string, data []byte) (a [][]int32, ok bool, err error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, false, nil
	}
	var j assignmentJSON
	if err := json.Unmarshal(data, &j); err != nil || len(j.Partitions) == 0 {
		return nil, false, fmt.Errorf("%w: assignment of topic %q: %q", ErrBadRegistration, topic, data)
	}
	a = make([][]int32, len(j.Partitions))
	for k, rs := range j.Partitions {
		p, err := strconv.Atoi(k)
		if err != nil || p < 0 || p >= len(a) || len(rs) == 0 || a[p] != nil {
			return nil, false, fmt.Errorf("%w: assignment of topic %q: partition %q in %q", ErrBadRegistration, topic, k, data)
		}
		a[p] = rs
	}
	return a, true, nil
}
