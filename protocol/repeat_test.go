package protocol_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

func TestRepeatIsPartOfTheCellAndAvoidIsNot(t *testing.T) {
	j := validJob()
	_, id0 := j.CellID()
	j.Avoid = []string{"host-a/tt0"}
	if _, id := j.CellID(); id != id0 {
		t.Fatalf("avoid changed the id: %s vs %s", id, id0)
	}
	j.Repeat = 1
	_, id1 := j.CellID()
	if id1 == id0 {
		t.Fatal("a repeat has the original's id")
	}
	j.Repeat = 2
	if _, id2 := j.CellID(); id2 == id1 {
		t.Fatal("repeats 1 and 2 share an id")
	}
}

func TestRepeatAndAvoidValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*protocol.Job)
		field string
	}{
		{"negative repeat", func(j *protocol.Job) { j.Repeat = -1 }, "repeat"},
		{"repeat over max", func(j *protocol.Job) { j.Repeat = protocol.MaxRepeat + 1 }, "repeat"},
		{"too many avoided", func(j *protocol.Job) { j.Avoid = make([]string, protocol.MaxAvoid+1) }, "avoid"},
		{"empty board", func(j *protocol.Job) { j.Avoid = []string{""} }, "avoid"},
		{"board with a space", func(j *protocol.Job) { j.Avoid = []string{"a b"} }, "avoid"},
		{"board too long", func(j *protocol.Job) { j.Avoid = []string{strings.Repeat("a", 2*protocol.MaxIDLen+2)} }, "avoid"},
	} {
		j := validJob()
		tc.edit(j)
		err := j.Validate()
		var fe *protocol.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v, want a %s field error", tc.name, err, tc.field)
		}
	}
	j := validJob()
	j.Repeat, j.Avoid = protocol.MaxRepeat, []string{"host-a/tt0", "w_1/tt:3"}
	if err := j.Validate(); err != nil {
		t.Fatalf("valid repeat and avoid: %v", err)
	}
}
