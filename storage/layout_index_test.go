package storage

import (
	"strings"
	"testing"
	"time"
)

func TestLateKeyRoundTrip(t *testing.T) {
	end := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	rk := ResultKey(end, "r-1", "j-2")
	lk, ok := LateKey(rk)
	if !ok || !strings.HasPrefix(lk, PrefixIndex) {
		t.Fatalf("LateKey(%s) = %s %v", rk, lk, ok)
	}
	date, got, ok := lateResultKey(lk)
	if !ok || got != rk || date != DatePartition(end) {
		t.Fatalf("lateResultKey(%s) = %s %s %v", lk, date, got, ok)
	}
	for _, bad := range []string{PrefixIndex + "date=2026-01-01/_late/x.json", PrefixIndex + "date=2026-01-01/_late/a/b.c.json",
		PrefixIndex + "date=2026-01-01/part-1.parquet", PrefixIndex + "date=2026-01-02/_late/a.b.txt",
		PrefixIndex + "date=2026-01-02/_late/a.b.c.json", PrefixIndex + "date=2026-01-02/_late/.b.json"} {
		if _, _, ok := lateResultKey(bad); ok {
			t.Errorf("lateResultKey(%s) accepted", bad)
		}
	}
}
