package ui

import (
	"sort"
	"strconv"
	"strings"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// jobSpec is how a job was asked to run, beyond its benchmark: the job
// page shows it.
type jobSpec struct {
	Priority protocol.Priority
	// Loops and Warmup are the benchmark's loop and warmup counts; 0 when
	// not known (a manifest written before cells, without a result).
	Loops, Warmup int
	// Labels are "key=value", by key.
	Labels []string
}

// specOf is the spec of job js of run m: from its stored result when there
// is one, else from the cell its manifest entry records.
func specOf(m *protocol.RunManifest, js *runstate.JobState) jobSpec {
	sp := jobSpec{Priority: m.Priority}
	labels := map[string]string{}
	if r := js.Result; r != nil {
		sp.Loops, sp.Warmup = r.Benchmark.LoopCount, r.Benchmark.WarmupCount
		labels = r.Labels
	} else if f := cellFields(js.Job.Cell); f != nil {
		sp.Loops, _ = strconv.Atoi(f["loop"])
		sp.Warmup, _ = strconv.Atoi(f["warmup"])
		for k, v := range f {
			if name, ok := strings.CutPrefix(k, "label."); ok {
				labels[name] = v
			}
		}
	}
	for k, v := range labels {
		sp.Labels = append(sp.Labels, k+"="+v)
	}
	sort.Strings(sp.Labels)
	return sp
}

// cellFields splits a job's cell (protocol.Job.Cell: space-separated
// key=value, a value quoted when it may hold anything, source= a
// comma-separated list of quoted values) into its fields, quoted values
// unquoted. A key is the word before its "=", so an unquoted value with a
// space in it spoils only its own field. nil for an empty cell.
func cellFields(cell string) map[string]string {
	if cell == "" {
		return nil
	}
	out := map[string]string{}
	rest := cell
	for {
		eq := strings.IndexByte(rest, '=')
		if eq < 0 {
			return out
		}
		key := rest[:eq]
		if sp := strings.LastIndexByte(key, ' '); sp >= 0 {
			key = key[sp+1:]
		}
		rest = rest[eq+1:]
		var vals []string
		for strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return out
			}
			v, _ := strconv.Unquote(q)
			vals = append(vals, v)
			rest = rest[len(q):]
			if !strings.HasPrefix(rest, `,"`) {
				break
			}
			rest = rest[1:]
		}
		end := strings.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		if vals == nil {
			out[key] = rest[:end]
		} else {
			out[key] = strings.Join(vals, ",")
		}
		rest = rest[end:]
	}
}
