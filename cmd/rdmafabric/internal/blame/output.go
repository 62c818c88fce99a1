package blame

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxReason is the longest drain reason, evidence cut to fit.
const maxReason = 160

// textWriter prints lines and keeps the first error.
type textWriter struct {
	w   io.Writer
	err error
}

func (t *textWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// WriteText writes the report for a person at a terminal: the verdicts
// first, each with its numbers and evidence, then the healthy count and
// the rules applied.
func (r Report) WriteText(w io.Writer) error {
	t := &textWriter{w: w}
	kind := "BAD"
	if r.Suspects {
		kind = "SUSPECT"
		t.printf("suspects, not verdicts: retest them against healthy nodes before naming them\n")
	}
	for _, v := range r.Nodes {
		t.printf("%s NODE %s (%s)\n", kind, v.Node, v.Code)
		writeFindings(t, v.Findings, v.Evidence, false)
	}
	for _, v := range r.Links {
		t.printf("%s LINK %s (%s)\n", kind, v.Link(), v.Code)
		writeFindings(t, v.Findings, v.Evidence, true)
	}
	if len(r.Unconfirmed) > 0 {
		t.printf("not confirmed on retest: %s\n", strings.Join(r.Unconfirmed, ", "))
	}
	for _, e := range r.Mismatches {
		t.printf("CONFIG %s: %s\n", e.Node, e.Short())
	}
	t.printf("healthy: %d nodes, %d links\n", r.Healthy.Nodes, r.Healthy.Links)
	t.printf("judged %d nodes, %d links on %s: K=%g MADs, min drop %g%%, floor %s\n",
		r.Total.Nodes, r.Total.Links, plural(len(r.Metrics), "metric"), r.Options.K, 100*r.Options.MinDrop, floorText(r.Options.Floor))
	var bounds []string
	for _, m := range r.Metrics {
		if m.Baseline != 0 {
			bounds = append(bounds, fmt.Sprintf("%s %s %.4g", m.Scenario, m.Unit, m.Baseline))
		}
	}
	if len(bounds) > 0 {
		t.printf("baseline: named only worse than its worst link: %s\n", strings.Join(bounds, ", "))
	}
	if t.err != nil {
		return fmt.Errorf("write blame report: %w", t.err)
	}
	return nil
}

// plural formats a count of things: "1 metric", "2 metrics".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// floorText describes the floor rule.
func floorText(floor float64) string {
	if floor < 0 {
		return "off"
	}
	return fmt.Sprintf("%.2f of link rate", floor)
}

// writeFindings writes a verdict's findings, one a line, then its
// evidence on one line.
func writeFindings(t *textWriter, fds []Finding, ev []Evidence, withNode bool) {
	for _, fd := range fds {
		pass := ""
		if fd.Pass == 2 {
			pass = "retest "
		}
		t.printf("  %s%s\n", pass, fd.Text())
	}
	if len(ev) == 0 {
		return
	}
	items := make([]string, len(ev))
	for i, e := range ev {
		items[i] = e.Short()
		if withNode {
			items[i] = e.Node + ": " + items[i]
		}
	}
	t.printf("  evidence: %s\n", strings.Join(items, "; "))
}

// Text formats a finding on one line.
func (fd Finding) Text() string {
	switch fd.Code {
	case CodeNoResults:
		return fd.Code + ": facts but no result row"
	case CodeBelowFloor:
		return fmt.Sprintf("%s %s %s: %.2f of link rate %s %s (bad below %.2f), median %s %s against fabric median %s %s (%d links)",
			fd.Code, fd.Scenario, fd.Unit, fd.Score, num(fd.LinkRate), fd.Unit, fd.Threshold,
			num(fd.Median), fd.Unit, num(fd.FabricMedian), fd.Unit, fd.Links)
	}
	code := fd.Code
	if fd.Direction != "" {
		code += " " + fd.Direction
	}
	if fd.Code == CodeErrorRate {
		return fmt.Sprintf("%s %s: %s %s, %.1f× the typical %s (bad above %.1f×; %s)",
			code, fd.Scenario, num(fd.Median), fd.Unit, fd.Score, num(fd.FabricMedian), fd.Threshold, plural(fd.Links, "link"))
	}
	s := fmt.Sprintf("%s %s %s: score %.2f (bad below %.2f), median %s %s against fabric median %s %s",
		code, fd.Scenario, fd.Unit, fd.Score, fd.Threshold, num(fd.Median), fd.Unit, num(fd.FabricMedian), fd.Unit)
	if fd.Code != CodeSlowLink {
		s += fmt.Sprintf(" (%d links)", fd.Links)
	}
	return s
}

// num formats a measured value: whole above 100, 3 digits below.
func num(v float64) string {
	if v >= 100 || v <= -100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// WriteJSON writes the report as indented JSON; the field names and the
// codes are stable.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write blame report JSON: %w", err)
	}
	return nil
}

