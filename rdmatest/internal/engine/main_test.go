package engine

import (
	"flag"
	"os"
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest/internal/flags"
)

// TestMain registers the -rdma.* flags, which this test binary takes
// (ci/devtests.sh passes -rdma.timeout, ci/twohost.sh -rdma.peer):
// nothing registers them on import.
func TestMain(m *testing.M) {
	flags.Register(flag.CommandLine)
	os.Exit(m.Run())
}
