package ui

import (
	"fmt"
	"html/template"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
)

var funcs = template.FuncMap{
	"rate": runstate.FmtRate,
	"pcc":  runstate.FmtPCC,
	"change": func(c *float64) string {
		if c == nil {
			return ""
		}
		return runstate.FmtChange(c)
	},
	"ratep": func(p *float64) string {
		if p == nil {
			return "—"
		}
		return runstate.FmtRate(*p)
	},
	"commit": runstate.ShortCommit,
	"pct":    func(c float64) string { return runstate.FmtChange(&c) },
	"date":   func(t time.Time) string { return t.UTC().Format("2006-01-02") },
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ago":   func(t time.Time) string { return ago(time.Now(), t) },
	"short": runstate.Shorten,
	"secs":  func(v float64) string { return fmt.Sprintf("%.2fs", v) },
	"ms":    func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"lower": strings.ToLower,
	"seriesOf": func(s gate.Series) string {
		return seriesURL(s)
	},
	"bytes": func(n int64) string {
		switch {
		case n >= 1<<20:
			return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		case n >= 1<<10:
			return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
		}
		return fmt.Sprintf("%d B", n)
	},
	"failures": func(f, h int) int { return f + h },
	"plural":   plural,
	"clip":     clip,
}

// plural is a count with its noun, "1 worker", "2 workers". n is any
// integer.
func plural(n any, noun string) string {
	var v int64
	switch n := n.(type) {
	case int:
		v = int64(n)
	case int64:
		v = n
	case uint64:
		v = int64(n)
	default:
		return fmt.Sprintf("%v %ss", n, noun)
	}
	if v == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", v, noun)
}

// clip is the first line of s in at most n characters, cut after a whole
// word with "…" when it is longer (in the middle of a word only when its
// first word alone is longer than n). Pages show the whole text in the
// element's title.
func clip(s string, n int) string {
	more := ""
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, more = strings.TrimRight(s[:i], " \r"), "…"
	}
	if utf8.RuneCountInString(s) <= n || n < 2 {
		return s + more
	}
	cut := s
	for i := range s {
		if n--; n == 0 {
			cut = s[:i]
			break
		}
	}
	if i := strings.LastIndexByte(cut, ' '); i > 0 && s[len(cut)] != ' ' {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:(") + "…"
}

// parseTemplates parses each page with the shared layout.
func parseTemplates() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range []string{"home", "run", "job", "series", "dlq", "error", "login"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}
