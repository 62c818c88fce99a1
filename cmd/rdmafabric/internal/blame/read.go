package blame

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/rdmabench/rdmabench/internal/results"
	"github.com/rdmabench/rdmabench/rdmatest/benchname"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// MaxNodes is the most nodes a stream may name.
const MaxNodes = 100000

// fabricBase is the benchmark base a fabric row's scenario leaves out.
const fabricBase = "Fabric"

// keyPrefix starts every node fact and counter key.
const keyPrefix = "fabric.node."

// counterPart separates a node name from a counter name in a key.
const counterPart = ".counter."

// defaultUnits are the units blamed by default: Read requires their
// direction.
var defaultUnits = []string{unitMBps, unitMsgs, unitP50}

const (
	unitMBps = "MB/s"
	unitMsgs = "msgs/s"
	unitP50  = "p50-ns"
)

// Link is a directed link: Src runs the requester, Dst the passive side.
type Link struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

// String formats l as "src -> dst".
func (l Link) String() string { return l.Src + " -> " + l.Dst }

// Fabric is a parsed fabric result stream. Read fills it; treat it as
// read-only.
type Fabric struct {
	// Nodes lists every node, sorted: those of the rows, as written, and
	// those named only by facts, in lower case.
	Nodes []string
	// Links lists the directed links with at least one row, sorted.
	Links []Link
	// Scenarios lists the scenarios in order of first appearance.
	Scenarios []string
	// Runs maps scenario → unit → link → its values, one per run.
	Runs map[string]map[string]map[Link][]float64
	// Iters maps scenario → link → its runs' iteration counts.
	Iters map[string]map[Link][]int
	// Errors maps scenario → link → its runs' error counts: the sum of
	// the row's counter units ("<counter>/run", see counterUnit), 0 for
	// a row with none; in step with Iters.
	Errors map[string]map[Link][]float64
	// Better maps a unit to +1 (higher is better) or −1 (lower is
	// better); a unit with no known direction is absent.
	Better map[string]int
	// Facts maps node → fact → value.
	Facts map[string]map[string]string
	// Counters maps node → counter → its delta over the run.
	Counters map[string]map[string]float64
}

// ReadFile reads the fabric result stream in file; see Read.
func ReadFile(file string) (*Fabric, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read fabric results: %w", err)
	}
	defer fh.Close()
	return read(fh, file)
}

// Read parses a fabric result stream (see the package documentation).
// It fails on a syntax error, a row without src= or dst= or whose src
// is its dst, a bad node name, two names differing only in case, more
// than MaxNodes nodes, a bad counter or link-rate-mbps value, MB/s,
// msgs/s or p50-ns with no known direction, and a stream without rows.
func Read(r io.Reader) (*Fabric, error) { return read(r, "fabric stream") }

// builder accumulates a Fabric while reading.
type builder struct {
	f     *Fabric
	lower map[string]string // lower-case name → name as written
	links map[Link]bool
}

