package main

import (
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
)

// familyName parses the name of a family that ReadResults made: it kept only
// names that parse (see cutPart), so the error is always nil.
func familyName(fam string) benchname.Name {
	n, _ := benchname.Parse(fam)
	return n
}

// spectrumName is the benchmark name an .hlog file is named after, or
// the file name as the family when it is none.
func spectrumName(file string) benchname.Name {
	n, err := benchname.ParseHlogFile(file)
	if err != nil {
		return benchname.Name{Base: file}
	}
	return n
}

// shown are the parts of n that charts show: its key=value parts and
// its -GOMAXPROCS suffix as the part procs=N.
func shown(n benchname.Name) []benchname.Part {
	if n.Procs == 0 {
		return n.Parts
	}
	return append(n.Parts[:len(n.Parts):len(n.Parts)], benchname.Part{Key: "procs", Value: strconv.Itoa(n.Procs)})
}

// partLabel formats a part for people: sizes as "64 B" / "4 KiB",
// procs as "GOMAXPROCS=2", the rest as key=value.
func partLabel(p benchname.Part) string {
	switch p.Key {
	case "size":
		if v, err := strconv.ParseFloat(p.Value, 64); err == nil {
			return byteLabel(v)
		}
	case "procs":
		return "GOMAXPROCS=" + p.Value
	}
	return p.String()
}

// label formats the shown parts of n whose keys are in keys (all parts
// when keys is nil), in the name's order, separated by spaces.
func label(n benchname.Name, keys map[string]bool) string {
	var out []string
	for _, p := range shown(n) {
		if keys == nil || keys[p.Key] {
			out = append(out, partLabel(p))
		}
	}
	return strings.Join(out, " ")
}

// varying splits the keys of names into those whose value differs
// between the names (or that some names lack) and those common to all,
// so that legends show only what tells the lines apart.
func varying(names []benchname.Name) (vary, common map[string]bool) {
	vals := map[string]map[string]bool{}
	count := map[string]int{}
	for _, n := range names {
		for _, p := range shown(n) {
			if vals[p.Key] == nil {
				vals[p.Key] = map[string]bool{}
			}
			vals[p.Key][p.Value] = true
			count[p.Key]++
		}
	}
	vary, common = map[string]bool{}, map[string]bool{}
	for k, vs := range vals {
		if len(vs) > 1 || count[k] != len(names) {
			vary[k] = true
		} else {
			common[k] = true
		}
	}
	return vary, common
}
