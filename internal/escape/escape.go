// Package escape makes text that jobs provide (reasons, notes, model
// names, error messages) safe for the places benchfleet writes it: a
// terminal, a CSV file opened in a spreadsheet, a Markdown summary, a chat
// webhook. Each function keeps the text readable; none of them lets the
// text act (move the cursor, run a formula, draw a link or an image, ping
// a channel).
package escape

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// zwsp is a zero-width space: invisible, but it breaks the sequences
// (auto-links, mentions, link syntax) a renderer would act on.
const zwsp = "\u200b"

// Control strips control characters from s: C0 (but tab and newline),
// DEL and C1 (0x80-0x9f, which includes the 8-bit CSI), and so every ANSI
// escape sequence loses its ESC. Bytes that are not UTF-8 become U+FFFD.
// Carriage returns become spaces. What is
// left is printable.
func Control(s string) string {
	if !hasControl(s, true) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\r':
			b.WriteByte(' ')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case isControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Terminal is s for one cell of a terminal table: control characters
// stripped (Control), and tabs and newlines become spaces so the text
// cannot move to another column or row.
func Terminal(s string) string {
	s = Control(s)
	if strings.ContainsAny(s, "\t\n") {
		s = strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
	}
	return s
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f)
}

func hasControl(s string, keepTabNL bool) bool {
	if !utf8.ValidString(s) {
		return true // invalid bytes become U+FFFD: a lone 0x9b is an 8-bit CSI
	}
	for _, r := range s {
		if isControl(r) && !(keepTabNL && (r == '\t' || r == '\n')) {
			return true
		}
	}
	return false
}

// terminalWriter strips control characters (but tab and newline) from
// everything written through it.
type terminalWriter struct{ w io.Writer }

// TerminalWriter returns a writer that strips control characters (but tab
// and newline: Control) from every write before passing it to w, for
// tables of job-provided text. It reports the length of what it was given.
func TerminalWriter(w io.Writer) io.Writer { return terminalWriter{w} }

func (t terminalWriter) Write(p []byte) (int, error) {
	s := string(p)
	if !hasControl(s, true) {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, Control(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CSVCell guards a cell against formula injection: a cell that begins
// with = + - @, a tab or a carriage return is prefixed with a single
// quote, so a spreadsheet shows it as text instead of evaluating it. A
// cell that is a plain number ("-0.25", strconv.ParseFloat) is left as it
// is: a spreadsheet reads it as the number.
func CSVCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		if _, err := strconv.ParseFloat(s, 64); err == nil && s[0] != '\t' && s[0] != '\r' {
			return s
		}
		return "'" + s
	}
	return s
}

// CSVRow is CSVCell on every cell of row, in place; it returns row.
func CSVRow(row []string) []string {
	for i, c := range row {
		row[i] = CSVCell(c)
	}
	return row
}

// markdownMeta are the characters that start Markdown (CommonMark and
// GitHub's) inline syntax; each is escaped with a backslash.
const markdownMeta = "\\`*_[]()#+-!|~"

// Markdown is s as plain text in one line of Markdown (a table cell, a
// list item, a quote): control characters stripped, newlines as spaces,
// Markdown metacharacters backslash-escaped (no emphasis, links, images,
// code), < > & as HTML entities (no HTML, no autolinks), and bare URLs
// and www. names broken with a zero-width space so GitHub does not link
// them. The text reads the same.
func Markdown(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(Control(s))
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for _, r := range s {
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r < 0x80 && strings.ContainsRune(markdownMeta, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return breakLinks(b.String(), true)
}

// breakLinks puts a zero-width space after "@" so no chat or forge
// turns a name into a mention, and with urls into "://" and "www." so no
// renderer turns them into links.
func breakLinks(s string, urls bool) string {
	if !strings.Contains(s, "@") && (!urls || !strings.Contains(s, "://") && !strings.Contains(strings.ToLower(s), "www.")) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		b.WriteByte(c)
		switch {
		case !urls:
			if c == '@' && i+1 < len(s) {
				b.WriteString(zwsp)
			}
		case c == ':' && strings.HasPrefix(s[i+1:], "//"):
			b.WriteString(zwsp)
		case c == '@' && i+1 < len(s):
			b.WriteString(zwsp)
		case (c == 'w' || c == 'W') && i+3 < len(s) && strings.EqualFold(s[i:i+4], "www."):
			b.WriteString(s[i+1 : i+3])
			b.WriteString(zwsp)
			i += 2
		}
	}
	return b.String()
}

// Chat is s for the text of a Slack or Mattermost webhook message:
// control characters (but newlines and tabs) stripped; & < > as the
// entities both read (so <!channel>, <@U123>, <!here> and <url|text>
// are shown, not acted on); @channel, @here, @all and other mentions
// broken with a zero-width space; and "](" broken so a Markdown link
// [text](url) is shown as text. Bare URLs stay (the chat links them, as
// it shows them: nothing is hidden behind other text).
func Chat(s string) string {
	s = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "](", "]"+zwsp+"(").Replace(Control(s))
	return breakLinks(s, false)
}
