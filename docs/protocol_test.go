package docs

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"go/ast"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

const protocolDoc = "docs/PROTOCOL.md"

// section is one "## N. Title" section of docs/PROTOCOL.md.
type section struct {
	title string
	steps map[int]bool // numbered list items "K. ..." in it
}

func protocolSections(t *testing.T, r *repo) map[int]section {
	t.Helper()
	heading := regexp.MustCompile(`^## (\d+)\. (.+)$`)
	step := regexp.MustCompile(`^(\d+)\. `)
	out := map[int]section{}
	cur := -1
	for _, l := range strings.Split(r.read(t, protocolDoc), "\n") {
		if m := heading.FindStringSubmatch(l); m != nil {
			cur, _ = strconv.Atoi(m[1])
			out[cur] = section{title: m[2], steps: map[int]bool{}}
			continue
		}
		if strings.HasPrefix(l, "## ") {
			cur = -1
		}
		if m := step.FindStringSubmatch(l); m != nil && cur >= 0 {
			k, _ := strconv.Atoi(m[1])
			out[cur].steps[k] = true
		}
	}
	if len(out) < 9 {
		t.Fatalf("%s: found %d numbered sections, want at least 9", protocolDoc, len(out))
	}
	return out
}

var (
	citationRE = regexp.MustCompile(`docs/PROTOCOL\.md((?:(?:,| and)? ?§\d+(?: step \d+)?)+)`)
	sectionRE  = regexp.MustCompile(`§(\d+)(?: step (\d+))?`)
	// outsideRE is a citation of the team's reference material, which is not part of the repository.
	outsideRE = regexp.MustCompile(`\bSPEC(?:\.md)? ?§\d+|\.\./shared/|/work/[s]hared`)
	// continuationRE joins the lines of a // comment, so that a citation broken over two lines is still one.
	continuationRE = regexp.MustCompile(`\n[ \t]*//[ \t]*`)
)

