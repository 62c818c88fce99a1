package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/internal/changepoint"
	"github.com/rdmabench/rdmabench/internal/history"
	"github.com/rdmabench/rdmabench/internal/results"
)

// judged is one series with its change points.
type judged struct {
	history.Series
	changepoint.Result
	// New are the worse changes beyond the threshold among the last runs.
	New []changepoint.Change
}

func reportCmd(args []string, stdout io.Writer) (worse bool, err error) {
	fs := flag.NewFlagSet("rdmahistory report", flag.ContinueOnError)
	dbPath := fs.String("db", defaultDB, "local store to read")
	server := fs.String("server", "", "read a perfdata server at this URL instead of -db")
	timeout := fs.Duration("timeout", time.Minute, "deadline of the query to -server")
	q := fs.String("q", "", "perfdata query selecting the results (key:value words, e.g. rdma-device:rxe0)")
	last := fs.Int("last", changepoint.Default.Lookback, "a worse change point among a series' last this many runs fails (exit 1)")
	threshold := fs.String("threshold", "10%", "smallest worse change that fails, e.g. 10% or 0.1")
	html := fs.String("html", "", "write the trend page (one self-contained HTML file) here")
	decide := fs.String("decide", "", "deciding units per family overriding the defaults, e.g. 'SendLat=p99-ns'")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("report: unexpected argument %q", fs.Arg(0))
	}
	th, err := parseFraction(*threshold)
	if err != nil {
		return false, fmt.Errorf("report: -threshold: %w", err)
	}
	if *last < 1 || *last > 1000 {
		return false, fmt.Errorf("report: -last %d: want 1..1000", *last)
	}
	dec, err := results.ParseDecide(*decide)
	if err != nil {
		return false, fmt.Errorf("report: -decide: %w", err)
	}
	var st history.Store
	from := *dbPath
	if *server != "" {
		st, from = history.NewRemote(*server, *timeout), *server
	} else {
		if _, err := os.Stat(*dbPath); err != nil {
			return false, fmt.Errorf("report: no local store %s (make bench stores its results there; rdmahistory store FILE... adds files): %w", *dbPath, err)
		}
		l, err := history.OpenLocal(*dbPath)
		if err != nil {
			return false, fmt.Errorf("report: %w", err)
		}
		defer l.Close()
		st = l
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	series, err := history.Load(ctx, st, *q, history.Options{Decide: dec})
	if err != nil {
		return false, fmt.Errorf("report: %w", err)
	}
	js := judge(series, changepoint.Default, *last, th)
	printReport(stdout, js, from, *q, *last, th)
	if *html != "" {
		if err := writePage(*html, js, from); err != nil {
			return false, fmt.Errorf("report: %w", err)
		}
		fmt.Fprintf(stdout, "rdmahistory: trend page %s\n", *html)
	}
	for _, j := range js {
		if len(j.New) > 0 {
			worse = true
		}
	}
	return worse, nil
}

// judge runs the detection on every series and picks the new worse
// changes: At among the last runs, worse by more than th.
func judge(series []history.Series, c changepoint.Config, last int, th float64) []judged {
	js := make([]judged, len(series))
	for i, s := range series {
		x := s.Bests()
		js[i] = judged{Series: s, Result: changepoint.Detect(x, s.HigherBetter, c)}
		for _, ch := range js[i].Changes {
			if ch.Worse && ch.At >= len(x)-last && math.Abs(ch.Shift) > th {
				js[i].New = append(js[i].New, ch)
			}
		}
	}
	return js
}

