package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// dump-log-segments names each wrapper's codec and, with --deep-iteration,
// lists what it holds: here the snappy-java stream fixture of kafka/message,
// a gzip wrapper and a wrapper whose payload is garbage (reported, and the
// dump goes on).
func TestDumpLogSegmentsDeepIteration(t *testing.T) {
	seg, err := os.ReadFile(filepath.Join("..", "..", "message", "testdata", "snappy-java-stream.set"))
	if err != nil {
		t.Fatal(err)
	}
	var inner []byte
	inner = message.AppendV1(inner, message.CodecNone, []byte("g1"))
	inner = message.AppendV1(inner, message.CodecNone, []byte("g2"))
	gz, err := message.Compress(message.CodecGzip, inner)
	if err != nil {
		t.Fatal(err)
	}
	seg = append(seg, gz...)
	badAt := len(seg)
	seg = message.AppendV1(seg, message.CodecSnappy, []byte("garbage!"))
	seg = message.AppendV1(seg, message.CodecNone, []byte("after"))
	path := filepath.Join(t.TempDir(), "00000000000000000000.kafka")
	if err := os.WriteFile(path, seg, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd("", "dump-log-segments", "--deep-iteration", "--print-payload", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"offset: 0 size: 16 magic: 1 codec: none crc valid: true payload: \"before\"",
		"offset: 16 size: 86 magic: 1 codec: snappy crc valid: true",
		"  inner offset: 0 size: 15 magic: 1 codec: none crc valid: true payload: \"kafka\"",
		"  inner offset: 31 size: 26 magic: 1 codec: none crc valid: true payload: \"abcdabcdabcdabcd\"",
		"  3 inner messages, 57 bytes uncompressed from 76",
		"codec: gzip crc valid: true",
		"  inner offset: 12 size: 12 magic: 1 codec: none crc valid: true payload: \"g2\"",
		"  cannot unpack the wrapper at offset " + strconv.Itoa(badAt),
		"payload: \"after\"",
		"5 messages, 0 with an invalid CRC",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Without the flag, one line per stored message only.
	_, out, _ = runCmd("", "dump-log-segments", path)
	if strings.Contains(out, "inner") {
		t.Errorf("inner messages printed without --deep-iteration:\n%s", out)
	}
}