func read(r io.Reader, name string) (*Fabric, error) {
	b := &builder{
		f: &Fabric{
			Runs:     make(map[string]map[string]map[Link][]float64),
			Iters:    make(map[string]map[Link][]int),
			Errors:   make(map[string]map[Link][]float64),
			Better:   make(map[string]int),
			Facts:    make(map[string]map[string]string),
			Counters: make(map[string]map[string]float64),
		},
		lower: make(map[string]string),
		links: make(map[Link]bool),
	}
	rd := results.NewReader(r, name)
	rd.Strict()
	for rd.Scan() {
		rec := rd.Result()
		if err := b.addRow(rec); err != nil {
			file, line := rec.Pos()
			return nil, fmt.Errorf("read fabric results: %s:%d: %w", file, line, err)
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("read fabric results: %w", err)
	}
	if len(b.links) == 0 {
		return nil, fmt.Errorf("read fabric results %s: no Benchmark row", name)
	}
	if err := b.finish(rd.FinalConfig(), rd.Units()); err != nil {
		return nil, fmt.Errorf("read fabric results %s: %w", name, err)
	}
	return b.f, nil
}

// addRow files one row's values under its scenario and link.
func (b *builder) addRow(rec *results.Result) error {
	l, scenario, err := splitRow(rec.Name)
	if err != nil {
		return err
	}
	for _, n := range []string{l.Src, l.Dst} {
		if err := b.addNode(n); err != nil {
			return err
		}
	}
	b.links[l] = true
	units := b.f.Runs[scenario]
	if units == nil {
		units = make(map[string]map[Link][]float64)
		b.f.Runs[scenario] = units
		b.f.Scenarios = append(b.f.Scenarios, scenario)
	}
	if b.f.Iters[scenario] == nil {
		b.f.Iters[scenario] = make(map[Link][]int)
		b.f.Errors[scenario] = make(map[Link][]float64)
	}
	errs := 0.0
	for _, v := range rec.Values {
		if counterUnit(v.Unit) {
			errs += max(v.Value, 0)
		}
	}
	b.f.Iters[scenario][l] = append(b.f.Iters[scenario][l], rec.Iters)
	b.f.Errors[scenario][l] = append(b.f.Errors[scenario][l], errs)
	for _, v := range rec.Values {
		if units[v.Unit] == nil {
			units[v.Unit] = make(map[Link][]float64)
		}
		units[v.Unit][l] = append(units[v.Unit][l], v.Value)
	}
	return nil
}

// splitRow splits a row's name into its link and its scenario.
func splitRow(full string) (Link, string, error) {
	n, err := benchname.Parse(full)
	if err != nil {
		return Link{}, "", err
	}
	var l Link
	var rest []string
	for _, p := range n.Parts {
		switch p.Key {
		case "src", "dst":
			dup := (p.Key == "src" && l.Src != "") || (p.Key == "dst" && l.Dst != "")
			if dup {
				return Link{}, "", fmt.Errorf("row %s: two %s= parts", full, p.Key)
			}
			if p.Key == "src" {
				l.Src = p.Value
			} else {
				l.Dst = p.Value
			}
		default:
			rest = append(rest, p.String())
		}
	}
	switch {
	case l.Src == "":
		return Link{}, "", fmt.Errorf("row %s: no src= part: a fabric row names its link, src=NODE/dst=NODE", full)
	case l.Dst == "":
		return Link{}, "", fmt.Errorf("row %s: no dst= part: a fabric row names its link, src=NODE/dst=NODE", full)
	case strings.EqualFold(l.Src, l.Dst):
		return Link{}, "", fmt.Errorf("row %s: src and dst are the same node %q", full, l.Src)
	}
	if n.Base != fabricBase || len(rest) == 0 {
		rest = append([]string{n.Base}, rest...)
	}
	return l, strings.Join(rest, "/"), nil
}

// addNode records a node name seen in a row.
func (b *builder) addNode(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	key := strings.ToLower(name)
	if have, ok := b.lower[key]; ok {
		if have != name {
			return fmt.Errorf("node names %q and %q differ only in case", have, name)
		}
		return nil
	}
	if len(b.lower) == MaxNodes {
		return fmt.Errorf("node %q: more than %d nodes", name, MaxNodes)
	}
	b.lower[key] = name
	b.f.Nodes = append(b.f.Nodes, name)
	return nil
}

// checkName tells why name cannot name a node (oob.CheckNodeName).
func checkName(name string) error { return oob.CheckNodeName(name) }

// finish files the facts and counters of the stream's configuration,
// checks the directions and sorts.
func (b *builder) finish(config map[string]string, units benchfmt.UnitMetadataMap) error {
	for _, key := range slices.Sorted(maps.Keys(config)) {
		if !strings.HasPrefix(key, keyPrefix) {
			continue
		}
		if err := b.addKey(key, config[key]); err != nil {
			return err
		}
	}
	for _, byUnit := range b.f.Runs {
		for unit := range byUnit {
			if d := units.GetBetter(unit); d != 0 {
				b.f.Better[unit] = d
			} else if slices.Contains(defaultUnits, unit) {
				return fmt.Errorf("unit %s has no direction: the stream needs a line `Unit %s better=higher` (or lower)", unit, unit)
			}
		}
	}
	slices.Sort(b.f.Nodes)
	for l := range b.links {
		b.f.Links = append(b.f.Links, l)
	}
	slices.SortFunc(b.f.Links, compareLinks)
	return nil
}

// compareLinks orders links by source, then destination.
func compareLinks(a, b Link) int {
	if c := strings.Compare(a.Src, b.Src); c != 0 {
		return c
	}
	return strings.Compare(a.Dst, b.Dst)
}

// addKey files one fabric.node.<name>.… configuration key.
func (b *builder) addKey(key, value string) error {
	node, fact, counter, err := b.splitKey(key)
	if err != nil {
		return err
	}
	if counter != "" {
		d, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(d) || math.IsInf(d, 0) {
			return fmt.Errorf("%s: counter delta %q is not a number", key, value)
		}
		mapFor(b.f.Counters, node)[counter] = d
		return nil
	}
	if fact == factRate {
		if r, err := strconv.ParseFloat(value, 64); err != nil || !(r > 0) || math.IsInf(r, 0) {
			return fmt.Errorf("%s: %q is not a positive number of MB/s", key, value)
		}
	}
	mapFor(b.f.Facts, node)[fact] = value
	return nil
}

// splitKey finds the node of a key, the longest node name of the rows
// that fits, or else the name up to the counter part or the last dot,
// and the fact or counter it names.
func (b *builder) splitKey(key string) (node, fact, counter string, err error) {
	rest := key[len(keyPrefix):]
	name := ""
	for i := len(rest) - 1; i > 0 && name == ""; i-- {
		if rest[i] != '.' {
			continue
		}
		if _, ok := b.lower[rest[:i]]; ok {
			name = rest[:i]
		}
	}
	if name == "" {
		if i := strings.Index(rest, counterPart); i > 0 {
			name = rest[:i]
		} else if i := strings.LastIndexByte(rest, '.'); i > 0 {
			name = rest[:i]
		}
	}
	item := strings.TrimPrefix(rest, name+".")
	if name == "" || item == "" || item == rest {
		return "", "", "", fmt.Errorf("configuration key %s: want %s<node>.<fact> or %s<node>%s<counter>", key, keyPrefix, keyPrefix, counterPart)
	}
	node, err = b.factNode(name, key)
	if err != nil {
		return "", "", "", err
	}
	if c, ok := strings.CutPrefix(item, counterPart[1:]); ok {
		return node, "", c, nil
	}
	return node, item, "", nil
}

// factNode returns the node a key's lower-case name stands for, adding
// a node known only by its facts.
func (b *builder) factNode(name, key string) (string, error) {
	if n, ok := b.lower[name]; ok {
		return n, nil
	}
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("configuration key %s: %w", key, err)
	}
	if len(b.lower) == MaxNodes {
		return "", fmt.Errorf("configuration key %s: more than %d nodes", key, MaxNodes)
	}
	b.lower[name] = name
	b.f.Nodes = append(b.f.Nodes, name)
	return name, nil
}

// mapFor returns m[k], making it when missing.
func mapFor[V any](m map[string]map[string]V, k string) map[string]V {
	if m[k] == nil {
		m[k] = make(map[string]V)
	}
	return m[k]
}

// Units lists the units of a scenario, sorted.
func (f *Fabric) Units(scenario string) []string {
	return slices.Sorted(maps.Keys(f.Runs[scenario]))
}

// Median is the median over its runs of a link's values of a unit in a
// scenario, and false when the link has none.
func (f *Fabric) Median(scenario, unit string, l Link) (float64, bool) {
	runs := f.Runs[scenario][unit][l]
	if len(runs) == 0 {
		return 0, false
	}
	return median(runs), true
}
