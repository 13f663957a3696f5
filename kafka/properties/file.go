// Package properties reads Kafka 0.7's configuration files and sets typed
// fields from its property names. The broker (server.properties), the
// producer (producer.config) and the consumers (consumer.config) all read the
// same format and the same kinds of value, so one reader and one set of value
// parsers serve them all; each configuration keeps only its table of names
// (docs/PROTOCOL.md lists them with their defaults: the broker's in its §3
// and §8, the consumer's in its §6, the producer's in §7, replication's in
// §10).
//
// The file format is java.util.Properties, which 0.7's files are: one key and
// value per logical line, separated by '=', ':' or whitespace; '#' and '!'
// start comment lines; a line ending in an odd number of backslashes continues
// on the next one; and \t \n \r \f \uXXXX and \<char> escapes are decoded.
package properties

import (
	"fmt"
	"os"
	"strings"
)

// Property is one key = value pair of a properties file; Line is where it
// started (1-based), or -1 for a value that did not come from a file (an
// override given on the command line).
type Property struct {
	Key, Value string
	Line       int
}

// Where says where p came from, for an error message: "path:line" or
// "override".
func (p Property) Where(path string) string {
	if p.Line < 0 {
		return "override"
	}
	return fmt.Sprintf("%s:%d", path, p.Line)
}

// ReadFile reads a properties file into its pairs, in file order.
func ReadFile(path string) ([]Property, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("properties: %w", err)
	}
	return Parse(string(data)), nil
}

// Load reads a properties file into a map, a later key overriding an earlier
// one.
func Load(path string) (map[string]string, error) {
	props, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(props))
	for _, p := range props {
		out[p.Key] = p.Value
	}
	return out, nil
}

// Parse splits the text of a properties file into its pairs, in order (see
// the package doc for the format).
func Parse(text string) []Property {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")
	var props []Property
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines.
		for continues(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if continues(line) {
			line = line[:len(line)-1]
		}
		if line == "" {
			continue
		}
		key, value := splitProperty(line)
		props = append(props, Property{Key: unescape(key), Value: unescape(value), Line: start})
	}
	return props
}

// continues reports whether line ends with an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits at the first unescaped '=', ':' or whitespace; the
// separator may be surrounded by whitespace.
func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	key = line[:i]
	rest := strings.TrimLeft(line[i:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

// unescape decodes the backslash escapes of a properties file.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if r, ok := hex4(s[i+1:]); ok {
				b.WriteRune(r)
				i += 4
			} else {
				b.WriteByte('u')
			}
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | (c - '0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | (c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
