package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
	workers "github.com/benchfleet/benchfleet/worker/fleet"
)

// workerView is one worker of the home page.
type workerView struct {
	protocol.WorkerStatus
	Age    string // since the last heartbeat
	Boards []boardView
	// Build is its version and revision (fleet.WorkerVersion).
	Build string
}

// boardView is one board of the home page: its heartbeat and what it
// recorded in the store.
type boardView struct {
	protocol.DeviceStatus
	// Recorded and Failures are the board's results of the last
	// boardWindow and those that did not pass (from the store; the
	// heartbeat's own count since the worker started when the store
	// could not be read).
	Recorded, Failures int
	// CanRelease: this dashboard's NATS user may release the board; else
	// ReleaseNeeds says who may (for a quarantined board).
	CanRelease   bool
	ReleaseNeeds string
}

// runView is one run of the home page.
type runView struct {
	watch.RunSummary
	Done, Total int
	Verdict     string
}

type queueRow struct {
	Pool              string
	High, Normal, Low uint64
	// Untrusted counts the untrusted producer's jobs among them
	// (BENCH_UNTRUSTED).
	Untrusted uint64
	InFlight  uint64
	Total     uint64
	// Unserved says, when no live worker serves the pool with a board in
	// service, why its jobs wait (watch.PoolService), as submit warns.
	Unserved string
}

type homeData struct {
	Workers              []workerView
	Boards, Idle, Busy   int
	Quarantined, Flagged int
	// Lost counts the boards of lost workers (heartbeat lapsed).
	Lost int
	// NATSDown: NATS did not answer; the fleet, queues and runs are not
	// known, and Stored lists the runs with results of the last day.
	NATSDown bool
	Stored   []storedRun
	// StoreDown: the store did not answer; runs show their events'
	// progress.
	StoreDown bool
	// Unread says which runs were not read within the page's budget.
	Unread         string
	Queues         []queueRow
	Active, Recent []runView
	Errors         []string
	// Window is the span the boards' done and failures cover ("24 h");
	// Counted says where they come from.
	Window, Counted string
	// Open lists the fleet's open and accepted regressions (nil: not
	// made yet, or the store is not answering); OpenPending says a new
	// list is being made, OpenErr why the last making failed.
	Open        *openList
	OpenPending bool
	OpenErr     string
}

