package storage

import (
	"os"
	"testing"
	"time"
)

func BenchmarkZZQuery5pct(b *testing.B) {
	fb, _ := NewFileBucket(os.Getenv("BENCHFLEET_BENCH_STORE"))
	f := Filter{Model: "resnet50", Since: time.Now().AddDate(0, 0, -146)}
	for b.Loop() {
		rs, st, err := Query(b.Context(), fb, f)
		if err != nil || st.JSONRead != 0 || st.IndexPartitions != st.Partitions {
			b.Fatal(err, st)
		}
		b.ReportMetric(float64(len(rs)), "rows")
	}
}
