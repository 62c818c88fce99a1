// Package benchname owns the grammar of rdmabench's benchmark names: it
// parses, builds and formats them, and names their .hlog files.
//
// A name is a family base, the benchmark function's name without
// "Benchmark", then the sub-benchmark's key=value parts in order, then
// the -GOMAXPROCS suffix that go test appends when it prints a result:
//
//	[Benchmark]WriteBW/transport=RC/size=64/qd=128-2
//
// Bases and keys hold no '/' or '='; values hold no '/'. A trailing
// "-N" of decimal digits is always the suffix, so a name printed with
// GOMAXPROCS=1 (no suffix) whose last value ends in "-N" would be
// misread: With refuses to build such a value.
package benchname

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Prefix is what go test puts before a family base when it prints a
// name, and what a benchmark function's name starts with.
const Prefix = "Benchmark"

// Part is one key=value element of a name ("transport=RC").
type Part struct {
	Key, Value string
}

// String formats the part as key=value.
func (p Part) String() string { return p.Key + "=" + p.Value }

// Name is a benchmark name split into its grammar's elements. The zero
// Name is an empty builder: With adds parts, Sub formats them.
type Name struct {
	// Base is the family: the benchmark function's name without
	// Prefix, e.g. "WriteBW".
	Base string
	// Parts are the sub-benchmark's key=value elements in order.
	Parts []Part
	// Procs is the -GOMAXPROCS suffix's number, 0 when there is none.
	Procs int
}

// Parse splits s, with or without Prefix, into a Name. It fails on an
// empty base, a base with '=' or that starts with Prefix (after the one
// Parse removes: it would not survive String), a part without '=' or
// with an empty key, and a suffix "-N" whose N is not a GOMAXPROCS (0, a
// leading zero, too large).
func Parse(s string) (Name, error) {
	rest := strings.TrimPrefix(s, Prefix)
	var n Name
	if m := procsSuffix.FindStringSubmatchIndex(rest); m != nil {
		digits := rest[m[2]:m[3]]
		p, err := strconv.Atoi(digits)
		if err != nil || p < 1 || digits[0] == '0' {
			return Name{}, fmt.Errorf("benchmark name %q: bad -GOMAXPROCS suffix %q", s, rest[m[0]:])
		}
		rest, n.Procs = rest[:m[0]], p
	}
	elems := strings.Split(rest, "/")
	n.Base = elems[0]
	if n.Base == "" {
		return Name{}, fmt.Errorf("benchmark name %q: empty family name", s)
	}
	if strings.Contains(n.Base, "=") {
		return Name{}, fmt.Errorf("benchmark name %q: family name %q holds '='", s, n.Base)
	}
	if strings.HasPrefix(n.Base, Prefix) {
		return Name{}, fmt.Errorf("benchmark name %q: family name %q starts with %q: with or without the prefix?", s, n.Base, Prefix)
	}
	for _, e := range elems[1:] {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return Name{}, fmt.Errorf("benchmark name %q: part %q is not key=value", s, e)
		}
		n.Parts = append(n.Parts, Part{k, v})
	}
	return n, nil
}

// String formats n as go test prints it, without Prefix:
// "WriteBW/transport=RC/size=64-2". Parse(n.String()) gives n back for
// every Name that Parse returns.
func (n Name) String() string {
	var b strings.Builder
	b.WriteString(n.Base)
	if len(n.Parts) > 0 {
		b.WriteByte('/')
		b.WriteString(n.Sub())
	}
	if n.Procs > 0 {
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(n.Procs))
	}
	return b.String()
}

// Sub formats the parts alone, "transport=RC/size=64": the name a
// family passes to b.Run for the sub-benchmark.
func (n Name) Sub() string {
	s := make([]string, len(n.Parts))
	for i, p := range n.Parts {
		s[i] = p.String()
	}
	return strings.Join(s, "/")
}

// Levels are the elements a -test.bench pattern is matched against, one
// per '/'-separated level: the function name ("BenchmarkWriteBW"), then
// each part ("transport=RC"). The -GOMAXPROCS suffix is not one.
func (n Name) Levels() []string {
	out := []string{Prefix + n.Base}
	for _, p := range n.Parts {
		out = append(out, p.String())
	}
	return out
}

