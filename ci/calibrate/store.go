package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// commitName is what -commit may be: it names the stored file.
var commitName = regexp.MustCompile(`^[0-9A-Za-z._-]{1,64}$`)

// storeName is a calibration's file name without its extension.
func storeName(rec *record) (string, error) {
	t, err := time.Parse(time.RFC3339, rec.Time)
	if err != nil {
		return "", fmt.Errorf("stored calibration time %q: %w", rec.Time, err)
	}
	return t.UTC().Format("20060102T150405Z") + "-" + rec.Commit, nil
}

// store writes rec as DIR/<UTC time>-<commit>.json and its table as the
// .txt beside it, never overwriting a file (O_EXCL); it returns the JSON
// file's path.
func store(dir string, rec *record) (string, error) {
	name, err := storeName(rec)
	if err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode the calibration: %w", err)
	}
	base := filepath.Join(dir, name)
	if err := createNew(base+".json", append(data, '\n')); err != nil {
		return "", err
	}
	if err := createNew(base+".txt", []byte(rec.Table)); err != nil {
		return "", err
	}
	return base + ".json", nil
}

// createNew writes a file that must not exist yet.
func createNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("store the calibration: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store the calibration in %s: %w", path, err)
	}
	return nil
}

// load reads every stored calibration (*.json) in dir, oldest first. It
// refuses, naming the file, one it cannot read or parse, of another
// format version, or whose values do not fit its own runs.
func load(dir string) ([]record, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("stored calibrations: %w", err)
		}
		return nil, fmt.Errorf("no stored calibration (*.json) in %s", dir)
	}
	var recs []record
	for _, p := range paths {
		rec, err := loadOne(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		recs = append(recs, rec)
	}
	slices.SortStableFunc(recs, func(a, b record) int { return strings.Compare(a.Time, b.Time) })
	return recs, nil
}

func loadOne(path string) (record, error) {
	var rec record
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	// The version first, so that a future format is named as such rather
	// than as a field that does not parse.
	var v struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return rec, fmt.Errorf("not a stored calibration: %w", err)
	}
	if v.Format == nil || *v.Format != storeFormat {
		got := "none"
		if v.Format != nil {
			got = fmt.Sprint(*v.Format)
		}
		return rec, fmt.Errorf("format version %s: this calibrate reads version %d", got, storeFormat)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return rec, fmt.Errorf("not a stored calibration of format %d: %w", storeFormat, err)
	}
	return rec, rec.check()
}

// check refuses a record whose fields the render needs are missing or
// inconsistent.
func (rec *record) check() error {
	if _, err := time.Parse(time.RFC3339, rec.Time); err != nil {
		return fmt.Errorf("time %q is not RFC 3339", rec.Time)
	}
	if rec.Runs < 1 {
		return fmt.Errorf("runs %d: want at least 1", rec.Runs)
	}
	if len(rec.Scenarios) == 0 {
		return errors.New("no scenarios")
	}
	for _, s := range rec.Scenarios {
		if s.Name == "" || len(s.Figures) == 0 {
			return fmt.Errorf("scenario %q: no name or no figures", s.Name)
		}
		for _, f := range s.Figures {
			for _, id := range []string{"P1", "P2"} {
				if _, ok := f.Values[id]; !ok {
					return fmt.Errorf("scenario %q, figure %q: no %s values", s.Name, f.Label, id)
				}
			}
			for id, vs := range f.Values {
				if len(vs) != rec.Runs {
					return fmt.Errorf("scenario %q, figure %q: %s has %d values, runs is %d", s.Name, f.Label, id, len(vs), rec.Runs)
				}
			}
		}
	}
	return nil
}

