package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildCache is the host's build cache's metrics (device/build): how its
// setups went and how much it holds. A nil *BuildCache records nothing.
type BuildCache struct {
	setups *prometheus.CounterVec
}

// Build setup results (benchfleet_build_setups_total's result label).
var buildSetupResults = []string{"hit", "miss", "error"}

// NewBuildCache registers benchfleet_build_setups_total{result} and
// benchfleet_build_cache_bytes (cacheBytes, read at each scrape) on reg;
// reg nil: none, a nil *BuildCache.
func NewBuildCache(reg prometheus.Registerer, cacheBytes func() int64) (*BuildCache, error) {
	if reg == nil {
		return nil, nil
	}
	m := &BuildCache{setups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "benchfleet_build_setups_total",
		Help: "Builds jobs named, provisioned on this host, by result (hit: ready in the cache; miss: made for the job; error: could not be made)."},
		[]string{"result"})}
	bytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "benchfleet_build_cache_bytes",
		Help: "Bytes the host's build cache holds (environments, test trees, wheels and mirrors)."},
		func() float64 { return float64(cacheBytes()) })
	for _, c := range []prometheus.Collector{m.setups, bytes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range buildSetupResults {
		m.setups.WithLabelValues(r)
	}
	return m, nil
}

// Setup counts one setup (the build cache's OnSetup).
func (m *BuildCache) Setup(result string, _ time.Duration) {
	if m == nil {
		return
	}
	m.setups.WithLabelValues(result).Inc()
}
