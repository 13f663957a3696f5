package log

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The clean-shutdown marker records, for every partition that closed
// cleanly, where its last segment starts and how many bytes it holds:
//
//	kafkarepro clean shutdown 1
//	clicks-0 1073741851 52428800
//	clicks-1 0 1900
//
// A start trusts a last segment without scanning it only if the file still
// starts and ends there. Kafka 0.7's marker was an empty file, so it
// trusted every file's size; a write that failed on a full disk and left
// part of a set behind then became "messages" after a clean restart. A
// partition missing from the list (its Close failed) is scanned, and so is
// every partition when the marker has no list (an empty marker, from before
// this format).
const markerHeader = "kafkarepro clean shutdown 1"

// writeMarker writes the marker for records (partition directory name →
// last segment) to path through a temporary file, fsynced and renamed, so
// that a crash leaves either no marker or a whole one.
func writeMarker(path string, records map[string]segmentRecord) error {
	names := make([]string, 0, len(records))
	for name := range records {
		names = append(names, name)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString(markerHeader + "\n")
	for _, name := range names {
		r := records[name]
		fmt.Fprintf(&b, "%s %d %d\n", name, r.start, r.size)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("log: write clean-shutdown marker %s: %w", tmp, err)
	}
	_, err = f.Write(b.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("log: write clean-shutdown marker %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// readMarker reads the marker at path. present is false if there is none;
// records is nil if it holds no list (recover everything).
func readMarker(path string) (records map[string]segmentRecord, present bool, err error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("log: read clean-shutdown marker %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() || sc.Text() != markerHeader {
		return nil, true, nil
	}
	records = make(map[string]segmentRecord)
	for line := 2; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		var start, size int64
		if len(f) == 3 {
			start, err = strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				size, err = strconv.ParseInt(f[2], 10, 64)
			}
		}
		if len(f) != 3 || err != nil || start < 0 || size < 0 {
			return nil, true, fmt.Errorf("log: clean-shutdown marker %s line %d: %q is not \"<partition> <start> <bytes>\"", path, line, sc.Text())
		}
		records[f[0]] = segmentRecord{start, size}
	}
	return records, true, nil
}