// OpenDays is how many days of results the open regressions are worked
// out from.
func (homeData) OpenDays() int { return int(openWindow / (24 * time.Hour)) }

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, h := s.pageHealth(r)
	defer cancel()
	var d homeData
	var (
		fleet            []protocol.WorkerStatus
		runs             []watch.RunSummary
		qs               []watch.QueueDepth
		ferr, rerr, qerr error
	)
	if h.NATS {
		// The reads of NATS at once, each within the page's budget. With
		// the store down, runs show their events' progress.
		var store storage.Bucket
		if h.Store {
			store = s.cfg.Store
		}
		var wg sync.WaitGroup
		wg.Go(func() { fleet, ferr = workers.ReadFleet(ctx, s.cfg.Topology.Workers) })
		wg.Go(func() { runs, rerr = watch.ListRuns(ctx, s.cfg.JS, s.cfg.Topology.Runs, store, s.cfg.RecentRuns) })
		wg.Go(func() { qs, qerr = watch.ReadQueues(ctx, s.cfg.JS) })
		wg.Wait()
		for _, err := range []error{ferr, rerr, qerr} {
			if err != nil {
				d.Errors = append(d.Errors, err.Error())
			}
		}
	}
	keepFleet(r, fleet)
	workers.FlagBoards(fleet)
	now := time.Now()
	d.StoreDown = !h.Store
	if d.NATSDown = !h.NATS; d.NATSDown && h.Store {
		var err error
		if d.Stored, err = storedRuns(ctx, s.cfg.Store, now, s.cfg.RecentRuns); err != nil {
			d.Errors = append(d.Errors, err.Error())
		}
	}
	var from time.Time // the oldest run still going: its results land in its date partition
	for _, rs := range runs {
		if rs.Progress != nil && (rs.State == runstate.RunQueued || rs.State == runstate.RunRunning) &&
			(from.IsZero() || rs.Manifest.CreatedAt.Before(from)) {
			from = rs.Manifest.CreatedAt
		}
	}
	var counts map[boardKey]boardCounts
	cerr := errors.New("the store is not answering")
	if h.Store {
		var wg sync.WaitGroup
		wg.Go(func() {
			var err error
			if d.Open, d.OpenPending, err = s.openRegressions(ctx, now); err != nil {
				d.OpenErr = err.Error()
			}
		})
		counts, cerr = s.boards.count(ctx, s.cfg.Store, now, from)
		wg.Wait()
		if cerr != nil {
			d.Errors = append(d.Errors, cerr.Error())
		}
	}
	d.Window = fmt.Sprintf("%d h", int(boardWindow.Hours()))
	d.Counted = "results of the last " + d.Window + ", from the store: a worker restart does not reset them"
	if cerr != nil {
		d.Counted = "since each worker started (the store could not be read)"
	}
	for _, st := range fleet {
		wv := workerView{WorkerStatus: st, Age: ago(now, st.Time), Build: report.WorkerVersion(st)}
		for _, dev := range st.Devices {
			bv := boardView{DeviceStatus: dev, Recorded: int(dev.Done)}
			if cerr == nil {
				c := counts[boardKey{st.ID, dev.ID}]
				bv.Recorded, bv.Failures = c.Done, c.Failed
			}
			if dev.State == protocol.DeviceQuarantined && s.operator(r) {
				bv.CanRelease, bv.ReleaseNeeds = s.mayRelease(ctx, st.ID, dev.ID)
			}
			wv.Boards = append(wv.Boards, bv)
		}
		d.Workers = append(d.Workers, wv)
		for _, dev := range st.Devices {
			d.Boards++
			switch {
			case st.Lost:
				d.Lost++
			case dev.State == protocol.DeviceIdle:
				d.Idle++
			case dev.State == protocol.DeviceBusy:
				d.Busy++
			case dev.State == protocol.DeviceQuarantined:
				d.Quarantined++
			}
			if dev.Flag != "" {
				d.Flagged++
			}
		}
	}
	byPool := map[string]*queueRow{}
	for _, q := range qs {
		row, ok := byPool[q.Pool]
		if !ok {
			row = &queueRow{Pool: q.Pool}
			byPool[q.Pool] = row
		}
		switch q.Priority {
		case protocol.PriorityHigh:
			row.High += q.Pending
		case protocol.PriorityNormal:
			row.Normal += q.Pending
		case protocol.PriorityLow:
			row.Low += q.Pending
		}
		if q.Trust.Untrusted() {
			row.Untrusted += q.Pending
		}
		row.InFlight += q.InFlight
		row.Total += q.Pending
	}
	var queued []string
	for _, p := range protocol.Pools {
		if row, ok := byPool[p]; ok && (row.Total > 0 || row.InFlight > 0) {
			d.Queues = append(d.Queues, *row)
			queued = append(queued, p)
		}
	}
	if ferr == nil && h.NATS {
		for _, ps := range watch.PoolsService(fleet, queued, now) {
			for i := range d.Queues {
				if d.Queues[i].Pool == ps.Pool && !ps.InService {
					d.Queues[i].Unserved = ps.String() + ": its jobs wait in the queue"
				}
			}
		}
	}
	unread := 0
	for i, rs := range runs {
		if rs.Progress == nil && i < s.cfg.RecentRuns {
			unread++
		}
		if rs.Progress == nil {
			// Not looked at (past RecentRuns) or its state could not be
			// read: one such run must not hide the runs after it.
			continue
		}
		v := runView{RunSummary: rs, Done: rs.Progress.All.Done(), Total: rs.Progress.All.Total}
		switch rs.State {
		case runstate.RunQueued, runstate.RunRunning, runstate.RunCancelling:
			d.Active = append(d.Active, v)
		default:
			v.Verdict = s.finishedVerdict(ctx, rs, h.Store)
			d.Recent = append(d.Recent, v)
		}
	}
	switch {
	case unread > 0 && ctx.Err() != nil:
		d.Unread = fmt.Sprintf("%s not read within %s: not shown (reload to try again)", plural(unread, "run"), PageBudget)
	case unread > 0:
		d.Unread = fmt.Sprintf("%s could not be read: not shown", plural(unread, "run"))
	}
	s.render(w, r, "home", "benchfleet", true, d)
}

