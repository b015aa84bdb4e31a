package producer

import (
	"fmt"
	"strings"

	"github.com/benchfleet/benchfleet/internal/escape"
)

// mdCell makes s safe inside a table cell or a list item: one line, no
// control characters, pipes and angle brackets escaped. Text a job wrote
// (a reason) goes through escape.Markdown instead, which also stops links,
// images and emphasis.
func mdCell(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", `\|`, "<", "&lt;", ">", "&gt;").Replace(escape.Control(s))
	return s
}

// mdCode makes s safe inside a `code span`.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(escape.Control(s))
}

// ShortCommit is the first 12 characters of a commit hash, for tables.
func ShortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is "1 noun" or "n nouns".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func jobsText(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "job", "jobs")) }
