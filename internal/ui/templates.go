package ui

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/producer"
)

var funcs = template.FuncMap{
	"rate": producer.FmtRate,
	"pcc":  producer.FmtPCC,
	"change": func(c *float64) string {
		if c == nil {
			return ""
		}
		return producer.FmtChange(c)
	},
	"ratep": func(p *float64) string {
		if p == nil {
			return "—"
		}
		return producer.FmtRate(*p)
	},
	"commit": producer.ShortCommit,
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ago":   func(t time.Time) string { return ago(time.Now(), t) },
	"short": producer.Shorten,
	"secs":  func(v float64) string { return fmt.Sprintf("%.2fs", v) },
	"ms":    func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"lower": strings.ToLower,
	"seriesOf": func(s producer.Series) string {
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
}

// parseTemplates parses each page with the shared layout.
func parseTemplates() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range []string{"home", "run", "job", "series", "dlq"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}