// finishedVerdict is the word a finished run leads with: FAIL, CANCELLED,
// or the gate's PASS / REGRESSION (cached: results are write-once).
func (s *Server) finishedVerdict(ctx context.Context, rs watch.RunSummary, storeOK bool) string {
	switch rs.State {
	case runstate.RunCancelled:
		return "CANCELLED"
	case runstate.RunFailed:
		return string(gate.OutcomeFail)
	}
	// Keyed by the run and its job count: confirmation repeats added to a
	// run that looked finished change its verdict.
	key := fmt.Sprintf("%s#%d", rs.Manifest.Run, len(rs.Manifest.Jobs))
	s.mu.Lock()
	v, ok := s.verdicts[key]
	s.mu.Unlock()
	if ok {
		return v
	}
	if !storeOK {
		return "?" // the verdict is the stored results'
	}
	rep, err := s.report(ctx, rs.Manifest, nil)
	if err != nil {
		return "?"
	}
	v = string(rep.Outcome())
	s.mu.Lock()
	if len(s.verdicts) > 10000 {
		clear(s.verdicts)
	}
	s.verdicts[key] = v
	s.mu.Unlock()
	return v
}

// report is a run with the gate's verdicts (gate.JudgeRun, the gate every
// front end shares): from states when given (a Watcher snapshot), else
// from the run's stored results.
func (s *Server) report(ctx context.Context, m *protocol.RunManifest, states map[string]*runstate.JobState) (*gate.RunReport, error) {
	var (
		v   *gate.RunVerdict
		err error
	)
	if states != nil {
		v, err = gate.JudgeRun(ctx, gate.RunInput{Manifest: m, States: states, Gate: true, GateConfig: s.cfg.Gate, History: s.history, Store: s.cfg.Store})
	} else {
		v, err = gate.JudgeRun(ctx, gate.RunInput{Run: m.Run, Manifest: m, Store: s.cfg.Store, History: s.history, Gate: true, GateConfig: s.cfg.Gate})
	}
	if err != nil {
		return nil, err
	}
	return v.Report, nil
}

// jobRow is one job of the run page.
type jobRow struct {
	runstate.Row
	State     *runstate.JobState
	StatusTxt string // the verdict, or the progress while not ended
	Class     string // CSS class of the status
	Worker    string
	Board     string
	Gate      *gate.GateRow
	// GateTxt is what the gate column says (gateTxt); "" while the job may
	// still run.
	GateTxt   string
	Log       string // the artifact key of the job's log, if any
	SeriesURL string
}

// gateTxt is what the gate column says of a job: the gate's verdict of a
// job that ran to its end, "cancelled" for a cancelled one and
// "unfinished" for one that never ended in a run that is over (the gate
// counts both as failed; neither ran to a verdict). It is "" for a job
// that has not ended in a run still going.
func gateTxt(js *runstate.JobState, v gate.Verdict, runOver bool) string {
	switch st := js.Status(); {
	case st == protocol.StatusCancelled:
		return "cancelled"
	case st != "":
		return string(v)
	case runOver && !js.Reported():
		return "unfinished"
	}
	return ""
}

type runData struct {
	// Unknown counts the jobs whose state is not known: not ended in the
	// store, and NATS (their events) not answering.
	Unknown int
	// Warn says what could not be read.
	Warn      string
	Manifest  *protocol.RunManifest
	State     string
	Cancelled bool
	// CanCancel: this dashboard's NATS user may cancel the run; else
	// CancelNeeds says who may.
	CanCancel   bool
	CancelNeeds string
	// Lost names the lost workers (heartbeat lapsed) some of whose jobs
	// the run shows running: redelivered after the ack wait.
	Lost       []string
	Progress   runstate.Progress
	Done       int
	Finished   bool
	Outcome    string
	Jobs       []jobRow
	Regressed  []jobRow
	GateConfig string
	Unserved   []string
	// Spooled says where results of the run wait in workers' spools.
	Spooled []string
}

