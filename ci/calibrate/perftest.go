package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Column is one column of a perftest result table, as its header names
// it: "BW average[MiB/sec]" is Name "BW average", Unit "MiB/sec";
// "#bytes" is Name "#bytes" with no unit.
type Column struct {
	Name, Unit string
}

// String gives the column as perftest prints it.
func (c Column) String() string {
	if c.Unit == "" {
		return c.Name
	}
	return c.Name + "[" + c.Unit + "]"
}

// Table is a perftest result table: its header and the rows under it,
// one per message size, values in the header's order.
type Table struct {
	Columns []Column
	Rows    [][]float64
}

// Report is everything parsed from one perftest program's output.
type Report struct {
	// Tables in order of appearance; most runs print one, -a prints one
	// table with a row per size, and some versions repeat the header.
	Tables []Table
}

// ParsePerftest reads the output of one perftest program (ib_*_lat or
// ib_*_bw, client or server side) and returns its result tables.
//
// A table starts at a header line whose first word is "#bytes"; its
// column names may contain spaces ("BW average[MiB/sec]", "99%
// percentile[usec]", "tps average"), and columns are known only by
// name, so layouts of other versions and modes (duration mode, Gb/s,
// CPU utilisation, old "[MB/sec]" labels) parse the same way. A row is
// a line whose first word is a whole number (the message size) and that
// has exactly one number per column. Banner, warnings and separator
// lines are skipped. It is an error when no table has a row, or when a
// line that starts with a size under a header has the wrong number of
// fields or a field that is not a finite number (perftest prints "-nan"
// or "inf" for a failed clock): such a report is not trusted.
func ParsePerftest(r io.Reader) (*Report, error) {
	rep := &Report{}
	var cur *Table
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for lineNo := 1; sc.Scan(); lineNo++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if fields[0] == "#bytes" {
			rep.Tables = append(rep.Tables, Table{Columns: parseHeader(fields)})
			cur = &rep.Tables[len(rep.Tables)-1]
			continue
		}
		if cur == nil || !isUint(fields[0]) {
			continue
		}
		if len(fields) != len(cur.Columns) {
			return nil, fmt.Errorf("perftest output line %d: %d fields under a header of %d columns (%v): %q",
				lineNo, len(fields), len(cur.Columns), cur.Columns, sc.Text())
		}
		row := make([]float64, len(fields))
		for i, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
				err = errors.New("not a finite number")
			}
			if err != nil {
				return nil, fmt.Errorf("perftest output line %d: column %s: %q: %w", lineNo, cur.Columns[i], f, err)
			}
			row[i] = v
		}
		cur.Rows = append(cur.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read perftest output: %w", err)
	}
	for _, t := range rep.Tables {
		if len(t.Rows) > 0 {
			return rep, nil
		}
	}
	return nil, fmt.Errorf("perftest output has no result row (%d header lines)", len(rep.Tables))
}

// parseHeader splits a header line's words into columns. A word that
// starts with '#' is a column of its own; other words are joined until
// one that ends the column with its "[unit]"; words left at the end
// ("tps average") form the last column.
func parseHeader(words []string) []Column {
	var cols []Column
	var pending []string
	for _, w := range words {
		if strings.HasPrefix(w, "#") && len(pending) == 0 {
			cols = append(cols, Column{Name: w})
			continue
		}
		pending = append(pending, w)
		if open := strings.IndexByte(w, '['); open >= 0 && strings.HasSuffix(w, "]") {
			name := strings.Join(append(pending[:len(pending)-1:len(pending)-1], w[:open]), " ")
			cols = append(cols, Column{Name: name, Unit: w[open+1 : len(w)-1]})
			pending = nil
		}
	}
	if len(pending) > 0 {
		cols = append(cols, Column{Name: strings.Join(pending, " ")})
	}
	return cols
}

func isUint(s string) bool {
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

// Lookup finds the value of the column named name (Name without the
// unit, e.g. "BW average", "t_typical", "99% percentile") in the row for
// message size size, searching the tables in order. ok is false when no
// table has both.
func (r *Report) Lookup(name string, size int) (v float64, col Column, ok bool) {
	for _, t := range r.Tables {
		ci := -1
		for i, c := range t.Columns {
			if c.Name == name {
				ci = i
				break
			}
		}
		if ci < 0 || len(t.Columns) == 0 || t.Columns[0].Name != "#bytes" {
			continue
		}
		for _, row := range t.Rows {
			if row[0] == float64(size) {
				return row[ci], t.Columns[ci], true
			}
		}
	}
	return 0, Column{}, false
}

// bandwidthUnits maps a perftest bandwidth unit to bytes per second per
// unit. perftest's MiB/sec and the older label MB/sec are both 2^20
// bytes per second (perftest PR #257 only renamed the label); Gb/sec is
// 10^9 bits per second (--report_gbits).
var bandwidthUnits = map[string]float64{
	"MiB/sec": 1 << 20,
	"MB/sec":  1 << 20,
	"Gb/sec":  1e9 / 8,
}

// timeUnits maps a perftest latency unit to nanoseconds.
var timeUnits = map[string]float64{"usec": 1e3}

// toBase converts a perftest value to bytes per second (bandwidth
// columns) or nanoseconds (latency columns).
func toBase(v float64, c Column) (float64, error) {
	if f, ok := bandwidthUnits[c.Unit]; ok {
		return v * f, nil
	}
	if f, ok := timeUnits[c.Unit]; ok {
		return v * f, nil
	}
	return 0, fmt.Errorf("perftest column %s: unknown unit %q", c, c.Unit)
}
