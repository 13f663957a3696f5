package broker

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kafkarepro/kafkarepro/kafka/log"
)

// groupOffsets is where the offsets that consumer groups commit through the
// Kafka protocol (OffsetCommit, kafka08_commit.go) are kept: in memory, and
// in a text file in the log directory rewritten at each commit, one line per
// partition:
//
//	<group> <topic> <partition> <offset> <metadata, URL-query-escaped>
//
// 0.8.1 kept them in ZooKeeper and 0.8.2 in a topic; here the coordinator is
// one broker (kafka08_commit.go says which), so a file of its own is enough.
type groupOffsets struct {
	path string
	mu   sync.Mutex
	m    map[groupPartition]committed
}

type groupPartition struct {
	group, topic string
	partition    int32
}

type committed struct {
	offset   int64
	metadata string
}

// openGroupOffsets reads the file in dir, if there is one.
func openGroupOffsets(dir string) (*groupOffsets, error) {
	g := &groupOffsets{path: filepath.Join(dir, log.GroupOffsetsFile), m: map[groupPartition]committed{}}
	f, err := os.Open(g.path)
	if os.IsNotExist(err) {
		return g, nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker: read committed offsets: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			return nil, fmt.Errorf("broker: %s line %d: %d fields, want 5", g.path, line, len(fs))
		}
		p, err1 := strconv.ParseInt(fs[2], 10, 32)
		o, err2 := strconv.ParseInt(fs[3], 10, 64)
		md, err3 := unescape(fs[4])
		grp, err4 := unescape(fs[0])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return nil, fmt.Errorf("broker: %s line %d: %q does not parse", g.path, line, sc.Text())
		}
		g.m[groupPartition{grp, fs[1], int32(p)}] = committed{o, md}
	}
	return g, sc.Err()
}

// commit stores offsets for one group and rewrites the file.
func (g *groupOffsets) commit(group string, parts map[groupPartition]committed) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, v := range parts {
		g.m[k] = v
	}
	keys := make([]groupPartition, 0, len(g.m))
	for k := range g.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.group != b.group {
			return a.group < b.group
		}
		if a.topic != b.topic {
			return a.topic < b.topic
		}
		return a.partition < b.partition
	})
	var sb strings.Builder
	for _, k := range keys {
		v := g.m[k]
		fmt.Fprintf(&sb, "%s %s %d %d %s\n", escape(k.group), k.topic, k.partition, v.offset, escape(v.metadata))
	}
	tmp := g.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(sb.String()), 0o644); err != nil {
		return fmt.Errorf("broker: write committed offsets: %w", err)
	}
	if err := os.Rename(tmp, g.path); err != nil {
		return fmt.Errorf("broker: write committed offsets: %w", err)
	}
	return nil
}

// get is the committed offset of one partition; ok is false if none is.
func (g *groupOffsets) get(k groupPartition) (committed, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.m[k]
	return v, ok
}

// escape writes s as one field: "-" for empty, else query-escaped.
func escape(s string) string {
	if s == "" {
		return "-"
	}
	return urlEscape(s)
}

func unescape(s string) (string, error) {
	if s == "-" {
		return "", nil
	}
	return urlUnescape(s)
}

func urlEscape(s string) string {
	if s == "-" {
		return "%2D"
	}
	return url.QueryEscape(s)
}

func urlUnescape(s string) (string, error) { return url.QueryUnescape(s) }
