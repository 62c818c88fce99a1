package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCmd runs the command with args and returns its exit status, stdout
// and stderr.
func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeFile writes content to a file in a test directory and returns
// its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nodes.txt")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestPlanSummary(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  string // the summary line
		lines int    // lines of output: the summary, and the rounds when listed
	}{
		// 2(64−1) = 126 rounds of 32 pairs; 126 × 10s = 21m.
		{[]string{"-plan", "-nodes", "64"},
			"schedule=all nodes=64 rounds=126 directed-pairs=4032 per-pair=10s estimated-wall=21m0s", 1},
		// 2(1024−1) = 2046 rounds of 512 pairs: 1024·1023 pairs; 20460s = 5h41m.
		{[]string{"-plan", "-nodes", "1024"},
			"schedule=all nodes=1024 rounds=2046 directed-pairs=1047552 per-pair=10s estimated-wall=5h41m0s", 1},
		// odd: 2n rounds.
		{[]string{"-plan", "-nodes", "17", "-per-pair", "1m"},
			"schedule=all nodes=17 rounds=34 directed-pairs=272 per-pair=1m0s estimated-wall=34m0s", 1},
		{[]string{"-plan", "-nodes", "64", "-schedule", "quick"},
			"schedule=quick nodes=64 rounds=2 directed-pairs=64 per-pair=10s estimated-wall=20s", 1},
		{[]string{"-plan", "-nodes", "7", "-schedule", "quick"},
			"schedule=quick nodes=7 rounds=3 directed-pairs=7 per-pair=10s estimated-wall=30s", 4},
		// 64/gcd(64,16) = 4, even: 2 rounds.
		{[]string{"-plan", "-nodes", "64", "-schedule", "ring", "-k", "16"},
			"schedule=ring/k=16 nodes=64 rounds=2 directed-pairs=64 per-pair=10s estimated-wall=20s", 1},
		// 63/gcd(63,21) = 3, odd: 3 rounds.
		{[]string{"-plan", "-nodes", "63", "-schedule", "ring", "-k", "21"},
			"schedule=ring/k=21 nodes=63 rounds=3 directed-pairs=63 per-pair=10s estimated-wall=30s", 1},
		{[]string{"-plan", "-nodes", "100000", "-schedule", "ring"},
			"schedule=ring/k=1 nodes=100000 rounds=2 directed-pairs=100000 per-pair=10s estimated-wall=20s", 1},
		{[]string{"-plan", "-nodes", "64", "-serial"},
			"schedule=all/serial nodes=64 rounds=4032 directed-pairs=4032 per-pair=10s estimated-wall=11h12m0s", 1},
		{[]string{"-plan", "-nodes", "4"},
			"schedule=all nodes=4 rounds=6 directed-pairs=12 per-pair=10s estimated-wall=1m0s", 7},
		{[]string{"-plan", "-nodes", "4", "-v=false"},
			"schedule=all nodes=4 rounds=6 directed-pairs=12 per-pair=10s estimated-wall=1m0s", 1},
		{[]string{"-plan", "-nodes", "64", "-v"},
			"schedule=all nodes=64 rounds=126 directed-pairs=4032 per-pair=10s estimated-wall=21m0s", 127},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(tc.args...)
			require.Equal(t, 0, code, errOut)
			assert.Empty(t, errOut)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			assert.Equal(t, tc.want, lines[0])
			assert.Len(t, lines, tc.lines)
		})
	}
}

func TestPlanListsRounds(t *testing.T) {
	code, out, errOut := runCmd("-plan", "-nodes", "4")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, `schedule=all nodes=4 rounds=6 directed-pairs=12 per-pair=10s estimated-wall=1m0s
round 1/6: node000->node003 node001->node002
round 2/6: node003->node000 node002->node001
round 3/6: node001->node003 node002->node000
round 4/6: node003->node001 node000->node002
round 5/6: node002->node003 node000->node001
round 6/6: node003->node002 node001->node000
`, out)
}

func TestNodeNamesWiden(t *testing.T) {
	for _, tc := range []struct {
		n          int
		first, max string
	}{
		{2, "node000", "node001"},
		{1000, "node000", "node999"},
		{1001, "node0000", "node1000"},
		{100000, "node00000", "node99999"},
	} {
		name := nodeNamer(nil, tc.n)
		assert.Equal(t, tc.first, name(0))
		assert.Equal(t, tc.max, name(tc.n-1))
	}
}

func TestNodesFile(t *testing.T) {
	path := writeFile(t, "# rack 1\ngpu-a01\n\n  gpu-a02   # spare\ngpu-b01.example.org\n\n# end\n10.0.0.7\n")
	code, out, errOut := runCmd("-plan", "-nodes-file", path, "-schedule", "ring")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, `schedule=ring/k=1 nodes=4 rounds=2 directed-pairs=4 per-pair=10s estimated-wall=20s
round 1/2: gpu-a01->gpu-a02 gpu-b01.example.org->10.0.0.7
round 2/2: gpu-a02->gpu-b01.example.org 10.0.0.7->gpu-a01
`, out)
}

