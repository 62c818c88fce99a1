package results_test

import (
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/internal/results"
)

func Example() {
	const file = `rdma-device: rxe0
Unit p99-ns better=lower
BenchmarkWriteLat/transport=RC/size=8-2   1000   30000 ns/op   0.27 MB/s   31000 p99-ns   2 duplicate_request/run
BenchmarkWriteLat/transport=RC/size=8-2   1000   NaN ns/op
`
	rd := results.NewReader(strings.NewReader(file), "results.txt")
	for rd.Scan() {
		res := rd.Result()
		fmt.Println(res.Name, "on", res.Config("rdma-device"))
		for _, v := range res.Values {
			fmt.Printf("  %v %s, better %+d", v.Value, v.Unit, rd.Units().GetBetter(v.Unit))
			if counter, ok := results.Counter(v.Unit); ok {
				fmt.Print(", port counter ", counter)
			}
			fmt.Println()
		}
	}
	if err := rd.Err(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(rd.Skipped())
	// Output:
	// WriteLat/transport=RC/size=8-2 on rxe0
	//   30000 ns/op, better -1
	//   0.27 MB/s, better +1
	//   31000 p99-ns, better -1
	//   2 duplicate_request/run, better +0, port counter duplicate_request
	// WriteLat/transport=RC/size=8-2 on rxe0
	// [results.txt:4: non-finite value NaN ns/op dropped]
}
