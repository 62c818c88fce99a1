// Package nodes reads the node list of a fabric run: a file of names, a
// comma-separated list, or the nodes of the Slurm job it runs in. Every
// name passes oob.CheckNodeName (the one rule for node names, on the
// wire and in rdmafabric's streams), names are distinct ignoring case,
// as host names are, and a list holds at most the limit its caller
// gives. Both ends of a fabric run read their lists here: the
// coordinator (rdmafabric) and the agents (rdmapeer -agent), whose list
// bounds the nodes they may be asked to send to.
package nodes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// ErrList marks an error in a list's content (a bad or repeated name,
// too many, none), as opposed to a file or command that could not be
// read or run: errors.Is(err, ErrList).
var ErrList = errors.New("bad node list")

// listError is a content error: its text, matched by ErrList.
type listError struct{ msg string }

func (e *listError) Error() string        { return e.msg }
func (e *listError) Is(target error) bool { return target == ErrList }

func listErrorf(format string, v ...any) error { return &listError{fmt.Sprintf(format, v...)} }

// ReadFile reads the node names of file (see Read).
func ReadFile(file string, max int) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, file, max)
}

// Read reads node names from r, one a line: '#' starts a comment, white
// space around a name and blank lines are ignored. It refuses, naming
// source and line, a bad name, a name given twice (ignoring case), more
// than max names (it stops reading there), and a list with no name.
func Read(r io.Reader, source string, max int) ([]string, error) {
	sc := bufio.NewScanner(r)
	l := newList(max)
	line := 0
	for sc.Scan() {
		line++
		if err := l.add(trimComment(sc.Text()), fmt.Sprintf("%s:%d", source, line)); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, listErrorf("%s:%d: line too long for a node name (at most %d characters)", source, line+1, oob.MaxNodeLen)
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return l.done(source)
}

// Split reads a comma-separated list of node names ("node1,node2"), with
// Read's rules; source names it in errors (a flag, an environment
// variable).
func Split(list, source string, max int) ([]string, error) {
	l := newList(max)
	for i, name := range strings.Split(list, ",") {
		if err := l.add(strings.TrimSpace(name), fmt.Sprintf("%s: name %d", source, i+1)); err != nil {
			return nil, err
		}
	}
	return l.done(source)
}

// slurmTimeout bounds scontrol.
const slurmTimeout = 30 * time.Second

// Slurm returns the nodes of the Slurm job this process runs in:
// `scontrol show hostnames "$SLURM_JOB_NODELIST"`, with Read's rules. It
// fails when SLURM_JOB_NODELIST is unset (not in a Slurm job), or
// scontrol fails or takes longer than 30 s.
func Slurm(ctx context.Context, max int) ([]string, error) {
	list := os.Getenv("SLURM_JOB_NODELIST")
	if list == "" {
		return nil, errors.New("SLURM_JOB_NODELIST is not set: not in a Slurm job (give the nodes another way)")
	}
	ctx, cancel := context.WithTimeout(ctx, slurmTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "scontrol", "show", "hostnames", list).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("scontrol show hostnames %q: %w", list, err)
	}
	return Read(strings.NewReader(string(out)), "SLURM_JOB_NODELIST="+list, max)
}

// list gathers names, checking each.
type list struct {
	max   int
	names []string
	first map[string]string // lower-cased name → where it was first
}

func newList(max int) *list { return &list{max: max, first: make(map[string]string)} }

// add appends name (at where, for errors); an empty name is skipped.
func (l *list) add(name, where string) error {
	if name == "" {
		return nil
	}
	if err := oob.CheckNodeName(name); err != nil {
		return listErrorf("%s: %v", where, err)
	}
	key := strings.ToLower(name)
	if prev, dup := l.first[key]; dup {
		return listErrorf("%s: node %q is already at %s", where, name, prev)
	}
	if len(l.names) == l.max {
		return listErrorf("%s: more than %d nodes", where, l.max)
	}
	l.first[key] = where
	l.names = append(l.names, name)
	return nil
}

// done returns the names, or an error for none.
func (l *list) done(source string) ([]string, error) {
	if len(l.names) == 0 {
		return nil, listErrorf("%s: no node names", source)
	}
	return l.names, nil
}

// trimComment removes a '#' comment and the white space around a line.
func trimComment(line string) string {
	line, _, _ = strings.Cut(line, "#")
	return strings.TrimSpace(line)
}
