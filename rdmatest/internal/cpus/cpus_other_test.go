//go:build !linux

package cpus

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNothingPinnedHere: where threads cannot be pinned, no CPU is
// chosen, a CPU list asked for and every pin are errors saying so, and
// an unpinned loop runs as it is.
func TestNothingPinnedHere(t *testing.T) {
	p, err := Choose("mlx5_0", "", everyCPU())
	require.NoError(t, err)
	assert.Empty(t, p.Loop)
	assert.Equal(t, "unpinned", p.Line())
	rest, err := p.ConfineRuntime()
	require.NoError(t, err)
	assert.Nil(t, rest, "no loop CPU: nothing to move")

	_, err = Choose("mlx5_0", "2,3", everyCPU())
	require.Error(t, err)
	assert.True(t, errors.Is(err, errors.ErrUnsupported), "%v", err)
	assert.Contains(t, err.Error(), runtime.GOOS)

	require.NoError(t, PinThread(-1), "an unpinned loop")
	err = PinThread(0)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errors.ErrUnsupported), "%v", err)
	assert.Contains(t, err.Error(), "CPU 0")
	_, err = PinSelf(0)
	assert.True(t, errors.Is(err, errors.ErrUnsupported), "%v", err)
}
