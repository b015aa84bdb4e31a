package cli

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/atomicfile"
	"github.com/benchfleet/benchfleet/producer/chart"
	"github.com/benchfleet/benchfleet/protocol"
)

// resultsTrendCmds are `results trend` and `results report`.
func (a *app) resultsTrendCmds() []*cobra.Command {
	return []*cobra.Command{a.resultsTrendCmd(), a.resultsReportCmd()}
}

func (a *app) resultsTrendCmd() *cobra.Command {
	var (
		q      queryFlags
		metric string
		out    string
	)
	cmd := &cobra.Command{
		Use:   "trend --out FILE.svg",
		Short: "Draw a metric over time, one line per series, as an SVG",
		Long: `Trend draws one panel per model, stacked on a shared time axis, and in each
one line per series (pool, batch size, data format, runner) of a metric
over run creation time, through the series' passed results. Each panel's y
axis is fitted to its passed results (it does not start at 0), so a 10%
step shows. Results that did not pass are red crosses at their value, a
triangle at the edge when the value lies beyond the axis, and on the bottom
edge when nothing was measured; they never set the range. A samples/sec
point that the regression gate's rule (5% and 3σ below the median of the
series' last 10 earlier passed results) judges a regression is ringed in
red with its change. The filters are those of 'results query'. The file is
a self-contained SVG written atomically. PNG is not supported in this build.`,
		Example: `  benchfleet results trend --model resnet50 --since 30d --out resnet50.svg
  benchfleet results trend --pool n150 --metric pcc --out pcc.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := chart.ParseMetric(metric)
			if err != nil {
				return usageErr("--metric: %v", err)
			}
			if err := checkOut(out, ".svg"); err != nil {
				return err
			}
			return a.writeChart(cmd, &q, out, "the "+string(m)+" trend of", func(w io.Writer, rs []*protocol.Result) error {
				return chart.WriteTrendSVG(w, rs, chart.TrendOptions{Metric: m, Title: m.Label() + " over time" + q.describe()})
			})
		},
	}
	addFilterFlags(cmd, &q, "", "passed, failed, error, timeout or cancelled")
	fl := cmd.Flags()
	fl.StringVar(&metric, "metric", string(chart.MetricSamplesPerSec), "samples_per_sec, pcc or p50_ms")
	fl.StringVar(&out, "out", "", "the SVG file to write (required; .svg)")
	return cmd
}

func (a *app) resultsReportCmd() *cobra.Command {
	var (
		q   queryFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "report --out FILE.html",
		Short: "Write a self-contained HTML report: summary, trend and latest result per series",
		Long: `Report writes one self-contained HTML page about the results matching the
filters (those of 'results query'): counts by status and the date range, the
samples/sec trend (as 'results trend' draws it) inlined, the series whose
latest result is a regression by the gate's rule, and a table of the latest
result of every series, grouped by model, with samples/sec, PCC, status, the
gate's verdict and change against the median of the earlier passed results
(coloured only for a regression or an improvement), the change against the
previous passed result, commit and run. The file is written atomically.`,
		Example: `  benchfleet results report --since 30d --out report.html
  benchfleet results report --branch main --pool n150 --out n150.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOut(out, ".html", ".htm"); err != nil {
				return err
			}
			return a.writeChart(cmd, &q, out, "a report of", func(w io.Writer, rs []*protocol.Result) error {
				return chart.WriteReportHTML(w, rs, chart.ReportOptions{Query: strings.TrimPrefix(q.describe(), " — ")})
			})
		},
	}
	addFilterFlags(cmd, &q, "", "passed, failed, error, timeout or cancelled")
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "the HTML file to write (required; .html)")
	return cmd
}

// checkOut requires --out with one of the extensions exts.
func checkOut(out string, exts ...string) error {
	if out == "" {
		return usageErr("--out is required (a %s file)", exts[0])
	}
	ext := strings.ToLower(filepath.Ext(out))
	for _, e := range exts {
		if ext == e {
			return nil
		}
	}
	if ext == ".png" && exts[0] == ".svg" {
		return usageErr("--out %q: only .svg is supported in this build (no PNG)", out)
	}
	return usageErr("--out %q: want a %s file", out, exts[0])
}

// writeChart runs the filtered query (no result is a usage error), renders
// its results and writes them to out atomically, saying "wrote <what>
// <n> results to <out>".
func (a *app) writeChart(cmd *cobra.Command, q *queryFlags, out, what string, render func(io.Writer, []*protocol.Result) error) error {
	f, err := q.filter()
	if err != nil {
		return err
	}
	rs, err := a.queryStore(cmd.Context(), f)
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		return usageErr("no results match%s", q.describe())
	}
	var buf bytes.Buffer
	if err := render(&buf, rs); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(out, buf.Bytes()); err != nil {
		return fmt.Errorf("--out %q: %w", out, err)
	}
	fmt.Fprintf(a.stdout, "wrote %s %s to %s\n", what, count(len(rs), "result"), out)
	return nil
}
