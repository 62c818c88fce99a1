package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// TestRandomPSNAndQKey: starting PSNs and UD Q_Keys are random, in range,
// and not the old constants a stranger could guess.
func TestRandomPSNAndQKey(t *testing.T) {
	psns, qkeys := map[uint32]bool{}, map[uint32]bool{}
	for range 100 {
		p, q := psn(0, 0), randomQKey()
		assert.LessOrEqual(t, p, uint32(0xffffff))
		assert.NotZero(t, q)
		assert.LessOrEqual(t, q, uint32(oob.MaxQKey))
		psns[p], qkeys[q] = true, true
	}
	assert.Greater(t, len(psns), 90, "PSNs repeat")
	assert.Greater(t, len(qkeys), 90, "Q_Keys repeat")
	assert.NotContains(t, qkeys, uint32(0x11111111), "perftest's default Q_Key")
}
