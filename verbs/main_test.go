package verbs_test

import (
	"flag"
	"os"
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// TestMain registers rdmatest's -rdma.* flags (the device tests take
// -rdma.dev, -rdma.timeout, …, as ci/devtests.sh passes them): nothing
// registers flags on import.
func TestMain(m *testing.M) {
	rdmatest.RegisterFlags(flag.CommandLine)
	os.Exit(m.Run())
}
