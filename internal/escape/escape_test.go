package escape_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/internal/escape"
)

func TestControl(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":                       "plain",
		"\x1b[31mred\x1b[0m":          "[31mred[0m",
		"a\u009b2Jb\x9b":              "a2Jb\ufffd",
		"bell\x07\x08\x7f":            "bell",
		"keep\ttab\nnewline\rcr":      "keep\ttab\nnewline cr",
		"\x1b]0;title\x07window name": "]0;titlewindow name",
	} {
		if got := escape.Control(in); got != want {
			t.Errorf("Control(%q) = %q, want %q", in, got, want)
		}
	}
	if got := escape.Terminal("a\tb\nc\x1b[2J"); got != "a b c[2J" {
		t.Errorf("Terminal: %q", got)
	}
	var b bytes.Buffer
	n, err := escape.TerminalWriter(&b).Write([]byte("x\x1b[2Jy\n"))
	if err != nil || n != 7 || b.String() != "x[2Jy\n" {
		t.Errorf("TerminalWriter: %d %v %q", n, err, b.String())
	}
}

func TestCSVCell(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"=HYPERLINK(\"http://evil\")": "'=HYPERLINK(\"http://evil\")",
		"+1+cmd|' /C calc'!A0":        "'+1+cmd|' /C calc'!A0",
		"-0.25":                       "-0.25",
		"+3":                          "+3",
		"-2+3":                        "'-2+3",
		"@SUM(A1)":                    "'@SUM(A1)",
		"\tx":                         "'\tx",
		"\rx":                         "'\rx",
		"mlp":                         "mlp",
		"":                            "",
		"a=b":                         "a=b",
	} {
		if got := escape.CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	t.Parallel()
	in := "boom [click](https://evil.example) ![x](http://evil/img.png) <img src=x> **bold** `code` | www.evil.example @team\x1b[31m\nnext"
	got := escape.Markdown(in)
	for _, bad := range []string{"[click](", "![", "<img", "**", "https://", "www.evil", "@team", "\x1b", "\n", " | "} {
		if strings.Contains(got, bad) {
			t.Errorf("Markdown(%q) = %q: still has %q", in, got, bad)
		}
	}
	if !strings.Contains(got, `\[click\]\(https:`) {
		t.Errorf("Markdown: %q, want the brackets escaped", got)
	}
}

func TestChat(t *testing.T) {
	t.Parallel()
	in := "failed <!channel> <@U123> <!here> <https://evil.example|your CI> [x](https://evil) @channel & more\x1b[2J"
	got := escape.Chat(in)
	for _, bad := range []string{"<!", "<@", "<http", "](", "@channel", "\x1b"} {
		if strings.Contains(got, bad) {
			t.Errorf("Chat(%q) = %q: still has %q", in, got, bad)
		}
	}
	if !strings.Contains(got, "&lt;!channel&gt;") || !strings.Contains(got, "&amp; more") {
		t.Errorf("Chat: %q, want entities", got)
	}
	if got := escape.Chat("see https://ci.example/run/1"); got != "see https://ci.example/run/1" {
		t.Errorf("Chat broke a bare URL: %q", got)
	}
}
