package main

import (
	"flag"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// helpChildEnv makes TestMain run the command itself, as the rdmapeer
// binary does (nothing registered on flag.CommandLine), with -help.
const helpChildEnv = "RDMAPEER_HELP_CHILD"

// TestMain registers the -rdma.* flags for this test binary, whose tests
// open the device with rdmatest.Device (ci/devtests.sh passes
// -rdma.timeout).
func TestMain(m *testing.M) {
	if os.Getenv(helpChildEnv) == "1" {
		os.Exit(run([]string{"-help"}))
	}
	rdmatest.RegisterFlags(flag.CommandLine)
	os.Exit(m.Run())
}

// peerFlags are rdmapeer's flags: its own and the device flags.
var peerFlags = []string{
	"agent", "agent-port",
	"hello-timeout", "idle", "listen", "max-clients", "max-conns", "max-conns-per-host", "max-cqe", "max-hosts", "max-mem", "max-qps", "max-wrs",
	"node", "nodes", "nodes-file", "prefix-v4", "prefix-v6",
	"rdma.clock", "rdma.cpus", "rdma.dev", "rdma.gid", "rdma.port", "rdma.timeout", "run-timeout",
	"token-file", "total-cqe", "total-mem", "total-qps", "total-wrs", "trusted-network",
}

// TestHelpListsOwnFlags: `rdmapeer -help` lists rdmapeer's flags, each
// once, and none of the benchmarks' (-rdma.peer, -rdma.hlog,
// -rdma.peer-token, bench_test's -rdma.sizes …).
func TestHelpListsOwnFlags(t *testing.T) {
	fs := flag.NewFlagSet("rdmapeer", flag.ContinueOnError)
	_, err := parseFlags(fs, []string{"-help"})
	require.ErrorIs(t, err, flag.ErrHelp)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	assert.Equal(t, peerFlags, names)

	// The command itself, in a process where nothing else registered
	// flags on flag.CommandLine.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helpChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(string(out), -1) {
		listed = append(listed, m[1])
	}
	sort.Strings(listed)
	assert.Equal(t, peerFlags, listed, "each flag once:\n%s", out)
	for _, benchOnly := range []string{"rdma.peer", "rdma.hlog", "rdma.peer-token", "rdma.sizes", "rdma.qd", "rdma.full", "token"} {
		assert.NotContains(t, listed, benchOnly)
	}
}
