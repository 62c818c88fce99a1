package oob_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

func goodResult() *oob.RunResult {
	return &oob.RunResult{Iters: 100, Values: map[string]float64{"ns/op": 5300, "MB/s": 12364, "p50-ns": 4100},
		Units: map[string]string{"p50-ns": "lower"}, Counters: map[string]uint64{"port_xmit_data": 4096}}
}

// TestAgentMessagesRoundTrip sends each agent message through a frame
// and reads it back.
func TestAgentMessagesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		t        oob.MsgType
		in, back oob.Validator
	}{
		{oob.MsgFacts, &oob.Facts{}, &oob.Facts{}},
		{oob.MsgFactsOK, &oob.FactsOK{Node: "node1", Lines: []string{"fabric.node.node1.dev: rxe0"}}, &oob.FactsOK{}},
		{oob.MsgRun, &oob.Run{Dst: "node2", Scenario: "WriteBW/size=65536", Runs: 5, Iters: 2000}, &oob.Run{}},
		{oob.MsgRunResult, goodResult(), &oob.RunResult{}},
		{oob.MsgRunResult, func() *oob.RunResult { r := goodResult(); r.Start, r.End = 1765000000e9, 1765000002e9; return r }(), &oob.RunResult{}},
		{oob.MsgRunDone, &oob.RunDone{}, &oob.RunDone{}},
		{oob.MsgClock, &oob.Clock{}, &oob.Clock{}},
		{oob.MsgClockOK, &oob.ClockOK{Now: 1765000000e9}, &oob.ClockOK{}},
	} {
		t.Run(tc.t.String(), func(t *testing.T) {
			require.NoError(t, tc.in.Validate())
			var buf bytes.Buffer
			require.NoError(t, oob.WriteFrame(&buf, tc.t, tc.in))
			require.NoError(t, oob.Decode(&buf, tc.t, tc.back))
			assert.Equal(t, tc.in, tc.back)
		})
	}
}

// TestAgentMessagesRefused: every bound of the agent messages, named in
// the error with the value.
func TestAgentMessagesRefused(t *testing.T) {
	many := make([]string, oob.MaxFactLines+1)
	for i := range many {
		many[i] = "x"
	}
	result := func(edit func(r *oob.RunResult)) *oob.RunResult { r := goodResult(); edit(r); return r }
	for _, tc := range []struct {
		name string
		m    oob.Validator
		want string
	}{
		{"run no dst", &oob.Run{Scenario: "WriteBW", Runs: 1, Iters: 1}, "dst: node name \"\": 0 characters, want 1 to 253"},
		{"run dst with slash", &oob.Run{Dst: "a/b", Scenario: "WriteBW", Runs: 1, Iters: 1}, `dst: node name "a/b" holds '/'`},
		{"run dst too long", &oob.Run{Dst: strings.Repeat("n", 254), Scenario: "WriteBW", Runs: 1, Iters: 1}, "254 characters, want 1 to 253"},
		{"run runs", &oob.Run{Dst: "n", Scenario: "WriteBW", Runs: 101, Iters: 1}, "runs 101 out of range 1..100"},
		{"run iters", &oob.Run{Dst: "n", Scenario: "WriteBW", Runs: 1, Iters: 0}, "iters 0 out of range 1..1073741824"},
		{"run scenario control", &oob.Run{Dst: "n", Scenario: "Write\nBW", Runs: 1, Iters: 1}, "holds a control character"},
		{"facts lines", &oob.FactsOK{Node: "n", Lines: many}, "257 lines exceed 256"},
		{"facts node", &oob.FactsOK{Node: "n m"}, `node: node name "n m" holds ' '`},
		{"result nan", result(func(r *oob.RunResult) { r.Values["MB/s"] = math.NaN() }), `value of "MB/s" is NaN`},
		{"result no values", result(func(r *oob.RunResult) { r.Values = nil }), "no values"},
		{"result iters", result(func(r *oob.RunResult) { r.Iters = 0 }), "iters 0 out of range"},
		{"result direction", result(func(r *oob.RunResult) { r.Units["p50-ns"] = "up" }), `better="up", want higher or lower`},
		{"result key space", result(func(r *oob.RunResult) { r.Counters["a b"] = 1 }), `key "a b" is not a name`},
		{"region start only", result(func(r *oob.RunResult) { r.Start = 5 }), "timed region start 5, end 0: want 0 < start ≤ end ≤ start + 86400000000000 ns"},
		{"region end only", result(func(r *oob.RunResult) { r.End = 5 }), "timed region start 0, end 5"},
		{"region backwards", result(func(r *oob.RunResult) { r.Start, r.End = 10, 9 }), "timed region start 10, end 9"},
		{"region before 1970", result(func(r *oob.RunResult) { r.Start, r.End = -10, 9 }), "timed region start -10, end 9"},
		{"region over a day", result(func(r *oob.RunResult) { r.Start, r.End = 1, 1+oob.MaxRegionNs+1 }), "timed region start 1, end 86400000000002"},
		{"clock zero", &oob.ClockOK{}, "now 0: want a positive Unix time in ns"},
		{"clock negative", &oob.ClockOK{Now: -1}, "now -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
