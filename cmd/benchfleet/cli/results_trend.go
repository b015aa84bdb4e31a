package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/atomicfile"
	"github.com/benchfleet/benchfleet/producer/chart"
	"github.com/benchfleet/benchfleet/protocol"
)

// resultsTrendCmds are `results trend` and `results report`.
func (a *app) resultsTrendCmds() []*cobra.Command {
	return []*cobra.Command{a.resultsTrendCmd(), a.resultsReportCmd(), a.resultsAcceptCmd()}
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
		Long:  longHelp("results-trend"),
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
		Long:  longHelp("results-report"),
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
	if err := chart.CheckOut(out, exts...); err != nil {
		return usageErr("%v", err)
	}
	return nil
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
