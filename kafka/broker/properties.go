package broker

import (
	"fmt"
	"os"
	"strings"
)

// LoadProperties reads a Java properties file (the format of parseProperties)
// into a map, a later key overriding an earlier one. The clients' config
// files (consumer.config, producer.config of the mirror maker) are read with
// it.
func LoadProperties(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("broker: properties file: %w", err)
	}
	out := map[string]string{}
	for _, p := range parseProperties(string(data)) {
		out[p.key] = p.value
	}
	return out, nil
}

// property is one key = value pair of a properties file; line is where it
// started (1-based).
type property struct {
	key, value string
	line       int
}

// parseProperties reads the format of java.util.Properties, which is what
// Kafka 0.7's server.properties is: one key and value per logical line,
// separated by '=', ':' or whitespace; '#' and '!' start comment lines; a line
// ending in an odd number of backslashes continues on the next one; and
// \t \n \r \f \uXXXX and \<char> escapes are decoded.
func parseProperties(text string) []property {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")
	var props []property
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
		props = append(props, property{key: unescape(key), value: unescape(value), line: start})
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