// DrainLines returns, never runs, the commands that take the bad nodes
// out of service: with slurm, `scontrol update NodeName=X State=DRAIN
// Reason="rdmabench: <code> <evidence>"`; else a comment with the
// evidence and `kubectl taint nodes X rdmabench.io/fabric=<code>:NoSchedule`.
// A bad link gets a comment naming both ends: a link is not a node. For
// a suspects report every command is commented out.
func (r Report) DrainLines(slurm bool) []string {
	var out []string
	prefix := ""
	if r.Suspects {
		out = append(out, "# suspects, not verdicts: retest them before draining (commands commented out)")
		prefix = "# "
	}
	for _, v := range r.Nodes {
		reason := v.reason()
		if slurm {
			out = append(out, fmt.Sprintf(`%sscontrol update NodeName=%s State=DRAIN Reason="rdmabench: %s"`, prefix, v.Node, reason))
			continue
		}
		out = append(out, fmt.Sprintf("# %s: rdmabench: %s", v.Node, reason),
			fmt.Sprintf("%skubectl taint nodes %s rdmabench.io/fabric=%s:NoSchedule", prefix, v.Node, v.Code))
	}
	for _, v := range r.Links {
		out = append(out, fmt.Sprintf("# bad link %s: %s; not drained (a link is not a node): check the cable, transceivers and switch ports between %s and %s",
			v.Link(), reasonText(v.Code, v.Findings, v.Evidence), v.Src, v.Dst))
	}
	return out
}

// reason is a node verdict's drain reason: its code and short evidence.
func (v NodeVerdict) reason() string {
	return reasonText(v.Code, v.Findings, v.Evidence)
}

// reasonText is a code, its first finding's numbers and the first
// pieces of evidence, cut to maxReason characters, holding only
// characters that are safe inside double quotes in a shell.
func reasonText(code string, fds []Finding, ev []Evidence) string {
	parts := []string{code}
	if len(fds) > 0 && fds[0].short() != "" {
		parts = append(parts, fds[0].short())
	}
	for i, e := range ev {
		if i == 2 {
			parts = append(parts, fmt.Sprintf("+%d more", len(ev)-i))
			break
		}
		parts = append(parts, e.Key+"="+e.Value)
	}
	s := safeReason(strings.Join(parts, " "))
	if len(s) > maxReason {
		s = s[:maxReason]
	}
	return strings.TrimSpace(s)
}

// short is a finding's numbers for a drain reason.
func (fd Finding) short() string {
	switch fd.Code {
	case CodeNoResults:
		return ""
	case CodeBelowFloor:
		return fmt.Sprintf("%s %s/%s%s=%.2f", fd.Scenario, num(fd.Median), num(fd.LinkRate), fd.Unit, fd.Score)
	}
	if fd.Direction != "" {
		return fmt.Sprintf("%s %s score=%.2f %s/%s%s", fd.Direction, fd.Scenario, fd.Score, num(fd.Median), num(fd.FabricMedian), fd.Unit)
	}
	return fmt.Sprintf("%s score=%.2f %s/%s%s", fd.Scenario, fd.Score, num(fd.Median), num(fd.FabricMedian), fd.Unit)
}

// safeReason replaces every character a shell could act on inside
// double quotes ($ ` \ " !) and every other unusual one with '_'.
func safeReason(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			return c
		case strings.ContainsRune(" ._:=/+,-()%", c):
			return c
		}
		return '_'
	}, s)
}
