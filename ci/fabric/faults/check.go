package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// report is the part of rdmafabric's JSON report (go doc
// ./cmd/rdmafabric/internal/blame Report) that Check reads.
type report struct {
	Nodes   []nodeVerdict `json:"bad_nodes"`
	Links   []linkVerdict `json:"bad_links"`
	Metrics []struct {
		Unit         string  `json:"unit"`
		FabricMedian float64 `json:"fabric_median"`
	} `json:"metrics"`
}

type nodeVerdict struct {
	Node     string    `json:"node"`
	Findings []finding `json:"findings"`
}

type finding struct {
	Code      string `json:"code"`
	Direction string `json:"direction"`
}

type linkVerdict struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

func readReport(r io.Reader) (report, error) {
	var rep report
	dec := json.NewDecoder(r)
	if err := dec.Decode(&rep); err != nil {
		return rep, fmt.Errorf("read the fabric report: %w", err)
	}
	return rep, nil
}

// refMBps is the fabric median MB/s of the report in file: its first
// MB/s metric's.
func refMBps(file string) (float64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rep, err := readReport(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	for _, m := range rep.Metrics {
		if m.Unit == "MB/s" && m.FabricMedian > 0 {
			return m.FabricMedian, nil
		}
	}
	return 0, fmt.Errorf("%s: no MB/s metric with a positive fabric median (run a bandwidth scenario, such as WriteBW/size=65536)", file)
}

// Check compares what a report names with the faults in s (none for a
// healthy pass) and returns what is wrong, nothing when it is right:
//
//   - the bad node is named, and nothing else as a node; when its fault
//     is one-way, a finding gives that direction (egress: sending,
//     ingress: receiving);
//   - the bad link is named in one direction or both, and no other link;
//     when its fault is one-way (A to B), A -> B is among them;
//   - with no faults, nothing is named.
//
// A one-way fault may show in the other direction too: a delay on what
// A sends B also delays the acknowledgements of B's stream to A and the
// answers of B's ping-pong, so only the faulted direction is required.
func Check(rep report, s Spec) []string {
	var wrong []string
	node, link := s.Node(), s.Link()
	for _, v := range rep.Nodes {
		if node == nil || v.Node != node.A {
			wrong = append(wrong, "named node "+v.Node+", which has no fault")
			continue
		}
		want := map[Dir]string{Egress: "sending", Ingress: "receiving"}[node.Dir]
		if want != "" && !slices.ContainsFunc(v.Findings, func(f finding) bool {
			return f.Direction == want
		}) {
			wrong = append(wrong, fmt.Sprintf("named node %s, but not its %s side (its fault: %s)", v.Node, want, node))
		}
	}
	if node != nil && !slices.ContainsFunc(rep.Nodes, func(v nodeVerdict) bool {
		return v.Node == node.A
	}) {
		wrong = append(wrong, "did not name node "+node.A+" ("+node.String()+")")
	}
	var fwd, any bool
	for _, l := range rep.Links {
		name := l.Src + " -> " + l.Dst
		switch {
		case link != nil && l.Src == link.A && l.Dst == link.B:
			fwd, any = true, true
		case link != nil && l.Src == link.B && l.Dst == link.A:
			any = true
		default:
			wrong = append(wrong, "named link "+name+", which has no fault")
		}
	}
	switch {
	case link != nil && !any:
		wrong = append(wrong, fmt.Sprintf("did not name the link %s-%s (%s)", link.A, link.B, link))
	case link != nil && link.Dir == OneWay && !fwd:
		wrong = append(wrong, fmt.Sprintf("named the link %s-%s only from %s, not in its faulted direction %s -> %s", link.A, link.B, link.B, link.A, link.B))
	}
	return wrong
}

// expectation says in words what Check wants.
func expectation(s Spec) string {
	if len(s) == 0 {
		return "nothing named"
	}
	var parts []string
	if n := s.Node(); n != nil {
		p := "node " + n.A
		switch n.Dir {
		case Egress:
			p += " (sending)"
		case Ingress:
			p += " (receiving)"
		}
		parts = append(parts, p)
	}
	if l := s.Link(); l != nil {
		if l.Dir == OneWay {
			parts = append(parts, "link "+l.A+" -> "+l.B+" (the reverse may be named too)")
		} else {
			parts = append(parts, "link "+l.A+" -> "+l.B+" and/or "+l.B+" -> "+l.A)
		}
	}
	return strings.Join(parts, ", ") + ", nothing else"
}