// Keys lists the keys of the parts in order: the axes of the family
// variant the name belongs to.
func (n Name) Keys() []string {
	out := make([]string, len(n.Parts))
	for i, p := range n.Parts {
		out[i] = p.Key
	}
	return out
}

// Get returns the value of the first part named key and whether n has
// one.
func (n Name) Get(key string) (string, bool) {
	for _, p := range n.Parts {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

// With returns a copy of n (n itself is not changed, so one prefix can
// grow into many names) in which the first part named key has value, or
// with key=value appended when n has no such part. It panics on a key
// or value the grammar cannot carry (an empty key, a key with '/' or
// '=', a value with '/', white space, or ending in "-N"): names are
// built from the matrix's declarations, and such a name would not parse
// back.
func (n Name) With(key, value string) Name {
	if err := checkPart(key, value); err != nil {
		panic(err)
	}
	out := n
	out.Parts = make([]Part, len(n.Parts), len(n.Parts)+1)
	copy(out.Parts, n.Parts)
	for i := range out.Parts {
		if out.Parts[i].Key == key {
			out.Parts[i].Value = value
			return out
		}
	}
	out.Parts = append(out.Parts, Part{key, value})
	return out
}

// checkPart tells why key=value cannot be a part of a name that parses
// back to it, or returns nil.
func checkPart(key, value string) error {
	switch {
	case key == "" || strings.ContainsAny(key, "/="):
		return fmt.Errorf("benchname: bad key %q: empty or holds '/' or '='", key)
	case strings.Contains(value, "/"):
		return fmt.Errorf("benchname: %s=%s: a value holds no '/'", key, value)
	case strings.ContainsFunc(key+value, rewritten):
		return fmt.Errorf("benchname: %q=%q: go test would print white space as '_' and escape what is not printable", key, value)
	}
	if procsSuffix.MatchString(value) {
		return fmt.Errorf("benchname: %s=%s: a value ending in -N reads as a -GOMAXPROCS suffix", key, value)
	}
	return nil
}

// procsSuffix is the -GOMAXPROCS suffix: a '-' and decimal digits at
// the end.
var procsSuffix = regexp.MustCompile(`-([0-9]+)$`)

// unsafeRun is a run of characters that do not go into an .hlog file's
// name.
var unsafeRun = regexp.MustCompile(`[^A-Za-z0-9_.=+-]+`)

// hlogExt is the extension of HdrHistogram interval logs.
const hlogExt = ".hlog"

// HlogFile is the file name (no directory) of the .hlog file of the
// benchmark whose b.Name() is name ("BenchmarkWriteLat/transport=RC/size=8",
// no -GOMAXPROCS suffix): every run of characters other than ASCII
// letters, digits and "_.=+-" becomes one '_', and ".hlog" is appended
// ("BenchmarkWriteLat_transport=RC_size=8.hlog"). Any string has a file
// name, a name outside the grammar too.
func HlogFile(name string) string {
	return unsafeRun.ReplaceAllString(name, "_") + hlogExt
}

// ParseHlogFile reads back the name an .hlog file was named after (file
// without directory, with or without ".hlog"). HlogFile is not one to
// one, so this is a best effort: bases and keys hold no '_', so after
// the base an element that has no '=' continues the value before it
// ("gap=10_s" stays "10_s"; the 'µ' that became '_' is lost), and the
// file has no -GOMAXPROCS suffix (Procs is 0).
func ParseHlogFile(file string) (Name, error) {
	file = strings.TrimSuffix(file, hlogExt)
	elems := strings.Split(strings.TrimPrefix(file, Prefix), "_")
	n := Name{Base: elems[0]}
	for _, e := range elems[1:] {
		k, v, ok := strings.Cut(e, "=")
		switch {
		case ok:
			n.Parts = append(n.Parts, Part{k, v})
		case len(n.Parts) > 0:
			n.Parts[len(n.Parts)-1].Value += "_" + e
		default:
			n.Base += "_" + e
		}
	}
	if n.Base == "" {
		return Name{}, fmt.Errorf(".hlog file %q: empty family name", file)
	}
	return n, nil
}

// rewritten tells the runes that go test changes in a sub-benchmark's
// name: white space and what is not printable.
func rewritten(r rune) bool { return unicode.IsSpace(r) || !strconv.IsPrint(r) }
