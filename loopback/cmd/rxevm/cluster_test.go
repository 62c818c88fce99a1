package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/loopback"
)

func TestClusterStatus(t *testing.T) {
	nodes, err := loopback.ClusterNodes(3, nil)
	require.NoError(t, err)
	tests := []struct {
		codes   []int
		want    int
		wantMsg string
	}{
		{[]int{0, 0, 0}, 0, ""},
		{[]int{0, 5, 0}, 5, "rxevm: guest node2: command exited with status 5\n"},
		{[]int{-1, 3, 4}, 3, "rxevm: guest node2: command exited with status 3\nrxevm: guest node3: command exited with status 4\n"}, // node1 was stopped
		{[]int{-1, -1, -1}, 0, ""}, // all stopped: the error says why, and rxevm exits 125
	}
	for _, tt := range tests {
		var msg bytes.Buffer
		assert.Equal(t, tt.want, clusterStatus(&msg, nodes, tt.codes))
		assert.Equal(t, tt.wantMsg, msg.String())
	}
}