// Untrusted says the run is of the untrusted producer (its name, or a
// result claimed from its stream): judged against trusted baselines,
// never in one.
func (d runData) Untrusted() bool {
	if d.Manifest != nil && protocol.UntrustedRun(d.Manifest.Run) {
		return true
	}
	for _, j := range d.Jobs {
		if j.Untrusted() {
			return true
		}
	}
	return false
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, h := s.pageHealth(r)
	defer cancel()
	m, ok := s.manifest(ctx, w, r, h)
	if !ok {
		return
	}
	st, err := s.watcher(m, h).Snapshot(ctx)
	var warn string
	if err != nil && h.NATS {
		// The events could not be read (a cluster electing, or losing
		// its quorum, before the probe saw it): the stored results alone,
		// with a budget of their own (the events' read may have spent the
		// page's).
		warn = fmt.Sprintf("The run's events could not be read (%v): jobs without a stored result are not known.", err)
		s.natsDown(r, &h, err)
		h.NATS = false
		stored, cancelStored := context.WithTimeout(r.Context(), PageBudget)
		defer cancelStored()
		ctx = stored
		st, err = s.watcher(m, h).Snapshot(ctx)
	}
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	var cerr error = jetstream.ErrKeyNotFound
	if h.NATS {
		_, cerr = s.cfg.Topology.Runs.Get(ctx, protocol.CancelKey(m.Run))
	}
	d := runData{Manifest: m, Cancelled: cerr == nil, Progress: runstate.ProgressOf(m, st), GateConfig: s.cfg.Gate.String(), Warn: warn}
	if s.operator(r) {
		d.CanCancel, d.CancelNeeds = s.mayCancel(ctx, m.Run)
	}
	d.State = runstate.RunState(d.Progress, d.Cancelled)
	if !h.NATS && !d.Progress.Ended() {
		d.State = "not known"
	}
	d.Done = d.Progress.All.Done()
	d.Finished = d.Progress.Ended()
	rep, err := s.report(ctx, m, st)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	if d.Finished {
		d.Outcome = string(rep.Outcome())
		switch {
		case d.Cancelled:
			d.Outcome = "CANCELLED"
		case d.Outcome == string(gate.OutcomeRegression):
			// Every job passed, but the run did not: the state chip
			// beside the banner says what the banner says.
			d.State = "regression"
		}
	} else if fleet, err := s.readFleet(ctx, h); err == nil {
		keepFleet(r, fleet)
		d.Unserved = workers.UnservedPools(fleet, m.Jobs)
		d.Spooled = runstate.SpooledNotes(d.Progress, fleet)
		d.Lost = lostOf(fleet, st)
	} else {
		d.Spooled = runstate.SpooledNotes(d.Progress, nil)
	}
	for i, row := range rep.Rows {
		js := st[row.Job]
		jr := jobRow{Row: row, State: js, Gate: &rep.Verdicts[i]}
		jr.StatusTxt, jr.Class = statusOf(js)
		if !h.NATS && !js.Terminal() {
			jr.StatusTxt = "not known: no result stored, and NATS (its events) is not answering"
			d.Unknown++
		}
		jr.GateTxt = gateTxt(js, jr.Gate.Verdict, d.Cancelled)
		jr.Worker, jr.Board = js.Worker, js.Device
		if js.Result != nil {
			jr.Worker, jr.Board = js.Result.Worker.ID, js.Result.Device.ID
			jr.Log = logKey(js.Result)
			jr.SeriesURL = seriesURL(gate.SeriesOf(js.Result))
		} else {
			jr.SeriesURL = seriesURL(gate.Series{Test: js.Job.Test, Model: js.Job.Model, BatchSize: js.Job.BatchSize,
				DataFormat: js.Job.DataFormat, Pool: js.Job.Pool, Runner: js.Job.Runner})
		}
		d.Jobs = append(d.Jobs, jr)
		if jr.Gate.Verdict == gate.VerdictRegression {
			d.Regressed = append(d.Regressed, jr)
		}
	}
	s.render(w, r, "run", "run "+m.Run, !d.Finished, d)
}

// runLookback bounds the scan for a run the bucket no longer holds and
// whose results have no job markers.
const runLookback = 90 * 24 * time.Hour

