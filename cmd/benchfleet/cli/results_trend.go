package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/atomicfile"
	"github.com/benchfleet/benchfleet/producer/chart"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
)

// resultsTrendCmds are `results trend` and `results report`.
func (a *app) resultsTrendCmds() []*cobra.Command {
	return []*cobra.Command{a.resultsTrendCmd(), a.resultsReportCmd(), a.resultsAcceptCmd()}
}

func (a *app) resultsTrendCmd() *cobra.Command {
	var q queryFlags
	var metric, out string
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
			return a.writeChart(cmd, &q, out, "the "+string(m)+" trend of", func(w io.Writer, rs []*protocol.Result, as []gate.Acceptance) error {
				return chart.WriteTrendSVG(w, rs, chart.TrendOptions{Metric: m, Title: m.Label() + " over time" + q.describe(), Acceptances: as})
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
	var q queryFlags
	var out string
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
			return a.writeChart(cmd, &q, out, "a report of", func(w io.Writer, rs []*protocol.Result, as []gate.Acceptance) error {
				return chart.WriteReportHTML(w, rs, chart.ReportOptions{Query: strings.TrimPrefix(q.describe(), " — "), Acceptances: as})
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

// writeChart runs the filtered query (no result is a usage error), reads
// the acceptance records, renders both and writes them to out atomically,
// saying "wrote <what> <n> results to <out>".
func (a *app) writeChart(cmd *cobra.Command, q *queryFlags, out, what string, render func(io.Writer, []*protocol.Result, []gate.Acceptance) error) error {
	f, err := q.filter()
	if err != nil {
		return err
	}
	b, err := a.openStoreRead(cmd.Context())
	if err != nil {
		return err
	}
	defer b.Close()
	rs, err := a.query(cmd.Context(), b, f)
	if err == nil && len(rs) == 0 {
		return usageErr("no results match%s", q.describe())
	}
	as, _, aerr := gate.ReadAcceptances(cmd.Context(), b)
	if err = errors.Join(err, aerr); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := render(&buf, rs, as); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(out, buf.Bytes()); err != nil {
		return fmt.Errorf("--out %q: %w", out, err)
	}
	fmt.Fprintf(a.stdout, "wrote %s %s to %s\n", what, count(len(rs), "result"), out)
	return nil
}
