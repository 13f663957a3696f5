package clientstest

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// kcat 1.7.1 (librdkafka 2.0.2), Debian's, with its defaults: it asks
// ApiVersions (v3, answered UNSUPPORTED_VERSION with the list, then v0) and
// uses what is listed. It commits offsets only as a balanced consumer (-G),
// which needs 0.9's JoinGroup: not offered here.
func init() {
	register(client{
		name: "kcat",
		produce: func(t *testing.T, addr, topic, codec string, msgs []record) {
			var in bytes.Buffer
			for _, m := range msgs {
				fmt.Fprintf(&in, "%s\t%s\n", m.key, m.value)
			}
			kcat(t, &in, "-P", "-b", addr, "-t", topic, "-p", "0", "-K", "\t", "-z", codec)
		},
		consume: func(t *testing.T, addr, topic string, n int) []record {
			out := kcat(t, nil, "-C", "-b", addr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o\t%k\t%s\n")
			var got []record
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				f := strings.SplitN(sc.Text(), "\t", 3)
				if len(f) != 3 {
					t.Fatalf("kcat -C printed %q", sc.Text())
				}
				off, _ := strconv.ParseInt(f[0], 10, 64)
				got = append(got, record{off, f[1], f[2]})
			}
			return got
		},
		offsets: func(t *testing.T, addr, topic string) (int64, int64) {
			return kcatOffset(t, addr, topic, -2), kcatOffset(t, addr, topic, -1)
		},
		topics: func(t *testing.T, addr string) []string {
			out := kcat(t, nil, "-L", "-b", addr)
			var topics []string
			for _, line := range strings.Split(string(out), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "topic" {
					topics = append(topics, strings.Trim(f[1], `"`))
				}
			}
			return topics
		},
	})
}

// kcatOffset is kcat -Q's answer for time t (-1 latest, -2 earliest).
func kcatOffset(t *testing.T, addr, topic string, time int) int64 {
	out := strings.TrimSpace(string(kcat(t, nil, "-Q", "-b", addr, "-t", fmt.Sprintf("%s:0:%d", topic, time))))
	i := strings.LastIndex(out, "offset ")
	if i < 0 {
		t.Fatalf("kcat -Q printed %q", out)
	}
	n, err := strconv.ParseInt(strings.Fields(out[i+len("offset "):])[0], 10, 64)
	if err != nil {
		t.Fatalf("kcat -Q printed %q", out)
	}
	return n
}

func kcat(t *testing.T, stdin *bytes.Buffer, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("kcat", args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
