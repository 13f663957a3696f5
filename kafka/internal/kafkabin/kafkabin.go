// Package kafkabin builds the kafka command once per test binary, for tests
// that run it as a process of its own (to kill it with SIGKILL, say).
package kafkabin

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Build returns the path of a freshly built kafka command; it fails the test
// if the build fails. The binary is shared by the package's tests; Remove
// deletes it.
func Build(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		var script, dir string
		if script, err = zktest.Script(); err != nil { // scripts/zookeeper.sh: two levels below the module root
			return
		}
		if dir, err = os.MkdirTemp("", "kafkabin-"); err != nil {
			return
		}
		path = filepath.Join(dir, "kafka")
		cmd := exec.Command("go", "build", "-o", path, "./kafka/cmd/kafka")
		cmd.Dir = filepath.Dir(filepath.Dir(script))
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		t.Fatalf("kafkabin: go build ./kafka/cmd/kafka: %v\n%s", err, out)
	}
	return path
}

// Remove deletes the built binary; call it from TestMain after m.Run.
func Remove() {
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
}
