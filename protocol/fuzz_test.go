package protocol_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

// Fuzz targets for every decoder of outside input in protocol. Run one with
//
//	go test ./protocol -run '^$' -fuzz '^FuzzDecodeJob$' -fuzztime 30s

func FuzzDecodeJob(f *testing.F) {
	good, _ := json.Marshal(validJob())
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"schema":"benchfleet.job/v1","id":"../x","run":"r","benchmark":{"batch_size":-1}}`))
	f.Add([]byte(`{"schema":"benchfleet.job/v1","limits":{"timeout":1e300}}`))
	f.Add([]byte(`{"schema":"benchfleet.job/v1","labels":{"a":"b"},"extra":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := protocol.DecodeJob(data)
		if err != nil {
			if !errors.Is(err, protocol.ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		// A job that decodes is valid, safe to use as subject tokens and
		// path segments, and survives a round trip.
		if err := j.Validate(); err != nil {
			t.Fatalf("decoded job does not validate: %v", err)
		}
		if protocol.ValidID("id", j.ID) != nil || protocol.ValidID("run", j.Run) != nil || !protocol.ValidPool(j.Pool) {
			t.Fatalf("decoded job has unsafe id/run/pool: %q %q %q", j.ID, j.Run, j.Pool)
		}
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		j2, err := protocol.DecodeJob(b)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
		if j2.Cell() != j.Cell() || j2.ID != j.ID || j2.Run != j.Run {
			t.Fatalf("round trip changed the job")
		}
	})
}

func FuzzDecodeResult(f *testing.F) {
	r := protocol.Result{Schema: protocol.SchemaResult, Job: "j1", Run: "r1", Status: protocol.StatusPassed,
		Error: &protocol.ResultError{Class: protocol.ClassInfra, Message: "x"}, Labels: map[string]string{"a": "b"}}
	good, _ := json.Marshal(r)
	f.Add(good)
	f.Add([]byte(`{"schema":"benchfleet.result/v2","job":"j","run":"r","new":[1,2]}`))
	f.Add([]byte(`{"schema":"benchfleet.result/v1","job":"j","run":"r","run_created_at":"2026-03-01T23:35:00.538Z","measurements":{"total_samples":512,"samples_per_sec":664.45,"iteration_ms":{"min":5.4,"p50":6.02}},"pcc":{"value":null,"min":0.99,"passed":true},"labels":{"a":"\u00e9"},"artifacts":[{"name":"log.txt","size":7}]}`))
	f.Add([]byte(`{"schema":"benchfleet.result/v1","job":"j","run":"r","JOB":"x","status":"passed","status":"failed"}`))
	f.Add([]byte(`{"schema":"benchfleet.result/v1","job":"../../x","run":"r"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := protocol.DecodeResult(data)
		if err != nil {
			if !errors.Is(err, protocol.ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		if protocol.ValidID("job", r.Job) != nil || protocol.ValidID("run", r.Run) != nil {
			t.Fatalf("decoded result has unsafe ids %q %q", r.Job, r.Run)
		}
		// DecodeResult's fast decoder accepts only what encoding/json
		// accepts, and reads every document encoding/json writes (the
		// documents benchfleet stores) exactly as encoding/json does.
		var std protocol.Result
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("DecodeResult accepted %q, encoding/json rejects it: %v", data, err)
		}
		canon, err := json.Marshal(std)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		std = protocol.Result{}
		if err := json.Unmarshal(canon, &std); err != nil {
			t.Fatalf("encoding/json rejects its own %s: %v", canon, err)
		}
		fast, err := protocol.DecodeResult(canon)
		stdValid := strings.HasPrefix(std.Schema, "benchfleet.result/") &&
			protocol.ValidID("job", std.Job) == nil && protocol.ValidID("run", std.Run) == nil
		if (err == nil) != stdValid {
			t.Fatalf("DecodeResult of encoding/json's own %s: error %v, valid by encoding/json %v", canon, err, stdValid)
		}
		if err == nil && !reflect.DeepEqual(*fast, std) {
			t.Fatalf("DecodeResult and encoding/json read %s differently:\n%+v\n%+v", canon, *fast, std)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	e := protocol.Event{Schema: protocol.SchemaEvent, Run: "r", Job: "j", Kind: protocol.EventPassed, Attempt: 2}
	good, _ := json.Marshal(e)
	f.Add(good)
	f.Add([]byte(`{"kind":"dead","time":"not a time"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := protocol.DecodeEvent(data); err != nil && !errors.Is(err, protocol.ErrInvalid) {
			t.Fatalf("error %v does not match ErrInvalid", err)
		}
	})
}

func FuzzValidID(f *testing.F) {
	for _, s := range []string{"run-1", "../x", "a.b", "$(x)", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if protocol.ValidID("id", id) != nil {
			return
		}
		// A valid id is one subject token and one path segment.
		for _, r := range id {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			default:
				t.Fatalf("valid id %q contains %q", id, r)
			}
		}
		if protocol.DeadSubject(id) != "bench.dead."+id {
			t.Fatalf("valid id %q is not a subject token", id)
		}
	})
}
