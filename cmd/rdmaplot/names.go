package main

import (
	"strconv"
	"strings"
)

// part is one key=value element of a benchmark name ("transport=RC");
// the -GOMAXPROCS suffix is the part procs=N.
type part struct{ key, val string }

// benchName is a benchmark name split into its family base ("WriteBW")
// and its parts in order.
type benchName struct {
	base  string
	parts []part
}

// parseName splits "WriteBW/transport=RC/size=64-2" (with or without
// the "Benchmark" prefix) into base WriteBW and parts transport=RC,
// size=64, procs=2. A part without '=' keeps its text as the value of
// an empty key.
func parseName(full string) benchName {
	full = strings.TrimPrefix(full, "Benchmark")
	var procs string
	if i := strings.LastIndexByte(full, '-'); i >= 0 && isDigits(full[i+1:]) {
		full, procs = full[:i], full[i+1:]
	}
	elems := strings.Split(full, "/")
	n := benchName{base: elems[0]}
	for _, e := range elems[1:] {
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			k, v = "", e
		}
		n.parts = append(n.parts, part{k, v})
	}
	if procs != "" {
		n.parts = append(n.parts, part{"procs", procs})
	}
	return n
}

// parseHlogName reads the name of an .hlog file written by rdmatest:
// the benchmark name with '/' replaced by '_' and no -GOMAXPROCS suffix
// ("BenchmarkWriteBW_transport=RC_size=64"). Base names, keys and values
// hold no '_', so an element without '=' after the first belongs to the
// previous one.
func parseHlogName(file string) benchName {
	elems := strings.Split(strings.TrimPrefix(file, "Benchmark"), "_")
	n := benchName{base: elems[0]}
	for _, e := range elems[1:] {
		k, v, ok := strings.Cut(e, "=")
		switch {
		case ok:
			n.parts = append(n.parts, part{k, v})
		case len(n.parts) > 0:
			n.parts[len(n.parts)-1].val += "_" + e
		default:
			n.base += "_" + e
		}
	}
	return n
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// String formats the part for people: sizes as "64 B" / "4 KiB",
// procs as "GOMAXPROCS=2", the rest as key=value.
func (p part) String() string {
	switch p.key {
	case "":
		return p.val
	case "size":
		if v, err := strconv.ParseFloat(p.val, 64); err == nil {
			return byteLabel(v)
		}
	case "procs":
		return "GOMAXPROCS=" + p.val
	}
	return p.key + "=" + p.val
}

// get returns the value of key and whether the name has it.
func (n benchName) get(key string) (string, bool) {
	for _, p := range n.parts {
		if p.key == key {
			return p.val, true
		}
	}
	return "", false
}

// label formats the parts whose keys are in keys (all parts when keys
// is nil), in the name's order, separated by spaces.
func (n benchName) label(keys map[string]bool) string {
	var out []string
	for _, p := range n.parts {
		if keys == nil || keys[p.key] {
			out = append(out, p.String())
		}
	}
	return strings.Join(out, " ")
}

// varying splits the keys of names into those whose value differs
// between the names (or that some names lack) and those common to all,
// so that legends show only what tells the lines apart.
func varying(names []benchName) (vary, common map[string]bool) {
	vals := map[string]map[string]bool{}
	count := map[string]int{}
	for _, n := range names {
		for _, p := range n.parts {
			if vals[p.key] == nil {
				vals[p.key] = map[string]bool{}
			}
			vals[p.key][p.val] = true
			count[p.key]++
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
