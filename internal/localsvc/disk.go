package localsvc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DiskUsage is the space allocated on disk for the files under dir (like du: blocks, not apparent
// sizes, so preallocated but unwritten journal space is not counted).
func DiskUsage(dir string) (int64, error) {
	if _, err := os.Stat(dir); err != nil {
		return 0, fmt.Errorf("localsvc: disk usage: %w", err)
	}
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // a file removed while we walk (e.g. a rolled journal)
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("localsvc: disk usage of %s: %w", dir, err)
	}
	return total, nil
}
