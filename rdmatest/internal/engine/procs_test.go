package engine

import (
	"flag"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/flags"
	"github.com/rdmabench/rdmabench/verbs"
)

func TestBusyGoroutines(t *testing.T) {
	local, remote := &Dev{}, &Dev{Opts: flags.Options{Peer: "peer:18515"}}
	cases := []struct {
		name      string
		s         Spec
		streaming bool
		want      int
	}{
		{"write ping-pong: passive side echoes", Spec{Op: verbs.OpWrite}, false, 2},
		{"send ping-pong: passive side echoes", Spec{Op: verbs.OpSend}, false, 2},
		{"read round trip: the NIC answers", Spec{Op: verbs.OpRead}, false, 1},
		{"atomic round trip: the NIC answers", Spec{Op: verbs.OpFetchAdd}, false, 1},
		{"send stream: passive side consumes receives", Spec{Op: verbs.OpSend}, true, 2},
		{"write-imm stream: passive side consumes receives", Spec{Op: verbs.OpWriteImm}, true, 2},
		{"write stream: the NIC serves it", Spec{Op: verbs.OpWrite}, true, 1},
		{"bidir write stream: passive side mirrors", Spec{Op: verbs.OpWrite, Bidir: true}, true, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := withKind(c.s, c.streaming)
			assert.Equal(t, c.want, s.busyGoroutines(local))
			assert.Equal(t, 1, s.busyGoroutines(remote), "a remote peer plays the passive side")
		})
	}
}

func TestCheckProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	err := checkProcs(2)
	require.Error(t, err)
	assert.True(t, IsUnsupported(err), "skipped, not failed: %v", err)
	assert.Contains(t, err.Error(), "2 goroutines")
	assert.Contains(t, err.Error(), "GOMAXPROCS is 1")
	assert.NoError(t, checkProcs(1))
	if runtime.NumCPU() >= 2 {
		runtime.GOMAXPROCS(2)
		assert.NoError(t, checkProcs(2))
	}
	assert.Error(t, checkProcs(runtime.NumCPU()+1), "more spinners than CPUs")
}

func TestApplyCPUFlag(t *testing.T) {
	set := func(name, v string) {
		f := flag.Lookup(name)
		require.NotNil(t, f, name)
		old := f.Value.String()
		require.NoError(t, f.Value.Set(v))
		t.Cleanup(func() { _ = f.Value.Set(old) })
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))

	set("test.bench", "")
	set("test.cpu", "1,2")
	assert.NoError(t, applyCPUFlag(), "tests apply every value themselves")

	set("test.bench", ".")
	err := applyCPUFlag()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-test.cpu 1,2")
	assert.Contains(t, err.Error(), "golang/go#49980")

	set("test.cpu", "3")
	require.NoError(t, applyCPUFlag())
	assert.Equal(t, 3, runtime.GOMAXPROCS(0), "a single value is applied before the first benchmark")

	set("test.cpu", "0")
	assert.ErrorContains(t, applyCPUFlag(), `-test.cpu "0"`)
}