// TestProtocolCitations checks that every "docs/PROTOCOL.md §N" and "§N step K" in the repository's Go files
// and documents names a section (and a step of it) that docs/PROTOCOL.md has, and so do the bare "§N" of
// docs/PROTOCOL.md itself (which mean its own sections; the paper's are "paper §N"); and that nothing cites a
// document outside the repository.
func TestProtocolCitations(t *testing.T) {
	r := loadRepo(t)
	secs := protocolSections(t, r)
	check := func(where string, n, step string) {
		num, _ := strconv.Atoi(n)
		s, ok := secs[num]
		switch {
		case !ok:
			t.Errorf("%s: cites %s §%s, which has no section %s", where, protocolDoc, n, n)
		case step != "":
			if k, _ := strconv.Atoi(step); !s.steps[k] {
				t.Errorf("%s: cites %s §%s step %s, but §%s (%s) has no step %s", where, protocolDoc, n, step, n, s.title, step)
			}
		}
	}
	count := 0
	err := filepath.WalkDir(r.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != r.root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".md") {
			return nil
		}
		rel, _ := filepath.Rel(r.root, p)
		rel = filepath.ToSlash(rel)
		text := r.read(t, rel)
		if strings.HasSuffix(p, ".go") {
			text = continuationRE.ReplaceAllString(text, " ")
		} else {
			text = strings.ReplaceAll(text, "\n", " ")
		}
		if m := outsideRE.FindString(text); m != "" {
			t.Errorf("%s: cites %q, a document outside the repository; cite the paper or docs/PROTOCOL.md", rel, m)
		}
		for _, m := range citationRE.FindAllStringSubmatch(text, -1) {
			for _, s := range sectionRE.FindAllStringSubmatch(m[1], -1) {
				count++
				check(rel, s[1], s[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// docs/PROTOCOL.md's own bare references.
	own := 0
	for _, l := range proseLines(r, t, protocolDoc) {
		for _, idx := range sectionRE.FindAllStringSubmatchIndex(l.text, -1) {
			before := l.text[:idx[0]]
			after := l.text[idx[1]:]
			if strings.HasSuffix(before, "paper ") || strings.HasSuffix(before, "paper's ") ||
				strings.HasPrefix(after, ".") && len(after) > 1 && after[1] >= '0' && after[1] <= '9' ||
				strings.HasPrefix(strings.TrimSpace(before), "|") && !strings.Contains(before[1:], "|") ||
				strings.HasSuffix(before, "\"docs/PROTOCOL.md ") || strings.HasSuffix(before, "\"") {
				continue // the paper's sections, the paper column of the first table, or the citation form itself
			}
			own++
			step := ""
			if idx[4] >= 0 {
				step = l.text[idx[4]:idx[5]]
			}
			check(l.String(), l.text[idx[2]:idx[3]], step)
		}
	}
	t.Logf("checked %d citations of %s in the repository and %d of its own references", count, protocolDoc, own)
	if count == 0 {
		t.Error("found no citation at all: the pattern no longer matches how the code cites")
	}
}

// examples are the bytes each worked example of docs/PROTOCOL.md must show, made by the real encoders.
func examples() map[string][]byte {
	hello := message.AppendV0(nil, []byte("hello"))
	return map[string][]byte{
		"message-v0": hello,
		"message-v1": message.AppendV1(nil, message.CodecNone, []byte("hello")),
		"produce":    protocol.ProduceRequest{Topic: "test", Partition: 0, Messages: hello}.AppendTo(nil),
		"fetch":      protocol.FetchRequest{Topic: "test", Partition: 0, Offset: 0, MaxSize: 307200}.AppendTo(nil),
		"fetch-response": append(protocol.AppendResponseHeader(nil, len(hello), protocol.ErrNone),
			hello...),
		"acked-produce": protocol.AckedProduceRequest{Acks: protocol.AcksAll, TimeoutMs: 10000,
			Produces: []protocol.ProduceRequest{{Topic: "r", Partition: 0, Messages: hello}}}.AppendTo(nil),
		"acked-produce-response": protocol.AppendAckedProduceResponse(nil, []protocol.ProduceResult{{Topic: "r", Partition: 0, Offset: 0}}),
		"metadata":               protocol.MetadataRequest{Topics: []string{"r"}}.AppendTo(nil),
		"metadata-response": protocol.AppendMetadataResponse(nil, &protocol.MetadataResponse{
			Brokers: []protocol.BrokerAddr{{ID: 1, Host: "h", Port: 9092}},
			Topics: []protocol.TopicMetadata{{Topic: "r", Partitions: []protocol.PartitionMetadata{
				{Partition: 0, Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1}}}}}}),
		"replica-fetch": protocol.ReplicaFetchRequest{ReplicaID: 2, MaxWaitMs: 500, MinBytes: 1,
			Fetches: []protocol.FetchRequest{{Topic: "r", Partition: 0, Offset: 0, MaxSize: 1 << 20}}}.AppendTo(nil),
		"replica-fetch-response": replicaFetchAnswer(hello),
		"leader-and-isr": protocol.LeaderAndISRRequest{ControllerID: 0, ControllerEpoch: 3, BrokerEpoch: 0x100000004,
			Brokers: []protocol.BrokerAddr{{ID: 1, Host: "h", Port: 9092}},
			Partitions: []protocol.PartitionState{{Topic: "r", Partition: 0, Leader: 1, LeaderEpoch: 2, Version: 5,
				ISR: []int32{1, 2}, Replicas: []int32{1, 2}}}}.AppendTo(nil),
		"leader-and-isr-response": protocol.AppendPartitionErrors(nil, protocol.ErrNone, []protocol.PartitionError{{Topic: "r", Partition: 0}}),
		"epoch-end-offset": protocol.EpochEndOffsetRequest{ReplicaID: 2,
			Partitions: []protocol.EpochQuery{{Topic: "r", Partition: 0, Epoch: 1}}}.AppendTo(nil),
		"epoch-end-offset-response": protocol.AppendEpochEndResponse(nil, []protocol.EpochEnd{{Topic: "r", Partition: 0, Epoch: 1, EndOffset: 14}}),
		"message-keyed":             message.AppendKeyed(nil, []byte("k"), []byte("hello")),
		"entry-08":                  protocol08.AppendEntry(nil, 7, []byte("k"), []byte("hello")),
	}
}

// replicaFetchAnswer is the leader's whole answer to the example's REPLICA_FETCH: the header, one part's
// header (protocol.AppendReplicaFetchPart) and the log bytes that sendfile sends after it.
func replicaFetchAnswer(set []byte) []byte {
	part := protocol.AppendReplicaFetchPart(binary.BigEndian.AppendUint16(nil, 1), "r", 0, protocol.ErrNone, 14,
		[]protocol.EpochEntry{{Epoch: 2, Start: 0}}, len(set))
	out := protocol.AppendResponseHeader(nil, len(part)+len(set), protocol.ErrNone)
	return append(append(out, part...), set...)
}

var (
	exampleRE = regexp.MustCompile(`^<!-- example: ([\w-]+) -->$`)
	columnsRE = regexp.MustCompile(`\s{2,}`)
)

// TestProtocolExamples re-encodes every worked example in hex of docs/PROTOCOL.md. An example is a fenced block
// after an "<!-- example: name -->" line, with columns "offset  bytes  field" separated by two or more
// spaces; the offsets must add up, and the bytes must be what the encoder writes.
func TestProtocolExamples(t *testing.T) {
	r := loadRepo(t)
	want := examples()
	seen := map[string]bool{}
	lines := strings.Split(r.read(t, protocolDoc), "\n")
	for i := 0; i < len(lines); i++ {
		m := exampleRE.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		name, at := m[1], i+1
		seen[name] = true
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Errorf("%s:%d: example %q is not followed by a fenced block", protocolDoc, at, name)
			continue
		}
		var got []byte
		for i += 2; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			cols := columnsRE.Split(strings.TrimSpace(lines[i]), 3)
			off, err := strconv.Atoi(cols[0])
			if err != nil {
				continue // the header line
			}
			if off != len(got) {
				t.Errorf("%s:%d: example %q: offset column says %d, the bytes before it are %d", protocolDoc, i+1, name, off, len(got))
			}
			if len(cols) < 2 {
				t.Errorf("%s:%d: example %q: no bytes on the line", protocolDoc, i+1, name)
				continue
			}
			b, err := hex.DecodeString(strings.ReplaceAll(cols[1], " ", ""))
			if err != nil {
				t.Errorf("%s:%d: example %q: %v", protocolDoc, i+1, name, err)
			}
			got = append(got, b...)
		}
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("%s:%d: example %q: docs/protocol_test.go does not know how to encode it", protocolDoc, at, name)
		case !bytes.Equal(got, w):
			t.Errorf("%s:%d: example %q shows\n%s\nbut the encoder writes\n%s", protocolDoc, at, name, hex.Dump(got), hex.Dump(w))
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s: example %q is missing", protocolDoc, name)
		}
	}
	t.Logf("checked %d examples", len(seen))
}

