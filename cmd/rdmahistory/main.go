// Command rdmahistory keeps rdmabench's results over time and says when
// a benchmark changed.
//
//	rdmahistory store [flags] FILE...   store result files
//	rdmahistory [report] [flags]        series, change points, trend page
//
// store puts each result file into the local store (an embedded SQLite
// database in perfdata's schema, results/history.db by default) and,
// with -server URL (or RDMAHISTORY_SERVER), uploads it to a perfdata
// server as well. A file stored already is not stored again. A server
// that refuses or does not answer within -timeout loses nothing: the
// file and the local store keep the results, rdmahistory says so and
// exits 0. Labels: commit, host, rdmabench-version, run-time (the file's
// modification time unless -run-time), -label key=value, and the file's
// own configuration lines (go doc ./internal/history).
//
// report reads the store (-server: the server's) and builds one series
// per benchmark in its deciding unit, run by run, keyed by host, device
// and provider; it finds the change points (go doc
// ./internal/changepoint; docs/history.md has the method and its
// measured power) and prints them with what changed at each (commit,
// firmware, kernel). -html FILE writes the trend page: one chart per
// series with its change points marked, and a heatmap of each family
// with several series (a fabric's links) run by run.
//
// Exit status of report: 0 no new regression; 1 a change point that got
// worse by more than -threshold among the last -last runs of a series;
// 2 bad usage or an unreadable store.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/internal/history"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const defaultDB = "results/history.db"

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "report"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "store":
		err = storeCmd(args, stdout, stderr)
	case "report":
		var worse bool
		worse, err = reportCmd(args, stdout)
		if err == nil && worse {
			return 1
		}
	default:
		err = fmt.Errorf("unknown command %q: want store or report", cmd)
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "rdmahistory:", err)
		}
		return 2
	}
	return 0
}

// labelFlag collects -label key=value.
type labelFlag map[string]string

func (l labelFlag) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labelFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	l[k] = v
	return nil
}

func storeCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rdmahistory store", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", defaultDB, "local store (SQLite, made when missing)")
	server := fs.String("server", os.Getenv("RDMAHISTORY_SERVER"), "perfdata server URL to upload to as well [RDMAHISTORY_SERVER]")
	timeout := fs.Duration("timeout", 30*time.Second, "deadline of each upload to -server (1s..10m)")
	commit := fs.String("commit", "", "commit label (default: git describe --always --dirty here)")
	runTime := fs.String("run-time", "", "run-time label, RFC 3339 (default: each file's modification time)")
	labels := labelFlag{}
	fs.Var(labels, "label", "another label, key=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("store: no result files given")
	}
	if *timeout < time.Second || *timeout > 10*time.Minute {
		return fmt.Errorf("store: -timeout %v: want 1s..10m", *timeout)
	}
	var rt time.Time
	if *runTime != "" {
		t, err := time.Parse(time.RFC3339, *runTime)
		if err != nil {
			return fmt.Errorf("store: -run-time %q: want RFC 3339 (2026-12-06T20:00:00Z): %w", *runTime, err)
		}
		rt = t
	}
	if *commit == "" {
		*commit = gitDescribe()
	}
	host, _ := os.Hostname()
	base := history.Labels{Commit: *commit, Host: host, Version: version(), Extra: labels}
	files := make(map[string][]byte, fs.NArg())
	for _, f := range fs.Args() {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		files[f] = b
	}
	local, err := history.OpenLocal(*dbPath)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer local.Close()
	ctx := context.Background()
	for _, f := range fs.Args() {
		l := base
		l.RunTime = rt
		if rt.IsZero() {
			if st, err := os.Stat(f); err == nil {
				l.RunTime = st.ModTime()
			}
		}
		switch id, err := history.Put(ctx, local, f, files[f], l); {
		case errors.Is(err, history.ErrStored):
			fmt.Fprintf(stdout, "rdmahistory: %s is in %s already\n", f, *dbPath)
		case err != nil:
			return fmt.Errorf("store: %w", err)
		default:
			fmt.Fprintf(stdout, "rdmahistory: %s stored in %s as upload %s\n", f, *dbPath, id)
		}
		if *server == "" {
			continue
		}
		uctx, cancel := context.WithTimeout(ctx, *timeout)
		id, err := history.Put(uctx, history.NewRemote(*server, *timeout), f, files[f], l)
		cancel()
		switch {
		case errors.Is(err, history.ErrStored):
			fmt.Fprintf(stdout, "rdmahistory: %s is on %s already\n", f, *server)
		case err != nil:
			fmt.Fprintf(stderr, "rdmahistory: WARNING: %s not uploaded (kept in the file and in %s): %v\n", f, *dbPath, err)
		default:
			fmt.Fprintf(stdout, "rdmahistory: %s uploaded to %s as upload %s\n", f, *server, id)
		}
	}
	return nil
}

// gitDescribe is the working tree's commit, "" outside a git tree.
func gitDescribe() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=12").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// version is rdmabench's own version as the build knows it: the module
// version and VCS revision.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += "-dirty"
			}
		}
	}
	return v
}