func printReport(w io.Writer, js []judged, from, q string, last int, th float64) {
	runs, changes, noisy, slow, bad := 0, 0, 0, 0, 0
	for _, j := range js {
		runs = max(runs, len(j.Points))
		changes += len(j.Changes)
		if j.TooNoisy {
			noisy++
		} else if j.TooSlow {
			slow++
		}
		if len(j.New) > 0 {
			bad++
		}
	}
	c := changepoint.Default
	fmt.Fprintf(w, "rdmahistory: %d series (up to %d runs each) from %s, query %q\n", len(js), runs, from, q)
	fmt.Fprintf(w, "each run's value is its best result; change points: run by run against the %.0f%% quantile of up to %d earlier runs, a step ≥ %.0f%% and ≥ %g × their noise in every run after it, chance without a change ≤ %g; noise > %.0f%%: too noisy to judge (docs/history.md)\n\n",
		100*c.Quantile, c.Window, 100*c.MinShift, c.Noise, c.Alpha, 100*c.MaxNoise)
	for _, j := range js {
		lastV := math.NaN()
		if n := len(j.Points); n > 0 {
			lastV = j.Points[n-1].Best
		}
		fmt.Fprintf(w, "%s %s [%s]: %d runs, last %s: %s\n", j.Name, j.Unit, j.Env, len(j.Points), num(lastV), j.verdict())
		for _, ch := range j.Changes {
			p := j.Points[ch.At]
			word := "better"
			if ch.Worse {
				word = "worse"
			}
			mark := ""
			if containsChange(j.New, ch) {
				mark = fmt.Sprintf("  NEW (among the last %d runs, worse by more than %.0f%%)", last, 100*th)
			}
			fmt.Fprintf(w, "    run %d (%s, upload %s): %s → %s, %+.1f%% %s (chance without a change %.2g), confirmed at run %d%s%s\n",
				ch.At+1, p.RunTime, p.Upload, num(ch.Before), num(ch.After), 100*ch.Shift, word, ch.P, ch.Confirmed+1, stepText(j.Points, ch.At), mark)
		}
	}
	fmt.Fprintf(w, "\nrdmahistory: %d series, %d change points, %d too noisy to judge, %d too often slow to confirm a step within %d runs, %d with a new regression\n", len(js), changes, noisy, slow, c.Lookback, bad)
}

// verdict is a series' one-line verdict, for the report and the page.
func (j judged) verdict() string {
	c := changepoint.Default
	switch {
	case len(j.New) > 0:
		return "REGRESSION"
	case j.TooNoisy:
		return fmt.Sprintf("too noisy (spread %.0f%%)", 100*j.Noise)
	case len(j.Changes) > 0:
		return fmt.Sprintf("%d change points", len(j.Changes))
	case j.TooSlow:
		return fmt.Sprintf("no change seen, but too often slow to confirm one within %d runs (%.0f%% of runs beyond the bar)", c.Lookback, 100*j.Slow)
	case len(j.Points) < c.MinBaseline+c.Confirm:
		return fmt.Sprintf("too few runs to judge (%d of %d)", len(j.Points), c.MinBaseline+c.Confirm)
	}
	return "no change"
}

func containsChange(cs []changepoint.Change, c changepoint.Change) bool {
	for _, x := range cs {
		if x.At == c.At {
			return true
		}
	}
	return false
}

// stepText says what changed at run at against the run before it.
func stepText(ps []history.Point, at int) string {
	if at == 0 {
		return ""
	}
	var parts []string
	for _, k := range history.StepLabels {
		if a, b := ps[at-1].Steps[k], ps[at].Steps[k]; a != b {
			parts = append(parts, fmt.Sprintf("%s %s → %s", k, orNone(a), orNone(b)))
		}
	}
	if len(parts) == 0 {
		return ", nothing labelled changed"
	}
	return ", " + strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// num prints a value with 4 significant digits.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// parseFraction reads "10%" or "0.1" (0 < f < 10).
func parseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	div := 1.0
	if p, ok := strings.CutSuffix(t, "%"); ok {
		t, div = p, 100
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f/div > 0 && f/div < 10) {
		return 0, fmt.Errorf("%q: want a fraction above 0 and below 10 (1000%%), e.g. 10%% or 0.1", s)
	}
	return f / div, nil
}
