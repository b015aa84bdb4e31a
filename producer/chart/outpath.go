package chart

import (
	"fmt"
	"path/filepath"
	"strings"
)

// CheckOut checks a chart's output path: given, and with one of the
// extensions exts (the first is the one named when it is missing).
func CheckOut(out string, exts ...string) error {
	if out == "" {
		return fmt.Errorf("--out is required (a %s file)", exts[0])
	}
	ext := strings.ToLower(filepath.Ext(out))
	for _, e := range exts {
		if ext == e {
			return nil
		}
	}
	if ext == ".png" && exts[0] == ".svg" {
		return fmt.Errorf("--out %q: only .svg is supported in this build (no PNG)", out)
	}
	return fmt.Errorf("--out %q: want a %s file", out, exts[0])
}