// manifest reads the run named in the path (from the store while NATS is
// not answering, h); it has answered the request when ok is false.
func (s *Server) manifest(ctx context.Context, w http.ResponseWriter, r *http.Request, h health) (*protocol.RunManifest, bool) {
	run := r.PathValue("run")
	if err := protocol.ValidID("run", run); err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return nil, false
	}
	if !h.NATS {
		m, err := gate.StoredManifest(ctx, s.cfg.Store, run, nil)
		if err != nil {
			s.fail(w, r, http.StatusServiceUnavailable, fmt.Errorf("run %s: NATS is not answering and the store has no manifest of it: %w", run, err))
			return nil, false
		}
		return m, true
	}
	m, err := runstate.GetManifest(ctx, s.cfg.Topology.Runs, run)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// A run older than the bucket's history: rebuild it from its results.
		// Its job markers name its date; a run without them is looked
		// for in the last runLookback only: a request for a name that
		// was never a run must not scan every date.
		since := storage.RunSince(ctx, s.cfg.Store, run, time.Now().Add(-runLookback))
		rs, _, qerr := index.Query(ctx, s.cfg.Store, index.Filter{Run: run, Since: since})
		if qerr != nil || len(rs) == 0 {
			s.fail(w, r, http.StatusNotFound, fmt.Errorf("run %q not found", run))
			return nil, false
		}
		return gate.ManifestFromResults(run, rs), true
	}
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return nil, false
	}
	return m, true
}

// statusOf is a job's status word and its CSS class: the stored result's
// status, or the events' progress while there is none.
func statusOf(js *runstate.JobState) (string, string) {
	if s := js.Status(); s != "" {
		return string(s), string(s)
	}
	switch {
	case js.Reported() && js.Spooled:
		return "spooled on worker " + js.Worker + " (result not in the store yet)", "running"
	case js.Reported():
		return "ending (result awaited)", "running"
	case js.Kind == protocol.EventRetrying:
		return "retrying", "running"
	case js.Kind == protocol.EventPhase && js.Phase != "":
		return "running: " + js.Phase, "running"
	case js.OnBoard():
		return "running", "running"
	}
	return "queued", "queued"
}

// logKey is the key of a result's log artifact: the runner's, else the
// worker's.
func logKey(r *protocol.Result) string {
	var worker string
	for _, a := range r.Artifacts {
		switch a.Name {
		case "log.txt":
			return a.Key
		case "worker.log":
			worker = a.Key
		}
	}
	return worker
}

func seriesURL(s gate.Series) string {
	q := make([]string, 0, 6)
	add := func(k, v string) {
		if v != "" {
			q = append(q, k+"="+urlQuery(v))
		}
	}
	add("model", s.Model)
	add("pool", s.Pool)
	add("batch", strconv.Itoa(s.BatchSize))
	add("format", s.DataFormat)
	add("runner", s.Runner)
	add("test", s.Test)
	return "/series?" + strings.Join(q, "&")
}

type jobData struct {
	Run       *protocol.RunManifest
	Row       jobRow
	Spec      jobSpec
	Result    *protocol.Result
	Events    []*protocol.Event
	Artifacts []protocol.Artifact
	// Gate is the gate's configuration (defaults filled), for the words
	// around a missing or short baseline.
	Gate gate.GateConfig
	// HostCommit is the commit the job named when its result ran the
	// host's installed build instead (report.HostCommit).
	HostCommit string
}

