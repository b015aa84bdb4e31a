package ui

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// svgMarkup matches an SVG drawing element's start tag.
var svgMarkup = regexp.MustCompile(`<(svg|g|polyline|polygon|path|circle|ellipse|line|rect|text)[\s/>]`)

// The dashboard draws no chart itself: producer/chart draws the series
// page's (chart.SeriesSVG), and `results trend` is drawn with the same
// code. No .go file of the package (tests too) and no template holds SVG
// markup; the series template only places the chart.
func TestUIDrawsNoSVG(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".html")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if m := svgMarkup.Find(data); m != nil {
			t.Errorf("%s draws SVG (%q): charts are drawn by producer/chart", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile("templates/series.html")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(tmpl), "{{.Chart}}"); n != 1 {
		t.Errorf("the series template places the chart %d times, want once ({{.Chart}})", n)
	}
}
