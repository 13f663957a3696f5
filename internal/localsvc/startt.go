package localsvc

import (
	"context"
	"testing"
	"time"
)

// StartT starts service in a fresh t.TempDir on a free port and stops it in t.Cleanup. It skips the
// test under -short, since it needs the real server.
func StartT(t testing.TB, service string) *Server {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs a real %s server (skipped with -short)", service)
	}
	scripts, err := ScriptsDir()
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartOnFreePort(context.Background(), Host{}, scripts, service, 5*time.Minute, func() (string, error) { return t.TempDir(), nil })
	if err != nil {
		t.Fatalf("starting %s: %v", service, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping %s: %v", service, err)
		}
	})
	t.Logf("%s %s started on port %d in %v; log %s", service, s.Version, s.Port, s.Startup.Round(time.Millisecond), s.Log)
	return s
}
