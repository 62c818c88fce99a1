package verbs

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAllocBuffer(t *testing.T) {
	b, err := AllocBuffer(100, false)
	require.NoError(t, err)
	page := os.Getpagesize()
	assert.Equal(t, page, b.Len(), "rounded up to one page")
	assert.Len(t, b.Bytes(), page)
	assert.Zero(t, b.Addr()%uint64(page), "page aligned")
	b.Bytes()[page-1] = 0xab // writable to the end
	live := Live()
	require.Len(t, live, 1)
	assert.Equal(t, KindBuffer, live[0].Kind)
	assert.Contains(t, live[0].Created, "buffer_linux_test.go:")

	mr := track(KindMR, b.id) // an MR registered on it blocks Close
	assert.ErrorContains(t, b.Close(), "still open: mr #")
	untrack(mr)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "second Close is a no-op")
	assert.Nil(t, b.Bytes())
	assert.Zero(t, b.Addr())
	assert.Empty(t, Live())

	_, err = AllocBuffer(0, false)
	assert.ErrorContains(t, err, "buffer size 0 is below the minimum 1")
}

func TestParseHugePageSize(t *testing.T) {
	n, err := parseHugePageSize([]byte("MemTotal: 1 kB\nHugepagesize:       2048 kB\n"))
	require.NoError(t, err)
	assert.Equal(t, 2<<20, n)
	_, err = parseHugePageSize([]byte("MemTotal: 1 kB\n"))
	assert.Error(t, err)
}
