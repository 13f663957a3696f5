// Package kafkabin builds the kafka command once per test binary, for tests that run it as a process of its
// own (to kill it with SIGKILL, say). It is the one way the tests build it; the build itself is
// kafkaproc.Build, which the commands that run the experiments use too.
package kafkabin

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

var (
	once sync.Once
	path string
	err  error
)

// Build returns the path of a freshly built kafka command; it fails the test if the build fails. The
// binary is shared by the package's tests; Remove deletes it.
func Build(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		var repo, dir string
		if repo, err = localsvc.RepoDir(); err != nil {
			return
		}
		if dir, err = os.MkdirTemp("", "kafkabin-"); err != nil {
			return
		}
		path = filepath.Join(dir, "kafka")
		err = kafkaproc.Build(context.Background(), repo, path)
	})
	if err != nil {
		t.Fatalf("kafkabin: %v", err)
	}
	return path
}

// Remove deletes the built binary; call it from TestMain after m.Run.
func Remove() {
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
}
