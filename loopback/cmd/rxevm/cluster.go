package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rdmabench/rdmabench/loopback"
)

// runCluster runs args in every guest of c and returns rxevm's exit
// status: 0 when every command exits 0, else the first non-zero status
// in guest order (a guest that was stopped counts as none), with a line
// on stderr naming each guest whose command failed.
func runCluster(ctx context.Context, c *loopback.Cluster, share string, verbose bool, args []string) int {
	share, err := filepath.Abs(share)
	if err != nil {
		return fail(err)
	}
	nodes, err := loopback.ClusterNodes(len(c.VMs), c.Names)
	if err != nil {
		return fail(err)
	}
	job, err := hostJob(args)
	if err != nil {
		return fail(err)
	}
	var mu, cmu sync.Mutex // one line at a time on each of stdout and stderr
	outs := make([]io.Writer, len(nodes))
	jobs := make([]loopback.Job, len(nodes))
	var flush []*prefixWriter
	defer func() {
		for _, w := range flush {
			w.Flush()
		}
	}()
	var addrs []string
	for i, n := range nodes {
		c.VMs[i].Share = share
		out := newPrefixWriter(os.Stdout, "["+n.Name+"] ", &mu)
		outs[i], jobs[i] = out, job
		flush = append(flush, out)
		if verbose {
			con := newPrefixWriter(os.Stderr, "["+n.Name+" console] ", &cmu)
			c.VMs[i].Console = con
			flush = append(flush, con)
		}
		addrs = append(addrs, n.Name+" ("+n.Addr+")")
	}
	fmt.Fprintf(os.Stderr, "rxevm: running in %d qemu guests: %s\n", len(nodes), strings.Join(addrs, ", "))
	codes, err := c.Run(ctx, jobs, outs)
	for _, w := range flush {
		w.Flush()
	}
	var ce *loopback.ClusterError
	switch {
	case err == nil:
		return clusterStatus(os.Stderr, nodes, codes)
	case errors.As(err, &ce) && errors.Unwrap(err) == nil:
		// Only a command failed (and the other guests were stopped):
		// the message names the guests; the status is the command's.
		fmt.Fprintf(os.Stderr, "rxevm: %v\n", err)
		return clusterStatus(io.Discard, nodes, codes)
	default:
		return fail(err)
	}
}

// clusterStatus is guestStatus with the nodes' names.
func clusterStatus(w io.Writer, nodes []loopback.ClusterNode, codes []int) int {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return guestStatus(w, names, codes)
}

// guestStatus returns rxevm's exit status for the guests' commands'
// statuses (-1 for a guest that was stopped): the first non-zero one in
// guest order. It names on w each guest whose command failed.
func guestStatus(w io.Writer, names []string, codes []int) int {
	status := 0
	for i, code := range codes {
		if code > 0 {
			fmt.Fprintf(w, "rxevm: guest %s: command exited with status %d\n", names[i], code)
			if status == 0 {
				status = code
			}
		}
	}
	return status
}
