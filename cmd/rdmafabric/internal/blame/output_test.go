package blame

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteText(t *testing.T) {
	tests := []struct {
		name string
		s    synth
		o    Options
		want string
	}{
		{"bad node and bad link", badNodeAndLink(), Options{}, `BAD NODE node3 (slow-with-all)
  slow-with-all sending op=write/size=65536 MB/s: score 0.60 (bad below 0.90), median 6617 MB/s against fabric median 11018 MB/s (3 links)
  slow-with-all receiving op=write/size=65536 MB/s: score 0.60 (bad below 0.90), median 6585 MB/s against fabric median 11018 MB/s (3 links)
  evidence: counter-moved symbol_error=+12
BAD LINK node0 -> node1 (slow-link)
  slow-link op=write/size=65536 MB/s: score 0.60 (bad below 0.90), median 6550 MB/s against fabric median 11018 MB/s
  evidence: node0: counter-moved port_rcv_errors=+3
healthy: 3 nodes, 5 links
judged 4 nodes, 12 links on 1 metric: K=4 MADs, min drop 10%, floor 0.50 of link rate
`},
		{"healthy", synth{nodes: 4}, Options{Floor: -1}, `healthy: 4 nodes, 12 links
judged 4 nodes, 12 links on 1 metric: K=4 MADs, min drop 10%, floor off
`},
		{"suspects", synth{nodes: 4, nodeFactor: map[string]float64{"node1": 0.6}}, Options{Confirm: true, K: 3}, `suspects, not verdicts: retest them against healthy nodes before naming them
SUSPECT NODE node1 (slow-with-all)
  slow-with-all sending op=write/size=65536 MB/s: score 0.60 (bad below 0.90), median 6585 MB/s against fabric median 10997 MB/s (3 links)
  slow-with-all receiving op=write/size=65536 MB/s: score 0.60 (bad below 0.90), median 6611 MB/s against fabric median 10997 MB/s (3 links)
healthy: 3 nodes, 6 links
judged 4 nodes, 12 links on 1 metric: K=3 MADs, min drop 10%, floor 0.50 of link rate
`},
		{"below the floor", synth{nodes: 3, header: []string{"fabric.node.node0.link-rate-mbps: 25000"}}, Options{}, `BAD NODE node0 (below-floor)
  below-floor op=write/size=65536 MB/s: 0.44 of link rate 25000 MB/s (bad below 0.50), median 10951 MB/s against fabric median 11012 MB/s (4 links)
healthy: 2 nodes, 2 links
judged 3 nodes, 6 links on 1 metric: K=4 MADs, min drop 10%, floor 0.50 of link rate
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, Judge(tt.s.fabric(t), tt.o).WriteText(&b))
			assert.Equal(t, tt.want, b.String())
		})
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	rep := Judge(badNodeAndLink().fabric(t), Options{})
	assert.ErrorContains(t, rep.WriteText(failWriter{}), "write blame report: disk full")
	assert.ErrorContains(t, rep.WriteJSON(failWriter{}), "write blame report JSON: disk full")
}

func TestJSON(t *testing.T) {
	rep := Judge(badNodeAndLink().fabric(t), Options{})
	var b bytes.Buffer
	require.NoError(t, rep.WriteJSON(&b))

	var back Report
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	assert.Equal(t, rep, back, "round trip")

	var raw map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &raw))
	assert.ElementsMatch(t, []string{"suspects", "bad_nodes", "bad_links", "healthy", "total", "metrics", "options"}, keys(raw))
	node := raw["bad_nodes"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"node", "code", "findings", "evidence"}, keys(node))
	assert.Equal(t, "slow-with-all", node["code"])
	finding := node["findings"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"code", "direction", "pass", "scenario", "unit", "score", "threshold", "median", "fabric_median", "links"}, keys(finding))
	ev := node["evidence"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"code": "counter-moved", "node": "node3", "key": "symbol_error", "value": "+12"}, ev)
	link := raw["bad_links"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"src", "dst", "code", "findings", "evidence"}, keys(link))
	assert.Equal(t, map[string]any{"k": 4.0, "min_drop": 0.1, "floor": 0.5, "confirm": false}, raw["options"])

	var healthy bytes.Buffer
	require.NoError(t, Judge(synth{nodes: 4}.fabric(t), Options{}).WriteJSON(&healthy))
	assert.Contains(t, healthy.String(), `"bad_nodes": [],`, "an empty list, not null")
	assert.Contains(t, healthy.String(), `"bad_links": [],`)
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestDrainLines(t *testing.T) {
	rep := Judge(badNodeAndLink().fabric(t), Options{})
	link := "# bad link node0 -> node1: slow-link op=write/size=65536 score=0.60 6550/11018MB/s port_rcv_errors=+3; " +
		"not drained (a link is not a node): check the cable, transceivers and switch ports between node0 and node1"
	reason := "slow-with-all sending op=write/size=65536 score=0.60 6617/11018MB/s symbol_error=+12"
	tests := []struct {
		name     string
		suspects bool
		slurm    bool
		want     []string
	}{
		{"slurm", false, true, []string{
			`scontrol update NodeName=node3 State=DRAIN Reason="rdmabench: ` + reason + `"`, link,
		}},
		{"kubernetes", false, false, []string{
			"# node3: rdmabench: " + reason,
			"kubectl taint nodes node3 rdmabench.io/fabric=slow-with-all:NoSchedule", link,
		}},
		{"suspects", true, true, []string{
			"# suspects, not verdicts: retest them before draining (commands commented out)",
			`# scontrol update NodeName=node3 State=DRAIN Reason="rdmabench: ` + reason + `"`, link,
		}},
		{"suspects kubernetes", true, false, []string{
			"# suspects, not verdicts: retest them before draining (commands commented out)",
			"# node3: rdmabench: " + reason,
			"# kubectl taint nodes node3 rdmabench.io/fabric=slow-with-all:NoSchedule", link,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rep
			r.Suspects = tt.suspects
			assert.Equal(t, tt.want, r.DrainLines(tt.slurm))
		})
	}
	assert.Empty(t, Judge(synth{nodes: 4}.fabric(t), Options{}).DrainLines(true), "nothing to drain")
}

func TestDrainReasonIsSafe(t *testing.T) {
	v := NodeVerdict{Node: "node1", Code: CodeSlowWithAll, Evidence: []Evidence{
		{Code: CodeFWDiffers, Key: "fw", Value: `$(reboot) "x" ` + "`id`" + ` \ !`},
		{Code: CodeMTUDiffers, Key: "mtu", Value: "1024"},
		{Code: CodeGovernor, Key: "governor", Value: "powersave"},
	}}
	got := v.reason()
	assert.Equal(t, "slow-with-all fw=_(reboot) _x_ _id_ _ _ mtu=1024 +1 more", got)
	silent := NodeVerdict{Code: CodeNoResults, Findings: []Finding{{Code: CodeNoResults}}}
	assert.Equal(t, "no-results", silent.reason())
	long := NodeVerdict{Code: CodeSlowWithAll, Evidence: []Evidence{{Key: "fw", Value: strings.Repeat("9", 500)}}}
	assert.Len(t, long.reason(), maxReason)
}

func TestExit(t *testing.T) {
	assert.Equal(t, 0, Report{}.Exit())
	assert.Equal(t, 1, Report{Nodes: []NodeVerdict{{Node: "a"}}}.Exit())
	assert.Equal(t, 1, Report{Links: []LinkVerdict{{Src: "a", Dst: "b"}}}.Exit())
}
