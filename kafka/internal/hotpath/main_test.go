package hotpath

import (
	"log/slog"
	"os"
	"testing"
)

// TestMain keeps the log package's lines (it logs through slog's default
// logger) out of the benchmark table.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}
