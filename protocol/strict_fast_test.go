package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func strictSeedJob() []byte {
	j := Job{Schema: SchemaJob, ID: "j0123456789abcdef", Run: "run-1", Pool: "sim", Runner: "sim",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Labels:    map[string]string{"team": "compiler", "ä": "x"},
		Benchmark: Benchmark{Model: "resnet50", BatchSize: 8, LoopCount: 32}}
	data, _ := json.Marshal(j)
	return data
}

// The fast walk answers exactly as the token walk does: the same nil or
// the same error text, for any input (it hands what it cannot read to the
// token walk, so syntax errors are encoding/json's own).
func FuzzCheckStrict(f *testing.F) {
	good := strictSeedJob()
	body := strings.TrimSuffix(string(good), "}")
	for _, s := range []string{
		string(good), string(good) + "}", string(good) + " x", string(good) + "{}",
		strings.Replace(string(good), `"pool":`, `"POOL":`, 1),
		body + `,"pool":"sim"}`,
		strings.Replace(string(good), `"team":"compiler"`, `"team":"compiler","team":"infra"`, 1),
		strings.Replace(string(good), `"pool":`, `"po\u006fl":`, 1),
		body + `,"p\u006fol":"x"}`,
		`{"labels":{"a\u00e9":"1","aé":"2"}}`,
		`{"labels":{"a` + "\xff" + `":"1","a` + "\xfe" + `":"2"}}`,
		`{"limits":{"timeout":{"x":1,"x":2}}}`,
		`{"benchmark":[1,{"a":1,"a":2}]}`,
		`{"pool" "x"}`, `{"pool":}`, `{"pool":"x",}`, `[1,2`, `{"created_at":"2026"`, `"x"`, `5 6`, ``, ` `,
	} {
		f.Add([]byte(s))
	}
	jobType := reflect.TypeFor[Job]()
	f.Fuzz(func(t *testing.T, data []byte) {
		fast := checkStrict(data, jobType)
		ref := checkStrictTokens(data, jobType)
		if (fast == nil) != (ref == nil) || (fast != nil && fast.Error() != ref.Error()) {
			t.Fatalf("checkStrict(%q) = %v; the token walk says %v", data, fast, ref)
		}
	})
}

func TestStrictFastReadsPlainJobsItself(t *testing.T) {
	t.Parallel()
	if err, ok := strictFast(strictSeedJob(), reflect.TypeFor[Job]()); !ok || err != nil {
		t.Fatalf("strictFast on a valid job: %v (read itself: %v)", err, ok)
	}
}
