package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/rdmabench/rdmabench/loopback"
)

// pairSeparator separates guest a's command from guest b's.
const pairSeparator = ":::"

// splitPair splits COMMAND_A ... ::: COMMAND_B ... at the first separator.
func splitPair(args []string) (a, b []string, err error) {
	i := slices.Index(args, pairSeparator)
	switch {
	case i < 0:
		return nil, nil, errors.New("-pair needs two commands separated by " + pairSeparator)
	case i == 0 || i == len(args)-1:
		return nil, nil, errors.New("-pair needs a command on each side of " + pairSeparator)
	}
	return args[:i], args[i+1:], nil
}

// runPair runs argsA in guest a and argsB in guest b and returns rxevm's
// exit status.
func runPair(ctx context.Context, p *loopback.Pair, share string, verbose bool, argsA, argsB []string) int {
	share, err := filepath.Abs(share)
	if err != nil {
		return fail(err)
	}
	p.A.Share, p.B.Share = share, share
	var mu sync.Mutex // one line at a time on each of stdout and stderr
	outA, outB := newPrefixWriter(os.Stdout, "[a] ", &mu), newPrefixWriter(os.Stdout, "[b] ", &mu)
	defer outA.Flush()
	defer outB.Flush()
	if verbose {
		var cmu sync.Mutex
		ca, cb := newPrefixWriter(os.Stderr, "[a console] ", &cmu), newPrefixWriter(os.Stderr, "[b console] ", &cmu)
		defer ca.Flush()
		defer cb.Flush()
		p.A.Console, p.B.Console = ca, cb
	}
	jobA, err := hostJob(argsA)
	if err != nil {
		return fail(err)
	}
	jobB, err := hostJob(argsB)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "rxevm: running in two qemu guests, a (192.0.2.1) and b (192.0.2.2)\n")
	codeA, codeB, err := p.Run(ctx, jobA, jobB, outA, outB)
	outA.Flush()
	outB.Flush()
	var pe *loopback.PairError
	switch {
	case err == nil:
		return pairStatus(os.Stderr, codeA, codeB)
	case errors.As(err, &pe) && errors.Unwrap(err) == nil:
		// Only a command failed (and the other guest was stopped): the
		// message names the guest; the status is the command's.
		fmt.Fprintf(os.Stderr, "rxevm: %v\n", err)
		return pairStatus(io.Discard, codeA, codeB)
	default:
		return fail(err)
	}
}

// pairStatus is guestStatus for guests a and b: the first non-zero
// status, a's before b's.
func pairStatus(w io.Writer, codeA, codeB int) int {
	return guestStatus(w, []string{"a", "b"}, []int{codeA, codeB})
}

// prefixWriter writes each line it is given to w, prefixed, as soon as
// the line is complete. Writers sharing mu never interleave within a line.
type prefixWriter struct {
	w      io.Writer
	prefix string
	mu     *sync.Mutex
	buf    []byte // the start of an unfinished line
}

func newPrefixWriter(w io.Writer, prefix string, mu *sync.Mutex) *prefixWriter {
	return &prefixWriter{w: w, prefix: prefix, mu: mu}
}

// Write passes on the complete lines in b and keeps the rest.
func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	var out []byte
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		out = append(append(out, p.prefix...), p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
	}
	if len(out) == 0 {
		return len(b), nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Flush writes an unfinished last line, with a newline.
func (p *prefixWriter) Flush() {
	if len(p.buf) == 0 {
		return
	}
	p.Write([]byte("\n"))
}
