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
	dir := t.TempDir()
	var lastErr error
	for range 3 { // a free port may be taken between FreePort and the server's bind
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		s, err := Start(ctx, service, dir, port)
		cancel()
		if err == nil {
			t.Cleanup(func() {
				if err := s.Stop(); err != nil {
					t.Errorf("stopping %s: %v", service, err)
				}
			})
			t.Logf("%s %s started on port %d in %v; log %s", service, s.Version, port, s.Startup.Round(time.Millisecond), s.Log)
			return s
		}
		lastErr = err
		if !PortTaken(err) {
			break
		}
	}
	t.Fatalf("starting %s: %v", service, lastErr)
	return nil
}