// setting is one row of a settings table of docs/PROTOCOL.md (| property | default | field | meaning |).
type setting struct {
	where    string
	property string
	def      string   // the default column's first word; "—" for a value computed at run time
	fields   []string // "broker.Config.Port", ...
}

func settingsTables(t *testing.T, r *repo) []setting {
	t.Helper()
	var out []setting
	inTable := false
	for _, l := range proseLines(r, t, protocolDoc) {
		if !strings.HasPrefix(l.text, "|") {
			inTable = false
			continue
		}
		cells := splitRow(l.text)
		if len(cells) >= 3 && cells[0] == "property" && cells[1] == "default" && cells[2] == "field" {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(cells[0], "---") {
			continue
		}
		s := setting{where: l.String(), property: strings.Trim(cells[0], "`")}
		if f := strings.Fields(cells[1]); len(f) > 0 {
			s.def = strings.ReplaceAll(f[0], "−", "-")
		}
		for _, m := range spanRE.FindAllStringSubmatch(cells[2], -1) {
			s.fields = append(s.fields, m[1])
		}
		out = append(out, s)
	}
	return out
}

// configDefaults are the default configurations a settings row's field is read from.
var configDefaults = map[string]any{
	"broker.Config":        broker.DefaultConfig(),
	"log.Config":           log.DefaultConfig(),
	"producer.Config":      producer.DefaultConfig(),
	"consumer.GroupConfig": consumer.DefaultGroupConfig(),
}

// readers says where the code names the properties of each configuration: the string keys of the map
// literals in a function or method (each configuration's fields method, a table of properties.Field), the
// cases of a switch in it, or the keys of a map literal (var name), in a package directory. log.Config is
// filled from server.properties by the broker.
var readers = map[string][2]string{
	"broker.Config":        {"kafka/broker", "fields"},
	"log.Config":           {"kafka/broker", "fields"},
	"producer.Config":      {"kafka/producer", "fields"},
	"consumer.GroupConfig": {"kafka/consumer", "fields"},
}

// TestSettingsTables checks the settings tables of docs/PROTOCOL.md against the code: every property the code
// reads has a row, every row's property is read, every field exists and its default is the row's, and
// kafka/config/server.properties sets every broker property to the documented default.
func TestSettingsTables(t *testing.T) {
	r := loadRepo(t)
	rows := settingsTables(t, r)
	documented := map[string]map[string]bool{} // configuration type -> properties with a row
	byProp := map[string][]setting{}
	for _, s := range rows {
		byProp[s.property] = append(byProp[s.property], s)
		if len(s.fields) == 0 {
			t.Errorf("%s: %s: no field named", s.where, s.property)
		}
		for _, f := range s.fields {
			i := strings.LastIndexByte(f, '.')
			typ, field := f[:max(i, 0)], f[i+1:]
			def, ok := configDefaults[typ]
			if !ok {
				t.Errorf("%s: %s: field %s: docs/protocol_test.go knows no default configuration of %s", s.where, s.property, f, typ)
				continue
			}
			if documented[typ] == nil {
				documented[typ] = map[string]bool{}
			}
			documented[typ][s.property] = true
			v := reflect.ValueOf(def).FieldByName(field)
			if !v.IsValid() {
				t.Errorf("%s: %s: %s has no field %s", s.where, s.property, typ, field)
				continue
			}
			if s.def == "—" {
				continue
			}
			code, ok := docValue(v)
			switch {
			case !ok:
				t.Errorf("%s: %s: the default of %s (%v) cannot be written in a table", s.where, s.property, f, v)
			case code != s.def:
				t.Errorf("%s: %s: the table says %s, the code's default of %s is %s", s.where, s.property, s.def, f, code)
			}
		}
	}

	for typ, rd := range readers {
		read := propertyNames(t, r, rd[0], rd[1])
		for p := range read {
			if typ != "log.Config" && !documented[typ][p] {
				t.Errorf("%s: %s reads property %s (%s.%s), which no row with a %s field documents", protocolDoc, rd[0], p, rd[0], rd[1], typ)
			}
		}
		for p := range documented[typ] {
			if !read[p] {
				t.Errorf("%s: property %s is documented for %s, but %s.%s does not read it", protocolDoc, p, typ, rd[0], rd[1])
			}
		}
	}

	// kafka/config/server.properties: every key set there is documented with the same value, and every
	// documented broker property is set there.
	const props = "kafka/config/server.properties"
	set := map[string]bool{}
	for i, text := range strings.Split(r.read(t, props), "\n") {
		text = strings.TrimSpace(text)
		if text == "" || text[0] == '#' || text[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(text, "=")
		if !ok {
			t.Errorf("%s:%d: not key=value: %q", props, i+1, text)
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		set[k] = true
		if v == "" {
			v = `""`
		}
		rows := byProp[k]
		if len(rows) == 0 {
			t.Errorf("%s:%d: %s is not in the settings tables of %s", props, i+1, k, protocolDoc)
		}
		for _, s := range rows {
			if s.def != v && s.def != "—" {
				t.Errorf("%s:%d: %s=%s, but %s says %s", props, i+1, k, v, s.where, s.def)
			}
		}
	}
	for p := range documented["broker.Config"] {
		for _, s := range byProp[p] {
			if !set[p] && s.def != "—" && hasField(s, "broker.Config") {
				t.Errorf("%s: %s is a broker property but %s does not set it", s.where, p, props)
			}
		}
	}
	t.Logf("checked %d settings rows", len(rows))
}

func hasField(s setting, typ string) bool {
	for _, f := range s.fields {
		if strings.HasPrefix(f, typ+".") {
			return true
		}
	}
	return false
}

// docValue writes a default the way the tables do: milliseconds for a duration, "" for an empty string or map.
func docValue(v reflect.Value) (string, bool) {
	if v.Type() == reflect.TypeOf(time.Duration(0)) {
		return strconv.FormatInt(time.Duration(v.Int()).Milliseconds(), 10), true
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), true
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.String:
		if v.String() == "" {
			return `""`, true
		}
		return v.String(), true
	case reflect.Map, reflect.Slice:
		if v.Len() == 0 {
			return `""`, true
		}
	}
	return "", false
}

// propertyNames finds the property names a package reads: the string keys of the map literal assigned to
// var name, or the string cases of the switches in func name.
func propertyNames(t *testing.T, r *repo, dir, name string) map[string]bool {
	t.Helper()
	p := r.byDir[dir]
	if p == nil {
		t.Fatalf("no Go package in %s", dir)
	}
	out := map[string]bool{}
	str := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out[s] = true
			}
		}
	}
	for _, f := range p.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.Name != name {
					continue
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.CaseClause:
						for _, e := range n.List {
							str(e)
						}
					case *ast.CompositeLit:
						if _, ok := n.Type.(*ast.MapType); ok {
							for _, e := range n.Elts {
								if kv, ok := e.(*ast.KeyValueExpr); ok {
									str(kv.Key)
								}
							}
						}
					}
					return true
				})
			case *ast.GenDecl:
				for _, s := range d.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok {
						continue
					}
					for i, n := range vs.Names {
						if n.Name != name || i >= len(vs.Values) {
							continue
						}
						if cl, ok := vs.Values[i].(*ast.CompositeLit); ok {
							for _, e := range cl.Elts {
								if kv, ok := e.(*ast.KeyValueExpr); ok {
									str(kv.Key)
								}
							}
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("found no property names in %s's %s: if the code now names its properties elsewhere, update docs/protocol_test.go's readers", dir, name)
	}
	return out
}
