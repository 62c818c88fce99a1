package results

import (
	"fmt"
	"io"
	"iter"
	"maps"
	"math"

	"golang.org/x/perf/benchfmt"
)

// Value is one measurement of a result line, as the file wrote it.
type Value struct {
	// Unit is the unit as written: "ns/op", "MB/s", "p99-ns".
	Unit string
	// Value is the number as written (MB/s in 10^6 bytes/s); never NaN
	// or infinite.
	Value float64
	// Tidy is benchfmt's tidied form of Unit ("sec/op" for ns/op, "B/s"
	// for MB/s), the form benchfmt keys unit metadata by.
	Tidy string
}

// Result is one result line: one run of one benchmark. It shares the
// Reader's buffers: it is valid until the next Scan.
type Result struct {
	// Name is the full benchmark name without "Benchmark", with its
	// sub-benchmark parts and -GOMAXPROCS suffix:
	// "WriteLat/transport=RC/size=8-2".
	Name string
	// Iters is the line's iteration count.
	Iters int
	// Values are the line's values in order, as written, without those
	// that are no number (see Reader.Skipped).
	Values []Value

	rec *benchfmt.Result
}

// Pos returns the file name and line number of the result line.
func (r *Result) Pos() (file string, line int) { return r.rec.Pos() }

// Config returns the value of the configuration key in force at the
// result line, "" when it has none.
func (r *Result) Config(key string) string { return r.rec.GetConfig(key) }

// Configs yields every configuration key in force at the result line
// with its value.
func (r *Result) Configs() iter.Seq2[string, string] {
	return func(yield func(key, value string) bool) {
		for _, c := range r.rec.Config {
			if c.File && !yield(c.Key, string(c.Value)) {
				return
			}
		}
	}
}

// Reader reads a result file result by result, like benchfmt.Reader:
//
//	rd := results.NewReader(f, path)
//	for rd.Scan() {
//		res := rd.Result()
//		...
//	}
//	if err := rd.Err(); err != nil {
//		...
//	}
type Reader struct {
	rd      *benchfmt.Reader
	tap     *configTap
	res     Result
	strict  bool
	skipped []string
	done    bool
	err     error
}

// NewReader returns a Reader of the result file r; file names it in
// positions, errors and Skipped.
func NewReader(r io.Reader, file string) *Reader {
	tap := newConfigTap()
	return &Reader{rd: benchfmt.NewReader(io.TeeReader(r, tap), file), tap: tap}
}

// Strict makes a malformed line end the reading: Scan stops there and
// Err returns the line's *benchfmt.SyntaxError. Without it a malformed
// line is skipped and named in Skipped. Call it before Scan.
func (r *Reader) Strict() { r.strict = true }

// Scan advances to the next result line and reports whether there is
// one (Result). It returns false at the end of the input, on an I/O
// error and, when Strict, on a malformed line: Err tells which.
func (r *Reader) Scan() bool {
	if r.done {
		return false
	}
	for r.rd.Scan() {
		switch rec := r.rd.Result().(type) {
		case *benchfmt.SyntaxError:
			if r.strict {
				r.err, r.done = rec, true
				return false
			}
			r.skipped = append(r.skipped, rec.Error())
		case *benchfmt.Result:
			r.set(rec)
			return true
		}
	}
	r.err, r.done = r.rd.Err(), true
	r.tap.flush() // a last line without a newline
	return false
}

// set makes rec the current Result, its values as written and finite.
func (r *Reader) set(rec *benchfmt.Result) {
	r.res = Result{Name: rec.Name.String(), Iters: rec.Iters, Values: r.res.Values[:0], rec: rec}
	for _, v := range rec.Values {
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" { // benchfmt tidied it (MB/s into B/s): keep the file's
			unit, val = v.OrigUnit, v.OrigValue
		}
		if math.IsNaN(val) || math.IsInf(val, 0) {
			file, line := rec.Pos()
			r.skipped = append(r.skipped, fmt.Sprintf("%s:%d: non-finite value %v %s dropped", file, line, val, unit))
			continue
		}
		r.res.Values = append(r.res.Values, Value{Unit: unit, Value: val, Tidy: v.Unit})
	}
}

// Result returns the result line Scan read last.
func (r *Reader) Result() *Result { return &r.res }

// Err returns the error that ended the reading: nil at the end of the
// input, an I/O error (with the file and line benchfmt reached), or
// when Strict the first malformed line's *benchfmt.SyntaxError.
func (r *Reader) Err() error { return r.err }

// Skipped lists what the reader left out so far, in file order, each as
// "file:line: why": the malformed lines and the values that are no
// number.
func (r *Reader) Skipped() []string { return r.skipped }

// Units returns the unit metadata of the Unit lines read so far; its
// GetBetter gives a unit's direction, from those lines or benchfmt's
// own (ns/op, MB/s, B/op, allocs/op).
func (r *Reader) Units() benchfmt.UnitMetadataMap { return r.rd.Units() }

// FinalConfig returns the configuration as the file leaves it, once
// Scan has returned false: every configuration line, wherever it stands
// (after the last result too), a later one replacing an earlier one of
// its key and an empty value deleting the key. It costs one map however
// many results the configuration applies to.
func (r *Reader) FinalConfig() map[string]string { return maps.Clone(r.tap.keys) }
