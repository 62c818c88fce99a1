package rdmatest_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// TestMain registers the -rdma.* flags (ci/devtests.sh passes
// -rdma.timeout to the example's runs).
func TestMain(m *testing.M) { rdmatest.Main(m) }
