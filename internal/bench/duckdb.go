package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/storage/index"
)

//go:embed duckdb_query.mjs
var duckdbScript []byte

// DuckDB runs the reference query of `bench query --duckdb` through node
// and @duckdb/node-api (installed by scripts/install-duckdb.sh).
type DuckDB struct {
	node, dir string
}

// FindDuckDB locates node and the DuckDB package: BENCHFLEET_DUCKDB_DIR, or
// .tools/duckdb of the repository the working directory is in.
func FindDuckDB() (*DuckDB, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("--duckdb needs node on PATH (Debian: apt-get install -y nodejs npm): %w", err)
	}
	var dirs []string
	if d := os.Getenv("BENCHFLEET_DUCKDB_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			dirs = append(dirs, filepath.Join(d, ".tools", "duckdb"))
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "node_modules", "@duckdb", "node-api", "package.json")); err == nil {
			return &DuckDB{node: node, dir: d}, nil
		}
	}
	return nil, fmt.Errorf("--duckdb: @duckdb/node-api not found (run scripts/install-duckdb.sh, or set BENCHFLEET_DUCKDB_DIR)")
}

// query runs f over the part files matching glob repeat times and returns
// the row count and each run's time in seconds.
func (d *DuckDB) query(ctx context.Context, glob string, f index.Filter, repeat int) (int, []float64, error) {
	script, err := os.CreateTemp("", "benchfleet-duckdb-*.mjs")
	if err != nil {
		return 0, nil, err
	}
	defer os.Remove(script.Name())
	if _, err := script.Write(duckdbScript); err != nil {
		script.Close()
		return 0, nil, err
	}
	script.Close()
	cmd := exec.CommandContext(ctx, d.node, script.Name())
	cmd.Env = append(os.Environ(), "BF_DUCKDB_DIR="+d.dir, "BF_GLOB="+glob, "BF_WHERE="+duckWhere(f),
		fmt.Sprintf("BF_REPEAT=%d", repeat))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, nil, fmt.Errorf("duckdb: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var out struct {
		Rows   int       `json:"rows"`
		RunsMS []float64 `json:"runs_ms"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return 0, nil, fmt.Errorf("duckdb: output %q: %w", stdout.String(), err)
	}
	runs := make([]float64, len(out.RunsMS))
	for i, ms := range out.RunsMS {
		runs[i] = ms / 1000
	}
	return out.Rows, runs, nil
}

// duckWhere is f as an SQL condition over the index columns
// (docs/schema-parquet.md), with every value a quoted literal.
func duckWhere(f index.Filter) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	conds := []string{"true"}
	for _, c := range [][2]string{{"model", f.Model}, {"pool", f.Pool}, {"branch", f.Branch}, {"status", string(f.Status)},
		{"run", f.Run}, {"job", f.Job}} {
		if c[1] != "" {
			conds = append(conds, c[0]+" = "+q(c[1]))
		}
	}
	if f.Commit != "" {
		conds = append(conds, "starts_with(\"commit\", "+q(f.Commit)+")")
	}
	if !f.Since.IsZero() {
		conds = append(conds, "run_created_at >= TIMESTAMPTZ "+q(f.Since.UTC().Format(time.RFC3339Nano)))
	}
	return strings.Join(conds, " AND ")
}
