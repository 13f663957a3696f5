package paper

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The paper, quoted word for word or not at all: every quotation the code's comments and the documents
// attribute to the paper must be held by QUOTES.md, under the section it is cited from.

// quotesFile is the file of the paper's sentences, relative to this package.
const quotesFile = "QUOTES.md"

// paperQuotes is QUOTES.md: the sentences by section ("3.1", "5", ...).
type paperQuotes map[string][]string

func loadQuotes(t *testing.T) paperQuotes {
	t.Helper()
	data, err := os.ReadFile(quotesFile)
	if err != nil {
		t.Fatal(err)
	}
	q, err := parseQuotes(string(data))
	if err != nil {
		t.Fatalf("%s: %v", quotesFile, err)
	}
	return q
}

var quoteHeadingRE = regexp.MustCompile(`^## §(\d+(?:\.\d+)?) `)

// parseQuotes reads "## §N Title" headings and the "- sentence" lines under each.
func parseQuotes(text string) (paperQuotes, error) {
	q := paperQuotes{}
	sec := ""
	for _, l := range strings.Split(text, "\n") {
		if m := quoteHeadingRE.FindStringSubmatch(l); m != nil {
			sec = m[1]
			continue
		}
		if strings.HasPrefix(l, "- ") && sec != "" {
			q[sec] = append(q[sec], normalize(strings.TrimPrefix(l, "- ")))
		}
	}
	if len(q) == 0 {
		return nil, os.ErrNotExist
	}
	return q, nil
}

// quotation is one quoted text attributed to the paper, with the section it is cited from ("" for the paper
// as a whole) and where it is.
type quotation struct {
	where, section, text string
}

var (
	// A section of the paper: "§3.1", but not "docs/PROTOCOL.md §10" (a document's own sections).
	sectionRE = regexp.MustCompile(`§(\d+(?:\.\d+)?)`)
	docRefRE  = regexp.MustCompile(`[A-Za-z]\.md\)?(?:,? ?(?:§\d+(?:\.\d+)?|step \d+)(?:,| and| or)?)* ?$`)
	// What may stand between a section and the quotation it introduces: a colon, a few words.
	leadRE = regexp.MustCompile(`^[A-Za-z0-9 ,:'’(]{0,40}?["“]`)
	// "the paper's ...", "(paper: ...": a quotation attributed to the paper without a section.
	paperRE = regexp.MustCompile(`(?i)\bpaper(?:'s)?:? ["“]`)
)

// attributed finds the quotations text attributes to the paper: one that follows a paper section within a
// few words ("§3.1: "...""), one right before a section in parentheses (""..." (§3.1)"), and one after
// "paper" ("the paper's "...""). where names text's place.
func attributed(where, text string) []quotation {
	var out []quotation
	for _, m := range sectionRE.FindAllStringSubmatchIndex(text, -1) {
		if docRefRE.MatchString(text[max(0, m[0]-40):m[0]]) || insideQuote(text[:m[0]]) {
			continue // a document's own section, or a section named inside a quotation (a title)
		}
		sec := text[m[2]:m[3]]
		if lead := leadRE.FindStringIndex(text[m[1]:]); lead != nil {
			start := m[1] + lead[1]
			if q, ok := closeQuote(text, start); ok {
				out = append(out, quotation{where, sec, q})
			}
		}
		if before := text[:m[0]]; strings.HasSuffix(before, `" (`) || strings.HasSuffix(before, "” (") {
			i := strings.LastIndexAny(before[:len(before)-2], "\"”")
			if j := strings.LastIndexAny(text[:i], "\"“"); j >= 0 {
				out = append(out, quotation{where, sec, text[j+1 : i]})
			}
		}
	}
	for _, m := range paperRE.FindAllStringIndex(text, -1) {
		if q, ok := closeQuote(text, m[1]); ok {
			out = append(out, quotation{where, "", q})
		}
	}
	kept := out[:0]
	for _, q := range out {
		if strings.TrimSpace(q.text) != "" {
			kept = append(kept, q)
		}
	}
	return kept
}

// insideQuote reports whether text ends inside an open quotation.
func insideQuote(text string) bool {
	return strings.Count(text, `"`)%2 == 1 || strings.LastIndex(text, "“") > strings.LastIndex(text, "”")
}

// closeQuote returns the quoted text that starts at start and ends at the next closing quotation mark.
func closeQuote(text string, start int) (string, bool) {
	end := strings.IndexAny(text[start:], "\"”")
	if end < 0 {
		return "", false
	}
	return text[start : start+end], true
}

var (
	spaceRE    = regexp.MustCompile(`\s+`)
	ellipsisRE = regexp.MustCompile(`\s*(?:\.\.\.|…|\[\.\.\.\])\s*`)
)

func normalize(s string) string {
	s = strings.NewReplacer("“", `"`, "”", `"`, "’", "'", "‘", "'").Replace(s)
	return strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
}

// held reports whether q is the paper's words as QUOTES.md holds them: each part between ellipses is a
// part of one sentence of the section q cites (of any section, for a quotation without one), its first
// letter's case aside.
func (p paperQuotes) held(q quotation) bool {
	for _, frag := range ellipsisRE.Split(normalize(q.text), -1) {
		frag = strings.Trim(frag, " .,;:")
		if frag == "" {
			continue
		}
		if !p.holds(q.section, frag) {
			return false
		}
	}
	return true
}

