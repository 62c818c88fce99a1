//go:build !(linux && cgo)

package verbs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStubsReturnNotSupported(t *testing.T) {
	_, err := Devices()
	assert.ErrorIs(t, err, ErrNotSupported)
	d, err := Open("rxe0")
	assert.ErrorIs(t, err, ErrNotSupported)
	assert.Nil(t, d)
	assert.Empty(t, Live())
}
