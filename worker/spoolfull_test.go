package worker_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/benchfleet/benchfleet/worker"
)

// The store is down (VersityGW killed) and the spool's disk is full (a
// tmpfs filled to its last page): the worker cannot record a result. It
// hands back what it claimed, before running it, without a dead letter;
// it claims nothing more and says why (status, /healthz 503, its
// bench-workers record); the jobs wait in their queue however many
// deliveries MaxDeliver allows. Once the store is back, every job passes
// with one result.
func TestStoreDownSpoolDiskFullJobsWait(t *testing.T) {
	t.Parallel()
	disk := t.TempDir()
	if err := unix.Mount("tmpfs", disk, "tmpfs", 0, "size=2m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v): needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(disk, unix.MNT_DETACH) })
	s3 := s3test.Start(t)
	bucket := s3Bucket(t, s3, "farm")
	sp, err := spool.NewWithConfig(spool.Config{Dir: filepath.Join(disk, "spool"), Bucket: bucket,
		RetryMin: 100 * time.Millisecond, RetryMax: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runSpool(t, sp)
	fillDisk(t, disk)
	s3.Stop()

	srv := fleettest.Server(t)
	tc := topology.Config{AckWait: 5 * time.Second}
	nc, _ := fleettest.Connect(t, srv.ClientURL())
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)
	w := fleettest.StartWorker(t, worker.Config{ID: "full", Conn: nc, Store: bucket, Sink: sp, Slots: fleettest.SimSlots("full", 2),
		AckWait: tc.AckWait, MaxDeliver: 2, Backoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})
	const run, n = "spool-full", 6
	jobs := fleettest.SimJobs(t, run, n, map[string]string{"sim.duration": "100ms"})
	fleettest.Submit(t, js, topo, nil, run, protocol.PriorityNormal, jobs)

	fleettest.Eventually(t, 30*time.Second, "the worker to say it cannot record results", func() bool {
		st := w.Status()
		for _, d := range st.Devices {
			if !strings.Contains(d.Reason, "not claiming") {
				return false
			}
		}
		return strings.Contains(st.Store, "store not answering") && strings.Contains(st.Store, "no space left")
	})
	if code, body := healthz(t, w); code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot record results") {
		t.Errorf("/healthz: %d %q, want 503 saying it cannot record results", code, body)
	}
	fleettest.Eventually(t, 15*time.Second, "the bench-workers record to say it cannot record results", func() bool {
		return strings.Contains(workerRecord(t, topo, "full").Store, "cannot record results")
	})
	// The jobs wait: for longer than MaxDeliver hand-backs take at this
	// backoff, none is dead-lettered, run or recorded.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if info, err := topo.Dead.Info(t.Context()); err != nil || info.State.Msgs != 0 {
			t.Fatalf("dead letters while the host cannot record: %+v, %v; want none", info, err)
		}
	}
	evs := runEvents(t, js, run)
	for _, j := range jobs {
		if es := eventsOf(evs, j.ID, protocol.EventClaimed); len(es) > 0 {
			t.Errorf("job %s ran %d times while nothing could be recorded, want none", j.ID, len(es))
		}
	}

	s3.Start()
	fleettest.Eventually(t, 60*time.Second, "every job's result once the store is back", func() bool {
		rs, _, err := index.QueryJSON(t.Context(), bucket, index.Filter{Run: run})
		return err == nil && len(rs) == n
	})
	results := fleettest.Results(t, bucket, run)
	for _, j := range jobs {
		if r := results[j.ID]; r == nil || r.Status != protocol.StatusPassed {
			t.Errorf("job %s: result %+v, want passed", j.ID, r)
		}
	}
	if info, err := topo.Dead.Info(t.Context()); err != nil || info.State.Msgs != 0 {
		t.Errorf("dead letters: %+v, %v; want none", info, err)
	}
	fleettest.Eventually(t, 10*time.Second, "the slots to claim again", func() bool {
		st := w.Status()
		return st.Store == "" && st.Devices[0].Reason == "" && st.Devices[1].Reason == ""
	})
}

// fillDisk writes into dir until its file system is full.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.CreateTemp(dir, "ballast-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}
