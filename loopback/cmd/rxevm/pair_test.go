package main

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSplitPair(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantA   []string
		wantB   []string
		wantErr string
	}{
		{name: "two commands", args: []string{"ib_send_bw", "-F", ":::", "sh", "-c", "x"}, wantA: []string{"ib_send_bw", "-F"}, wantB: []string{"sh", "-c", "x"}},
		{name: "a later separator belongs to b", args: []string{"a", ":::", "b", ":::"}, wantA: []string{"a"}, wantB: []string{"b", ":::"}},
		{name: "no separator", args: []string{"a", "b"}, wantErr: "two commands separated by :::"},
		{name: "nothing before", args: []string{":::", "b"}, wantErr: "a command on each side"},
		{name: "nothing after", args: []string{"a", ":::"}, wantErr: "a command on each side"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b, err := splitPair(tt.args)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tt.wantA, a)
			assert.Equal(t, tt.wantB, b)
		})
	}
}

func TestPrefixWriter(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	a, b := newPrefixWriter(&out, "[a] ", &mu), newPrefixWriter(&out, "[b] ", &mu)
	for _, w := range []struct {
		p *prefixWriter
		s string
	}{{a, "one\ntw"}, {b, "x\n"}, {a, "o\n\nthree"}, {b, "\r\n"}} {
		n, err := w.p.Write([]byte(w.s))
		assert.NoError(t, err)
		assert.Equal(t, len(w.s), n)
	}
	assert.Equal(t, "[a] one\n[b] x\n[a] two\n[a] \n[b] \r\n", out.String(), "whole lines only, as they complete")
	a.Flush()
	b.Flush()
	assert.Equal(t, "[a] one\n[b] x\n[a] two\n[a] \n[b] \r\n[a] three\n", out.String(), "Flush ends the unfinished line")
}

func TestPairStatus(t *testing.T) {
	tests := []struct {
		a, b, want int
		wantMsg    string
	}{
		{0, 0, 0, ""},
		{3, 0, 3, "rxevm: guest a: command exited with status 3\n"},
		{0, 4, 4, "rxevm: guest b: command exited with status 4\n"},
		{3, 4, 3, "rxevm: guest a: command exited with status 3\nrxevm: guest b: command exited with status 4\n"},
		{-1, 3, 3, "rxevm: guest b: command exited with status 3\n"}, // a was stopped
	}
	for _, tt := range tests {
		var msg bytes.Buffer
		assert.Equal(t, tt.want, pairStatus(&msg, tt.a, tt.b))
		assert.Equal(t, tt.wantMsg, msg.String())
	}
}

// TestCheckFlags: a deadline that is not positive and guest sizes out of
// range are refused, naming the value.
func TestCheckFlags(t *testing.T) {
	assert.NoError(t, checkFlags(30*time.Minute, 0, 0))
	assert.NoError(t, checkFlags(time.Minute, 1024, 2))
	for _, tc := range []struct {
		timeout   time.Duration
		mem, cpus int
		want      string
	}{
		{0, 0, 0, "-timeout 0s must be positive"},
		{-time.Second, 0, 0, "-timeout -1s must be positive"},
		{time.Minute, 16, 0, "-mem 16 MiB is out of range 256..65536"},
		{time.Minute, 0, -1, "-smp -1 is out of range 1..64"},
	} {
		assert.ErrorContains(t, checkFlags(tc.timeout, tc.mem, tc.cpus), tc.want)
	}
}
