package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchfleet/benchfleet/internal/version"
)

// buildInfo is benchfleet_build_info{version,revision,goversion}, always 1:
// which benchfleet the worker runs (version and revision, as its
// heartbeat and results say), for `count by (version, revision)` over the
// fleet.
func buildInfo(ver, revision string) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "benchfleet_build_info",
		Help: "Always 1: the benchfleet version and the commit (revision; empty when the build recorded none) this worker runs, and the Go version that built it."},
		[]string{"version", "revision", "goversion"})
	g.WithLabelValues(ver, revision, version.Get().Go).Set(1)
	return g
}