func (p paperQuotes) holds(section, frag string) bool {
	lower := strings.ToLower(frag[:1]) + frag[1:]
	upper := strings.ToUpper(frag[:1]) + frag[1:]
	for sec, sentences := range p {
		if section != "" && sec != section {
			continue
		}
		for _, s := range sentences {
			if strings.Contains(s, lower) || strings.Contains(s, upper) {
				return true
			}
		}
	}
	return false
}

// commentBlocks returns the comments of a Go file, each run of // lines joined into one text, and the
// paragraphs of a Markdown file outside code blocks, each with the line it starts at.
func commentBlocks(path, src string) []struct {
	line int
	text string
} {
	var out []struct {
		line int
		text string
	}
	var block []string
	start, fence := 0, false
	flush := func() {
		if len(block) > 0 {
			out = append(out, struct {
				line int
				text string
			}{start, strings.Join(block, " ")})
		}
		block = nil
	}
	goFile := strings.HasSuffix(path, ".go")
	for i, l := range strings.Split(src, "\n") {
		if goFile {
			c := strings.TrimSpace(l)
			if j := strings.Index(c, "//"); j >= 0 && !strings.Contains(c[:j], `"`) {
				if len(block) == 0 {
					start = i + 1
				}
				block = append(block, strings.TrimSpace(c[j+2:]))
				if j > 0 { // a comment at the end of a line of code stands alone
					flush()
				}
				continue
			}
			flush()
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			flush()
			continue
		}
		if fence || strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		if len(block) == 0 {
			start = i + 1
		}
		block = append(block, strings.TrimSpace(l))
	}
	flush()
	return out
}

// repoQuotations walks the repository from root for the quotations its Go comments and Markdown documents
// attribute to the paper. results/ (what runs wrote), testdata/ and QUOTES.md itself are left out.
func repoQuotations(t *testing.T, root string) []quotation {
	t.Helper()
	var out []quotation
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "results", "testdata", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") || filepath.Base(path) == quotesFile ||
			strings.HasSuffix(path, filepath.Join("paper", "quotes_test.go")) {
			return nil // QUOTES.md itself, and this file's examples of what a quotation looks like
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, b := range commentBlocks(path, string(data)) {
			out = append(out, attributed(rel+":"+itoa(b.line), b.text)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// Every quotation attributed to the paper in the repository's comments and documents is the paper's text,
// as QUOTES.md holds it, under the section cited.
func TestPaperQuotations(t *testing.T) {
	p := loadQuotes(t)
	qs := repoQuotations(t, "..")
	bad := 0
	for _, q := range qs {
		if !p.held(q) {
			bad++
			sec := "the paper"
			if q.section != "" {
				sec = "§" + q.section
			}
			t.Errorf("%s: %q is quoted as %s, but %s holds no such words there", q.where, q.text, sec, quotesFile)
		}
	}
	t.Logf("%d quotations of the paper checked, %d not its words", len(qs), bad)
	if len(qs) < 20 {
		t.Errorf("found only %d quotations of the paper: the finder is broken", len(qs))
	}
}

// The check itself: each sentence of QUOTES.md, quoted whole after its section, passes; the same with one
// word replaced fails; so do a sentence cited under another section and a quotation of a document's own
// section, which is not the paper's and is not checked.
func TestPaperQuotationsCheck(t *testing.T) {
	p := loadQuotes(t)
	n := 0
	for sec, sentences := range p {
		for _, s := range sentences {
			words := strings.Fields(s)
			if len(words) < 4 || strings.ContainsAny(s, `"“”`) {
				continue // a heading, or a passage with quotation marks of its own
			}
			n++
			whole := attributed("x", "§"+sec+`: "`+s+`"`)
			if len(whole) != 1 || !p.held(whole[0]) {
				t.Errorf("§%s %q quoted whole: found %v, not held", sec, s, whole)
			}
			words[len(words)/2] = "nonsense"
			altered := attributed("x", `as the paper puts it, "`+strings.Join(words, " ")+`" (§`+sec+")")
			if len(altered) == 0 || p.held(altered[0]) {
				t.Errorf("§%s %q with one word replaced: found %v, held", sec, s, altered)
			}
		}
	}
	if n == 0 {
		t.Fatal("no sentence in QUOTES.md")
	}
	for _, text := range []string{
		`Before it, "Kafka stores a CRC for each message in the log" (§3.1), in the wrong section.`,
		`The paper's "each message is stored forever" is not in it.`,
	} {
		for _, q := range attributed("x", text) {
			if p.held(q) {
				t.Errorf("%q: %q held", text, q.text)
			}
		}
		if len(attributed("x", text)) == 0 {
			t.Errorf("%q: no quotation found", text)
		}
	}
	if qs := attributed("x", `docs/PROTOCOL.md §10, "broker epochs", says so.`); len(qs) != 0 {
		t.Errorf("a document's section taken for the paper's: %v", qs)
	}
}
