package scenario_test

import (
	"fmt"

	"github.com/rdmabench/rdmabench/rdmatest/scenario"
)

// A size list as -rdma.sizes takes it: a range of powers of two, a size
// with a suffix, and a repeat that is dropped; a size above MaxSize is
// refused with the value and the limit.
func ExampleParseSizes() {
	sizes, err := scenario.ParseSizes("8-64,4K,16")
	fmt.Println(sizes, err)
	_, err = scenario.ParseSizes("2G")
	fmt.Println(err)
	// Output:
	// [8 16 32 64 4096] <nil>
	// rdmatest: message size "2G" is out of range 1..1073741824 bytes
}
