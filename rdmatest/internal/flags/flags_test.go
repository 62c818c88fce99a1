package flags

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

	"github.com/rdmabench/rdmabench/verbs"
)

// optsChildEnv makes TestMain print what a program that registers no
// flag gets (TestOptsWithoutFlags) instead of running the tests.
const optsChildEnv = "RDMATEST_OPTS_CHILD"

// TestMain runs printOpts instead of the tests in the child of
// TestOptsWithoutFlags. It registers no flag: nothing registers them on
// import, and a program that registers none is what the child shows.
func TestMain(m *testing.M) {
	if os.Getenv(optsChildEnv) == "1" {
		printOpts()
		os.Exit(0)
	}
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

func TestRegister(t *testing.T) {
	all := flag.NewFlagSet("bench", flag.ContinueOnError)
	Register(all)
	assert.Equal(t, []string{"rdma.clock", "rdma.cm", "rdma.cpus", "rdma.dev", "rdma.gid", "rdma.hlog", "rdma.peer", "rdma.peer-token", "rdma.peer-token-file", "rdma.port", "rdma.signal-all", "rdma.timeout", "rdma.warmup"}, rdmaFlags(all))

	dev := flag.NewFlagSet("peer", flag.ContinueOnError)
	RegisterDevice(dev)
	assert.Equal(t, []string{"rdma.clock", "rdma.cpus", "rdma.dev", "rdma.gid", "rdma.port", "rdma.timeout"}, rdmaFlags(dev))

	all.SetOutput(io.Discard)
	assert.Panics(t, func() { Register(all) }, "a second registration on the same set")

	// The sets share the values Opts reads; a registration does not
	// reset them to the environment's.
	d, port, timeout, peer := *flagDev, *flagPort, *flagTimeout, *flagPeer
	t.Cleanup(func() { *flagDev, *flagPort, *flagTimeout, *flagPeer = d, port, timeout, peer })
	require.NoError(t, all.Parse([]string{"-rdma.port", "3", "-rdma.peer", "hostB:18515"}))
	require.NoError(t, dev.Parse([]string{"-rdma.dev", "mlx9", "-rdma.timeout", "3s"}))
	RegisterDevice(flag.NewFlagSet("late", flag.ContinueOnError))
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
		"RDMA_PEER=hostB:18515", "RDMA_CPUS=none", "RDMA_PEER_TOKEN=0123456789abcdef", "RDMA_SIGNAL_ALL=true", "RDMA_WARMUP=0", "RDMA_CM=1", "RDMA_CLOCK=monotonic")
	assert.Empty(t, c.Registered, "nothing is registered on import")
	assert.Empty(t, c.Err)
	assert.Equal(t, Options{Device: "mlx9", Port: 2, GIDIndex: 3, Timeout: 7 * time.Second, HlogDir: "/tmp/h",
		Peer: "hostB:18515", PeerToken: "0123456789abcdef", CPUs: "none", SignalAll: true, CM: CMOn, Clock: verbs.ClockMonotonic}, c.Opts)

	c = child()
	assert.Empty(t, c.Err)
	assert.Equal(t, Options{Port: 1, GIDIndex: -1, Timeout: 10 * time.Second, Warmup: 1}, c.Opts, "the defaults")

	c = child("RDMA_CM=auto")
	assert.Empty(t, c.Err)
	assert.Equal(t, CMAuto, c.Opts.CM)
	c = child("RDMA_CM=false")
	assert.Equal(t, CMOff, c.Opts.CM)

	c = child("RDMA_PORT=abc", "RDMA_TIMEOUT=fast", "RDMA_SIGNAL_ALL=sometimes", "RDMA_WARMUP=-1", "RDMA_CM=maybe", "RDMA_CLOCK=rdtsc")
	assert.Contains(t, c.Err, `RDMA_CLOCK="rdtsc" is not auto, tsc or monotonic`)
	assert.Contains(t, c.Err, `RDMA_CM="maybe" is not a boolean (1, true, 0 or false) or auto`)
	assert.Contains(t, c.Err, `RDMA_SIGNAL_ALL="sometimes" is not a boolean`)
	assert.Contains(t, c.Err, "-rdma.warmup -1 is out of range 0 … 1000000")
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

// TestBadFlags: every malformed flag or environment value is refused by
// Opts with a message naming the value and the limit.
func TestBadFlags(t *testing.T) {
	hlogFile := filepath.Join(t.TempDir(), "results.txt")
	require.NoError(t, os.WriteFile(hlogFile, nil, 0o644))
	for _, tc := range []struct {
		name string
		err  func() error
		want []string
	}{
		{name: "port 0", err: opts(t, func() { *flagPort = 0 }), want: []string{"-rdma.port 0", "1..255"}},
		{name: "port 256", err: opts(t, func() { *flagPort = 256 }), want: []string{"-rdma.port 256", "1..255"}},
		{name: "gid -2", err: opts(t, func() { *flagGID = -2 }), want: []string{"-rdma.gid -2", "-1", "≥ 0"}},
		{name: "timeout 0", err: opts(t, func() { *flagTimeout = 0 }), want: []string{"-rdma.timeout 0s", "out of range (0, 24h0m0s]"}},
		{name: "timeout negative", err: opts(t, func() { *flagTimeout = -time.Second }), want: []string{"-rdma.timeout -1s", "out of range (0, 24h0m0s]"}},
		{name: "timeout above a day", err: opts(t, func() { *flagTimeout = 25 * time.Hour }), want: []string{"-rdma.timeout 25h0m0s", "out of range (0, 24h0m0s]"}},
		{name: "peer port 99999", err: opts(t, func() { *flagPeer = "10.0.0.2:99999" }), want: []string{`-rdma.peer "10.0.0.2:99999"`, "port 1..65535"}},
		{name: "peer without host", err: opts(t, func() { *flagPeer = ":18515" }), want: []string{`-rdma.peer ":18515"`, "a host and a port"}},
		{name: "hlog names a file", err: opts(t, func() { *flagHlog = hlogFile }), want: []string{"-rdma.hlog", "is a file, not a directory"}},
		{name: "env RDMA_REQUIRE=yes", err: opts(t, func() { t.Setenv("RDMA_REQUIRE", "yes") }), want: []string{`RDMA_REQUIRE="yes"`, "not a boolean"}},
		{name: "env RDMA_PORT=abc", err: opts(t, func() { envInt("RDMA_PORT", 1) }), want: []string{`RDMA_PORT="abc"`, "not an integer"}},
		{name: "env RDMA_TIMEOUT=fast", err: opts(t, func() { envDuration("RDMA_TIMEOUT", time.Second) }), want: []string{`RDMA_TIMEOUT="fast"`, "not a duration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

// TestGoodFlags makes sure TestBadFlags fails for the reason each row
// names and not because the base values are themselves refused.
func TestGoodFlags(t *testing.T) {
	assert.NoError(t, opts(t, func() {})())
}

// opts returns a function that runs set (which changes the flag values,
// or records environment errors, with RDMA_PORT=abc and
// RDMA_TIMEOUT=fast set), calls Opts, and restores everything.
func opts(t *testing.T, set func()) func() error {
	return func() error {
		dev, port, gid, timeout, hlog, peer := *flagDev, *flagPort, *flagGID, *flagTimeout, *flagHlog, *flagPeer
		saved := envErrs
		t.Setenv("RDMA_PORT", "abc")
		t.Setenv("RDMA_TIMEOUT", "fast")
		defer func() {
			*flagDev, *flagPort, *flagGID, *flagTimeout, *flagHlog, *flagPeer = dev, port, gid, timeout, hlog, peer
			envErrs = saved
		}()
		envErrs = nil
		*flagPort, *flagGID, *flagTimeout = 1, -1, time.Second
		set()
		_, err := Opts()
		return err
	}
}

func TestCMFlag(t *testing.T) {
	saved := *flagCM
	t.Cleanup(func() { *flagCM = saved })
	for _, tc := range []struct {
		args []string
		want CMMode
	}{
		{nil, CMAuto}, {[]string{"-rdma.cm"}, CMOn}, {[]string{"-rdma.cm=true"}, CMOn}, {[]string{"-rdma.cm=0"}, CMOff},
		{[]string{"-rdma.cm=auto"}, CMAuto},
	} {
		*flagCM = CMAuto
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		Register(fs)
		require.NoError(t, fs.Parse(tc.args), "%v", tc.args)
		o, err := Opts()
		require.NoError(t, err)
		assert.Equal(t, tc.want, o.CM, "%v", tc.args)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Register(fs)
	err := fs.Parse([]string{"-rdma.cm=sometimes"})
	assert.ErrorContains(t, err, `invalid boolean value "sometimes" for -rdma.cm: want a boolean (1, true, 0 or false) or auto, not "sometimes"`)

	// Use: auto means rdma_cm only on iWARP.
	assert.True(t, CMAuto.Use(true))
	assert.False(t, CMAuto.Use(false))
	assert.True(t, CMOn.Use(false))
	assert.False(t, CMOff.Use(true))
	assert.Equal(t, "auto", CMAuto.String())
	assert.Equal(t, "true", CMOn.String())
	assert.Equal(t, "false", CMOff.String())
}
