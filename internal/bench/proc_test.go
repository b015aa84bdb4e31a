package bench

import (
	"testing"
	"time"
)

func TestParseProcStatCPU(t *testing.T) {
	t.Parallel()
	// A command with spaces and a ')' in it; utime 250, stime 17 ticks.
	stat := "4242 (bench (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 17 0 0 20 0 9 0 123 456 789"
	got, err := parseProcStatCPU(stat)
	if err != nil || got != 2670*time.Millisecond {
		t.Fatalf("got %s, %v; want 2.67s", got, err)
	}
	if _, err := parseProcStatCPU("4242 (short) S 1"); err == nil {
		t.Fatal("a short stat line parsed")
	}
}