func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, h := s.pageHealth(r)
	defer cancel()
	m, ok := s.manifest(ctx, w, r, h)
	if !ok {
		return
	}
	id := r.PathValue("job")
	st, err := s.watcher(m, h).Snapshot(ctx)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	js, ok := st[id]
	if !ok {
		s.failBack(w, r, http.StatusNotFound, fmt.Errorf("run %s has no job %q", m.Run, id), "/runs/"+m.Run, "run "+m.Run)
		return
	}
	// The job and its confirmation repeats, which are its attempts.
	sub := map[string]*runstate.JobState{id: js}
	for _, j := range m.Jobs {
		if j.Of == id && st[j.ID] != nil {
			sub[j.ID] = st[j.ID]
		}
	}
	rep, err := s.report(ctx, m, sub)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	d := jobData{Run: m, Result: js.Result, Spec: specOf(m, js), Gate: s.cfg.Gate}
	d.Row = jobRow{Row: rep.Rows[0], State: js, Gate: &rep.Verdicts[0], Worker: js.Worker, Board: js.Device}
	d.Row.StatusTxt, d.Row.Class = statusOf(js)
	var cerr error = jetstream.ErrKeyNotFound
	if h.NATS {
		_, cerr = s.cfg.Topology.Runs.Get(ctx, protocol.CancelKey(m.Run))
	}
	d.Row.GateTxt = gateTxt(js, d.Row.Gate.Verdict, cerr == nil)
	s0 := gate.Series{Test: js.Job.Test, Model: js.Job.Model, BatchSize: js.Job.BatchSize, DataFormat: js.Job.DataFormat, Pool: js.Job.Pool, Runner: js.Job.Runner}
	if js.Result != nil {
		d.Row.Worker, d.Row.Board = js.Result.Worker.ID, js.Result.Device.ID
		d.Row.Log = logKey(js.Result)
		d.Artifacts = js.Result.Artifacts
		d.HostCommit = report.HostCommit(js.Result)
		s0 = gate.SeriesOf(js.Result)
	}
	d.Row.SeriesURL = seriesURL(s0)
	if m.Run != "" && h.NATS {
		_, _ = workers.ReadStored(ctx, s.cfg.JS, protocol.StreamEvents, protocol.JobEventsFilters(m.Run, id), func(msg jetstream.Msg) {
			if e, err := protocol.DecodeEvent(msg.Data()); err == nil && e.Kind != protocol.EventLog && protocol.TrustedEvent(msg.Subject(), e.Kind) {
				d.Events = append(d.Events, e)
			}
		})
	}
	s.render(w, r, "job", "job "+id, !js.Terminal(), d)
}

// artifact serves an object under artifacts/ from the store: text as
// text/plain, JSON as JSON, anything else as a download; never as HTML.
func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/")
	if !strings.HasPrefix(key, storage.PrefixArtifacts) || storage.CheckKey(key) != nil || strings.Contains(key, "..") {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("not an artifact key: %q", key))
		return
	}
	rc, err := s.cfg.Store.Get(r.Context(), key)
	if errors.Is(err, storage.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no artifact %s", key))
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	defer rc.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(rc, head)
	head = head[:n]
	h := w.Header()
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	switch {
	case path.Ext(key) == ".json":
		h.Set("Content-Type", "application/json")
	case utf8.Valid(head) || n == 512 && utf8.Valid(head[:n-3]):
		h.Set("Content-Type", "text/plain; charset=utf-8")
	default:
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(key)}))
	}
	_, _ = w.Write(head)
	_, _ = io.Copy(w, rc)
}

type dlqData struct {
	Entries []dlqRow
	// Unread says why the dead letters could not be read ("": they were).
	Unread string
}

// dlqRow is one dead letter of the page and whether it is offered for a
// retry (CanRetry), or why not (NoRetry: an invalid job, or who may).
type dlqRow struct {
	workers.DeadEntry
	CanRetry bool
	NoRetry  string
	// Invalid: the job itself is not worth a retry
	// (fleet.DeadEntry.NotRetryable), whoever asks.
	Invalid bool
}

