package turn

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// takeTurn is the engine's use of Take: b fails on its error.
func takeTurn(b *testing.B) {
	b.Helper()
	if err := Take(b); err != nil {
		b.Fatal(err)
	}
}

// TestTake plays ci/interleave.sh's side of RDMA_TURN: one "ready" per
// run (not per call of the b.N ramp), answered by "go"; a wait that gets
// no answer fails the run at Wait; "exit" at the end.
func TestTake(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	require.NoError(t, unix.Mkfifo(in, 0o600))
	require.NoError(t, unix.Mkfifo(out, 0o600))
	t.Setenv(turnEnv, in+","+out)
	fin, err := os.OpenFile(in, os.O_RDWR, 0)
	require.NoError(t, err)
	defer fin.Close()
	fout, err := os.OpenFile(out, os.O_RDWR, 0)
	require.NoError(t, err)
	defer fout.Close()
	msgs := make(chan string, 16)
	answer := make(chan bool, 16)
	go func() {
		r := bufio.NewReader(fout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			msgs <- strings.TrimSpace(line)
			if strings.HasPrefix(line, "ready ") && <-answer {
				fin.WriteString("go\n")
			}
		}
	}()

	calls := 0
	answer <- true
	r := testing.Benchmark(func(b *testing.B) {
		takeTurn(b)
		takeTurn(b) // a second entry of the same call: no second turn
		calls++
		time.Sleep(time.Duration(b.N) * time.Microsecond)
	})
	require.Positive(t, r.N, "the run failed")
	assert.Greater(t, calls, 1, "the b.N ramp calls the function again")
	assert.True(t, strings.HasPrefix(<-msgs, "ready"))
	assert.Empty(t, msgs, "one turn per run, not per call")

	defer func(w time.Duration) { Wait = w }(Wait)
	Wait = 50 * time.Millisecond
	answer <- false
	start := time.Now()
	r = testing.Benchmark(func(b *testing.B) { takeTurn(b) })
	assert.Zero(t, r.N, "a turn that never comes fails the run")
	assert.Less(t, time.Since(start), 5*time.Second)
	<-msgs

	End()
	assert.Equal(t, "exit", <-msgs)
}