// RenderStored renders the table of every calibration stored in dir (as
// -store writes them), never a picked one: per scenario and figure the
// median over calibrations of the like-for-like ratio, its min–max over
// calibrations, the A/A bands pooled over every pair of every
// calibration, the median own-definition ratio, the number of
// calibrations and the ratio against perftest's A/A per calibration, under a header line naming the calibrations' dates and
// commits. markdown selects a Markdown table (for the README) over
// aligned text. It fails, naming the file, on a file it cannot read or
// of an unknown format version.
func RenderStored(dir string, markdown bool) (string, error) {
	recs, err := load(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	renderTable(&b, recs, markdown)
	return b.String(), nil
}

// renderTable writes the table of recs (oldest first).
func renderTable(w io.Writer, recs []record, markdown bool) {
	type agg struct {
		first                                      row
		n                                          int
		pt, rb, like, own                          []float64 // one per calibration
		likeRatios, perftestAARatios, oursAARatios []float64 // pooled over calibrations
		pooledAA                                   []float64 // one per calibration: its median P2/P1
	}
	var keys []string
	byKey := map[string]*agg{}
	for _, rec := range recs {
		for _, r := range rec.rows() {
			k := r.scenario + "\x00" + r.figure
			a := byKey[k]
			if a == nil {
				a = &agg{first: r}
				byKey[k] = a
				keys = append(keys, k)
			}
			a.n++
			a.pt = append(a.pt, r.perftest)
			a.rb = appendFinite(a.rb, r.rdmabench)
			a.own = appendFinite(a.own, r.own)
			if r.like.ok {
				a.like = append(a.like, r.like.median)
			}
			a.likeRatios = append(a.likeRatios, r.likeRatios...)
			a.perftestAARatios = append(a.perftestAARatios, r.perftestAARatios...)
			if len(r.perftestAARatios) > 0 {
				a.pooledAA = append(a.pooledAA, median(r.perftestAARatios))
			}
			a.oursAARatios = append(a.oursAARatios, r.oursAARatios...)
		}
	}
	var lines [][]string
	for _, k := range keys {
		a := byKey[k]
		r := a.first
		r.perftest, r.rdmabench, r.own = median(a.pt), median(a.rb), median(a.own)
		r.like = spreadOf(a.like) // median and min–max over the calibrations
		r.perftestAA, r.oursAA = spreadOf(a.perftestAARatios), spreadOf(a.oursAARatios)
		c := r.cells(fmt.Sprint(a.n))
		// Without cells' last: the verdict against the pair-by-pair
		// band, which is too wide to fail (issue #42).
		lines = append(lines, append(c[:len(c)-1], pooledCells(r.like, a.pooledAA)...))
	}
	fmt.Fprintln(w, renderHeader(recs))
	fmt.Fprintln(w)
	writeTable(w, renderColumns, lines, markdown)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "perftest, rdmabench = medians over the calibrations of each calibration's median (of P1; of L1 or B1);")
	fmt.Fprintln(w, "ratio = median over the calibrations of each one's median per-pair ratio (L1/P1 and L2/P2, or B1/P1 and B2/P2, pooled), so NOT the quotient of the two columns before it; ratio range = its min–max over the calibrations;")
	fmt.Fprintln(w, "the A/A bands (every pair) = min–max of P2/P1 and of L2/L1 (B2/B1) over every pair of every calibration: run-to-run spread, too wide to judge a ratio by; own-definition ratio = median over the calibrations of each one's median O/P1;")
	fmt.Fprintln(w, "perftest A/A per calibration = min–max over the calibrations of each one's median P2/P1 (perftest against itself, pooled over a calibration's pairs as the ratio is); vs it: inside when the ratio lies within that range, else OUTSIDE (judged from 3 calibrations on).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Remaining differences between the tools:")
	fmt.Fprintln(w)
	for _, d := range remainingDifferences {
		fmt.Fprintf(w, "- %s\n", d)
	}
}

// renderColumns are the columns of the rendered table.
var renderColumns = []string{"scenario", "figure", "perftest", "rdmabench", "ratio (median per-pair ratio, median of calibrations)", "ratio range (calibrations)",
	"perftest A/A (every pair)", "rdmabench A/A (every pair)", "own-definition ratio", "calibrations", "perftest A/A per calibration", "vs perftest A/A per calibration"}

// minPooledAA is the fewest calibrations whose pooled perftest A/A
// ratios make a band to read a ratio against.
const minPooledAA = 3

// pooledCells are the rendered table's last two cells: the min–max over
// the calibrations of perftest's pooled A/A ratio (each calibration's
// median P2/P1) and whether the like-for-like ratio lies within it. The
// pair-by-pair A/A band is wide on a device whose p50 jumps between
// levels from run to run (docs/performance.md, "Phases"); a calibration's
// pooled ratio is the statistic the like-for-like ratio is, so this range
// is the noise band it is to be read against. Fewer than
// minPooledAA calibrations give a range but no verdict.
func pooledCells(like spread, perCalibration []float64) []string {
	pooledAA := spreadOf(perCalibration)
	if !pooledAA.ok {
		return []string{"—", "—"}
	}
	verdict := "—"
	if like.ok && len(perCalibration) >= minPooledAA {
		verdict = "OUTSIDE"
		if like.median >= pooledAA.min && like.median <= pooledAA.max {
			verdict = "inside"
		}
	}
	return []string{pooledAA.band(), verdict}
}