func (s *Server) dlq(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, h := s.pageHealth(r)
	defer cancel()
	if !h.NATS {
		s.render(w, r, "dlq", "dead letters", true, dlqData{Unread: "The dead letters live in NATS (BENCH_DEAD), which is not answering."})
		return
	}
	es, err := workers.ReadDead(ctx, s.cfg.JS)
	if err != nil && s.natsDown(r, &h, err) {
		s.render(w, r, "dlq", "dead letters", true, dlqData{Unread: "The dead letters live in NATS (BENCH_DEAD), which is not answering."})
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	d := dlqData{}
	for i := len(es) - 1; i >= 0; i-- { // newest first
		row := dlqRow{DeadEntry: es[i]}
		row.CanRetry, row.NoRetry = s.mayRetry(ctx, es[i])
		row.Invalid = es[i].NotRetryable() != ""
		d.Entries = append(d.Entries, row)
	}
	s.render(w, r, "dlq", "dead letters", false, d)
}

func (s *Server) cancel(_ http.ResponseWriter, r *http.Request) (string, error) {
	run := r.PathValue("run")
	if err := protocol.ValidID("run", run); err != nil {
		return "", err
	}
	if ok, why := s.mayCancel(r.Context(), run); !ok {
		return "", errors.New(why)
	}
	out, err := submit.CancelRun(r.Context(), s.cfg.JS, submit.CancelRequest{Run: run, Store: s.cfg.Store})
	if c, ok := s.cfg.Topology.Runs.(*kvCache); ok {
		c.forget(protocol.CancelKey(run)) // set through the run's own bucket handle
	}
	if err != nil {
		return "", err
	}
	if out.Finished {
		return fmt.Sprintf("run %s had already finished: nothing to cancel", run), nil
	}
	return fmt.Sprintf("run %s cancelled: %s", run, submit.CancelSummary(out)), nil
}

func (s *Server) retry(_ http.ResponseWriter, r *http.Request) (string, error) {
	es, err := workers.ReadDead(r.Context(), s.cfg.JS)
	if err != nil {
		return "", err
	}
	for _, e := range es {
		if e.ID != r.PathValue("id") {
			continue
		}
		if ok, why := s.mayRetry(r.Context(), e); !ok {
			return "", fmt.Errorf("dead letter %s: not re-queued: %s", e.ID, why)
		}
	}
	job, err := workers.RetryDead(r.Context(), s.cfg.JS, r.PathValue("id"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("job %s of run %s re-queued on %s", job.ID, job.Run, job.Queue.Subject()), nil
}

func (s *Server) release(_ http.ResponseWriter, r *http.Request) (string, error) {
	wk, dev := r.PathValue("worker"), r.PathValue("device")
	if ok, why := s.mayRelease(r.Context(), wk, dev); !ok {
		return "", errors.New(why)
	}
	if _, err := workers.ReleaseBoard(r.Context(), s.cfg.Topology.Health, wk, dev); err != nil {
		return "", err
	}
	return fmt.Sprintf("board %s of %s released: the worker checks it and takes jobs again", dev, wk), nil
}

// ago is a short age, "3s ago".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// watcher reads run m's jobs: their events and their stored results, as
// far as NATS and the store answer (h).
func (s *Server) watcher(m *protocol.RunManifest, h health) *watch.Watcher {
	w := &watch.Watcher{Manifest: m}
	if h.NATS {
		w.JS = s.cfg.JS
	}
	if h.Store {
		w.Store = s.cfg.Store
	}
	return w
}

// readFleet reads the fleet while NATS answers (h).
func (s *Server) readFleet(ctx context.Context, h health) ([]protocol.WorkerStatus, error) {
	if !h.NATS {
		return nil, errors.New("NATS is not answering")
	}
	return workers.ReadFleet(ctx, s.cfg.Topology.Workers)
}

// lostOf names the lost workers of fleet (heartbeat lapsed) that the
// states show holding a job: "w1 (no heartbeat since 12:00:03Z: 2 jobs)".
func lostOf(fleet []protocol.WorkerStatus, states map[string]*runstate.JobState) []string {
	var out []string
	for _, w := range fleet {
		if !w.Lost {
			continue
		}
		n := 0
		for _, st := range states {
			if st.OnBoard() && st.Worker == w.ID {
				n++
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%s on %s (no heartbeat since %s: %s, redelivered after the ack wait)", w.ID, w.Host, w.Time.UTC().Format("15:04:05Z"), plural(n, "job")))
		}
	}
	return out
}

// storedRun is a run as the store alone shows it: its results of the
// last day (while NATS, which holds the runs, does not answer).
type storedRun struct {
	Run       string
	CreatedAt time.Time
	// Results counts its stored results; Passed and NotPassed of them.
	Results, Passed, NotPassed int
}

// storedRuns are the runs with results created in the day before now,
// newest first, at most n.
func storedRuns(ctx context.Context, b storage.Bucket, now time.Time, n int) ([]storedRun, error) {
	rs, _, err := index.Query(ctx, b, index.Filter{Since: now.Add(-24 * time.Hour)})
	if err != nil {
		return nil, fmt.Errorf("runs in the store: %w", err)
	}
	by := map[string]*storedRun{}
	for _, r := range rs {
		sr := by[r.Run]
		if sr == nil {
			sr = &storedRun{Run: r.Run, CreatedAt: r.RunCreatedAt}
			by[r.Run] = sr
		}
		sr.Results++
		if r.Status == protocol.StatusPassed {
			sr.Passed++
		} else {
			sr.NotPassed++
		}
	}
	out := make([]storedRun, 0, len(by))
	for _, sr := range by {
		out = append(out, *sr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}