func TestBadNodesFiles(t *testing.T) {
	var tooMany strings.Builder
	for i := 0; i <= 100000; i++ {
		fmt.Fprintf(&tooMany, "n%d\n", i)
	}
	for _, tc := range []struct {
		name, content string
		want          []string // substrings of stderr: file line, value, limit
	}{
		{"duplicate", "a\nb\n# c\nB\n", []string{`:4: node "B" is already at `, `nodes.txt:2`}},
		{"space in name", "a\nnode 7\n", []string{`:2: node name "node 7"`, `' '`}},
		{"slash in name", "a/b\nc\n", []string{`:1: node name "a/b"`, `'/'`}},
		{"equals in name", "src=a\nc\n", []string{`"src=a"`, `'='`}},
		{"long name", strings.Repeat("a", 254) + "\nb\n", []string{":1:", "254 characters, want 1 to 253"}},
		{"long line", strings.Repeat("a", 70000) + "\n", []string{":1: line too long"}},
		{"empty", "# nothing\n\n", []string{"no node names"}},
		{"one node", "solo\n", []string{"(1 nodes)", "1 nodes: at least 2"}},
		{"too many", tooMany.String(), []string{":100001: more than 100000 nodes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.content)
			code, out, errOut := runCmd("-plan", "-nodes-file", path, "-schedule", "ring")
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			for _, s := range tc.want {
				assert.Contains(t, errOut, s)
			}
		})
	}
}

func TestMissingNodesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.txt")
	code, out, errOut := runCmd("-plan", "-nodes-file", path)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "absent.txt")
	assert.NotContains(t, errOut, "usage:", "not a usage error")
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // substrings of stderr: the bad value and why
	}{
		{nil, []string{"give a mode: rdmafabric run, report, incast, incast-report, or rdmafabric -plan"}},
		{[]string{"-nodes", "64"}, []string{"give a mode"}},
		{[]string{"-plan"}, []string{"-plan needs -nodes N or -nodes-file FILE"}},
		{[]string{"-plan", "-nodes", "1"}, []string{"-nodes 1", "1 nodes: at least 2"}},
		{[]string{"-plan", "-nodes", "0"}, []string{"-nodes 0", "at least 2"}},
		{[]string{"-plan", "-nodes", "-3"}, []string{"-nodes -3", "at least 2"}},
		{[]string{"-plan", "-nodes", "sixty"}, []string{`invalid value "sixty" for flag -nodes`}},
		{[]string{"-plan", "-nodes", "2049"}, []string{"-nodes 2049", "schedule all: 2049 nodes: at most 2048"}},
		{[]string{"-plan", "-nodes", "100001", "-schedule", "quick"}, []string{"100001 nodes: at most 100000"}},
		{[]string{"-plan", "-nodes", "64", "-schedule", "mesh"}, []string{`-schedule "mesh": must be all, quick or ring`}},
		{[]string{"-plan", "-nodes", "64", "-schedule", "ring", "-k", "64"}, []string{"shift 64: must be within 1..63"}},
		{[]string{"-plan", "-nodes", "64", "-schedule", "ring", "-k", "0"}, []string{"shift 0: must be within 1..63"}},
		{[]string{"-plan", "-nodes", "64", "-k", "2"}, []string{"-k 2: only -schedule ring has a shift (not all)"}},
		{[]string{"-plan", "-nodes", "64", "-per-pair", "0s"}, []string{"-per-pair 0s: must be positive"}},
		{[]string{"-plan", "-nodes", "64", "-per-pair", "-1m"}, []string{"-per-pair -1m0s: must be positive"}},
		{[]string{"-plan", "-nodes", "64", "-per-pair", "ten"}, []string{`invalid value "ten" for flag -per-pair`}},
		{[]string{"-plan", "-nodes", "64", "-per-pair", "1000000h"}, []string{"-per-pair 1000000h0m0s", "126 rounds", "beyond"}},
		{[]string{"-plan", "-nodes", "64", "-nodes-file", "hosts"}, []string{`-nodes 64 and -nodes-file "hosts": give one of them`}},
		{[]string{"-plan", "-nodes-file", ""}, []string{`-nodes-file "": name a file`}},
		{[]string{"-plan", "-nodes", "64", "extra"}, []string{`unexpected arguments ["extra"]`}},
		{[]string{"-plan", "-bogus"}, []string{"flag provided but not defined: -bogus"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(tc.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			for _, s := range tc.want {
				assert.Contains(t, errOut, s)
			}
			assert.Contains(t, errOut, "usage: rdmafabric -plan")
		})
	}
}

func TestHelp(t *testing.T) {
	code, out, errOut := runCmd("-h")
	assert.Equal(t, 0, code)
	assert.Empty(t, errOut)
	assert.Contains(t, out, "usage: rdmafabric -plan")
	assert.Contains(t, out, "-schedule")
}