// renderHeader says how many calibrations the table comes from, their
// dates and commits, and what they ran on.
func renderHeader(recs []record) string {
	var each []string
	devices, setups := map[string]bool{}, map[string]bool{}
	var devList, setupList []string
	for _, r := range recs {
		t, _ := time.Parse(time.RFC3339, r.Time)
		each = append(each, fmt.Sprintf("%s (%s)", t.UTC().Format("2006-01-02"), r.Commit))
		d := fmt.Sprintf("%s, kernel %s", r.Device, r.Kernel)
		if !devices[d] {
			devices[d] = true
			devList = append(devList, d)
		}
		s := fmt.Sprintf("%d %s × %d iterations", r.Runs, plural(r.Runs, "pair"), r.Iters)
		if !setups[s] {
			setups[s] = true
			setupList = append(setupList, s)
		}
	}
	return fmt.Sprintf("%d %s: %s; %s; %s.", len(recs), plural(len(recs), "calibration"), strings.Join(each, ", "),
		strings.Join(devList, "; "), strings.Join(setupList, "; "))
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func appendFinite(v []float64, x float64) []float64 {
	if x != x { // NaN: none
		return v
	}
	return append(v, x)
}

// The rendered table lies between these lines in a Markdown file
// (docs/performance.md), and the summary between the summary's
// (README.md); -render -readme FILE replaces what is between each pair
// FILE holds, and TestREADMETableIsRendered checks both files.
const (
	tableBegin   = "<!-- begin: make calibration-table (rendered from every calibration in docs/calibration; do not edit) -->\n"
	tableEnd     = "<!-- end: make calibration-table -->\n"
	summaryBegin = "<!-- begin: make calibration-table summary (rendered from every calibration in docs/calibration; do not edit) -->\n"
	summaryEnd   = "<!-- end: make calibration-table summary -->\n"
)

// tableIn returns what lies between the table's markers of doc.
func tableIn(doc string) (string, error) { return blockIn(doc, tableBegin, tableEnd) }

// blockIn returns what lies between the markers begin and end of doc.
func blockIn(doc, begin, end string) (string, error) {
	_, rest, ok := strings.Cut(doc, begin)
	if !ok {
		return "", fmt.Errorf("no line %q", strings.TrimSpace(begin))
	}
	table, _, ok := strings.Cut(rest, end)
	if !ok {
		return "", fmt.Errorf("no line %q after the begin marker", strings.TrimSpace(end))
	}
	return table, nil
}

// replaceTableIn replaces the table between the table's markers of the
// file at path with table.
func replaceTableIn(path, table string) error {
	return replaceBlocksIn(path, []block{{tableBegin, tableEnd, table}})
}

// block is the text to put between a pair of markers.
type block struct{ begin, end, text string }

// replaceBlocksIn replaces, in the file at path, what lies between the
// markers of each block it holds with the block's text; a file holding
// none of them is refused (naming the first block's begin marker), as is
// a begin marker without its end.
func replaceBlocksIn(path string, blocks []block) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	found := 0
	for _, bl := range blocks {
		if !strings.Contains(doc, bl.begin) {
			continue
		}
		old, err := blockIn(doc, bl.begin, bl.end)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		found++
		i := strings.Index(doc, bl.begin) + len(bl.begin)
		doc = doc[:i] + bl.text + doc[i+len(old):]
	}
	if found == 0 {
		_, err := blockIn(doc, blocks[0].begin, blocks[0].end)
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

// renderInto replaces the summary and the full table rendered from the
// calibrations in dir in the Markdown file at path, whichever of the
// two it holds (make calibration-table: README.md, docs/performance.md).
func renderInto(path, dir string) error {
	table, err := RenderStored(dir, true)
	if err != nil {
		return err
	}
	summary, err := RenderSummary(dir)
	if err != nil {
		return err
	}
	return replaceBlocksIn(path, []block{{tableBegin, tableEnd, table}, {summaryBegin, summaryEnd, summary}})
}
