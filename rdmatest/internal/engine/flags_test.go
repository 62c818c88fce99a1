package engine

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// optsChildEnv makes TestMain print what a program that registers no
// flag gets (TestOptsWithoutFlags) instead of running the tests.
const optsChildEnv = "RDMATEST_OPTS_CHILD"

// TestMain registers the -rdma.* flags, which this test binary takes
// (ci/devtests.sh passes -rdma.timeout, ci/twohost.sh -rdma.peer):
// nothing registers them on import.
func TestMain(m *testing.M) {
	if os.Getenv(optsChildEnv) == "1" {
		printOpts()
		os.Exit(0)
	}
	RegisterFlags(flag.CommandLine)
	os.Exit(m.Run())
}

// childOpts is what printOpts reports.
type childOpts struct {
	Opts       Options
	Err        string
	Registered []string // -rdma.* flags on flag.CommandLine
}

func printOpts() {
	var c childOpts
	o, err := Opts()
	c.Opts = o
	if err != nil {
		c.Err = err.Error()
	}
	c.Registered = rdmaFlags(flag.CommandLine)
	_ = json.NewEncoder(os.Stdout).Encode(c)
}

// rdmaFlags returns the names of the -rdma.* flags of fs, sorted.
func rdmaFlags(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "rdma.") {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	return names
}

func TestRegisterFlags(t *testing.T) {
	all := flag.NewFlagSet("bench", flag.ContinueOnError)
	RegisterFlags(all)
	assert.Equal(t, []string{"rdma.cpus", "rdma.dev", "rdma.gid", "rdma.hlog", "rdma.peer", "rdma.peer-token", "rdma.peer-token-file", "rdma.port", "rdma.timeout"}, rdmaFlags(all))

	dev := flag.NewFlagSet("peer", flag.ContinueOnError)
	RegisterDeviceFlags(dev)
	assert.Equal(t, []string{"rdma.cpus", "rdma.dev", "rdma.gid", "rdma.port", "rdma.timeout"}, rdmaFlags(dev))

	all.SetOutput(io.Discard)
	assert.Panics(t, func() { RegisterFlags(all) }, "a second registration on the same set")

	// The sets share the values Opts reads; a registration does not
	// reset them to the environment's.
	d, port, timeout, peer := *flagDev, *flagPort, *flagTimeout, *flagPeer
	t.Cleanup(func() { *flagDev, *flagPort, *flagTimeout, *flagPeer = d, port, timeout, peer })
	require.NoError(t, all.Parse([]string{"-rdma.port", "3", "-rdma.peer", "hostB:18515"}))
	require.NoError(t, dev.Parse([]string{"-rdma.dev", "mlx9", "-rdma.timeout", "3s"}))
	RegisterDeviceFlags(flag.NewFlagSet("late", flag.ContinueOnError))
	o, err := Opts()
	require.NoError(t, err)
	assert.Equal(t, "mlx9", o.Device)
	assert.Equal(t, 3, o.Port)
	assert.Equal(t, 3*time.Second, o.Timeout)
	assert.Equal(t, "hostB:18515", o.Peer)
}

// TestOptsWithoutFlags: a program that registers no flag (this test
// binary, run with optsChildEnv) has none on flag.CommandLine, and Opts
// gives it the environment, or the defaults, checked as usual.
func TestOptsWithoutFlags(t *testing.T) {
	child := func(env ...string) childOpts {
		t.Helper()
		cmd := exec.Command(os.Args[0])
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "RDMA_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, optsChildEnv+"=1")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.Output()
		require.NoError(t, err)
		var c childOpts
		require.NoError(t, json.Unmarshal(out, &c), "%s", out)
		return c
	}
	c := child("RDMA_DEVICE=mlx9", "RDMA_PORT=2", "RDMA_GID_INDEX=3", "RDMA_TIMEOUT=7s", "RDMA_HLOG_DIR=/tmp/h",
		"RDMA_PEER=hostB:18515", "RDMA_CPUS=none", "RDMA_PEER_TOKEN=0123456789abcdef")
	assert.Empty(t, c.Registered, "nothing is registered on import")
	assert.Empty(t, c.Err)
	assert.Equal(t, Options{Device: "mlx9", Port: 2, GIDIndex: 3, Timeout: 7 * time.Second, HlogDir: "/tmp/h",
		Peer: "hostB:18515", PeerToken: "0123456789abcdef", CPUs: "none"}, c.Opts)

	c = child()
	assert.Empty(t, c.Err)
	assert.Equal(t, Options{Port: 1, GIDIndex: -1, Timeout: 10 * time.Second}, c.Opts, "the defaults")

	c = child("RDMA_PORT=abc", "RDMA_TIMEOUT=fast")
	assert.Contains(t, c.Err, `RDMA_PORT="abc" is not an integer`)
	assert.Contains(t, c.Err, `RDMA_TIMEOUT="fast" is not a duration`)
	assert.Equal(t, 1, c.Opts.Port, "the default")
	assert.Equal(t, 10*time.Second, c.Opts.Timeout, "the default")
}

func TestPeerToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	good := write("good", "s3cret\nignored second line\n")
	for _, tt := range []struct {
		name, token, file, want, err string
	}{
		{"flag or environment", "t0k", "", "t0k", ""},
		{"none", "", "", "", ""},
		{"file, first line trimmed", "", good, "s3cret", ""},
		{"both", "t0k", good, "", "both -rdma.peer-token and -rdma.peer-token-file"},
		{"missing file", "", filepath.Join(dir, "nope"), "", "-rdma.peer-token-file: open"},
		{"empty file", "", write("empty", "\n"), "", "its first line is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := peerToken(tt.token, tt.file)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
