package history_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/perf/storage/app"
	"golang.org/x/perf/storage/db"
	"golang.org/x/perf/storage/fs"

	"github.com/rdmabench/rdmabench/internal/history"
)

// resultFile is a small result file of one run: two benchmarks, count 2.
func resultFile(fw string, lat, bw float64) []byte {
	return fmt.Appendf(nil, `goos: linux
rdma-device: rxe0
rdma-provider: rxe
rdma-fw: %s
kernel: 6.1.0
Unit p50-ns better=lower
Unit msgs/s better=higher
BenchmarkWriteLat/transport=RC/size=8-2 1000 %.0f ns/op %.0f p50-ns 30000 msgs/s
BenchmarkWriteLat/transport=RC/size=8-2 1000 %.0f ns/op %.0f p50-ns 30000 msgs/s
BenchmarkWriteBW/transport=RC/size=65536-2 100 9000 ns/op %.1f MB/s 5000 msgs/s
BenchmarkWriteBW/transport=RC/size=65536-2 100 9000 ns/op %.1f MB/s 5000 msgs/s
`, fw, lat+100, lat, lat+300, lat+200, bw, bw+2)
}

func openLocal(t *testing.T) *history.Local {
	t.Helper()
	l, err := history.OpenLocal(filepath.Join(t.TempDir(), "history.db"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func TestLocalStoreAndSeries(t *testing.T) {
	ctx := context.Background()
	l := openLocal(t)
	t0 := time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC)
	// stored out of order: the series follow run-time
	_, err := history.Put(ctx, l, "b.txt", resultFile("1.1", 31000, 60), history.Labels{Commit: "bbb", Host: "h", RunTime: t0.Add(time.Hour)})
	require.NoError(t, err)
	_, err = history.Put(ctx, l, "a.txt", resultFile("1.0", 30000, 50), history.Labels{Commit: "aaa", Host: "h", RunTime: t0, Extra: map[string]string{"fabric-link": "n1-n2"}})
	require.NoError(t, err)

	_, err = history.Put(ctx, l, "again.txt", resultFile("1.0", 30000, 50), history.Labels{Commit: "zzz", RunTime: t0})
	assert.ErrorIs(t, err, history.ErrStored, "the same content is not stored twice, whatever its labels")
	_, err = history.Put(ctx, l, "empty.txt", []byte("goos: linux\n"), history.Labels{})
	assert.ErrorIs(t, err, history.ErrNoResults)
	_, err = history.Put(ctx, l, "bad.txt", resultFile("1", 1, 1), history.Labels{Extra: map[string]string{"Bad Key": "x"}})
	assert.ErrorContains(t, err, `"Bad Key"`)

	series, err := history.Load(ctx, l, "", history.Options{})
	require.NoError(t, err)
	require.Len(t, series, 2)
	bw, lat := series[0], series[1]
	assert.Equal(t, "WriteBW/transport=RC/size=65536-2", bw.Name)
	assert.Equal(t, "MB/s", bw.Unit, "a stream's deciding unit is MB/s")
	assert.True(t, bw.HigherBetter)
	assert.Equal(t, "p50-ns", lat.Unit, "a latency's deciding unit is p50-ns")
	assert.False(t, lat.HigherBetter)
	assert.Equal(t, "host=h rdma-device=rxe0 rdma-provider=rxe", lat.Env)
	require.Len(t, lat.Points, 2)
	assert.Equal(t, 30100.0, lat.Points[0].Median, "the median of the run's results")
	assert.Equal(t, 30000.0, lat.Points[0].Best, "the lowest latency of the run")
	assert.Equal(t, 2, lat.Points[0].N)
	assert.Equal(t, 31100.0, lat.Points[1].Median)
	assert.Equal(t, 52.0, bw.Points[0].Best, "the highest rate of the run")
	assert.Equal(t, map[string]string{"commit": "aaa", "rdma-fw": "1.0", "kernel": "6.1.0"}, lat.Points[0].Steps)
	assert.Equal(t, "bbb", lat.Points[1].Steps["commit"])
	assert.Equal(t, "2026-12-06T20:00:00Z", lat.Points[0].RunTime)

	// the labels are perfdata labels: a query selects on them
	q := l.Query(ctx, "fabric-link:n1-n2 commit:aaa")
	n := 0
	for q.Next() {
		n++
		assert.Equal(t, "a.txt", q.Result().Labels["upload-file"])
	}
	require.NoError(t, q.Err())
	q.Close()
	assert.Equal(t, 4, n, "every result line of a.txt")

	series, err = history.Load(ctx, l, "", history.Options{Decide: map[string]string{"WriteLat": "msgs/s"}})
	require.NoError(t, err)
	assert.Equal(t, "msgs/s", series[1].Unit)
	assert.True(t, series[1].HigherBetter)
}

// perfdata starts x/perf's perfdata server (storage/app: what
// localperfdata runs) on loopback with an in-memory SQLite database.
func perfdata(t *testing.T) *httptest.Server {
	t.Helper()
	d, err := db.OpenSQL("sqlite3", "file:"+filepath.Join(t.TempDir(), "server.db"))
	require.NoError(t, err)
	a := &app.App{DB: d, FS: fs.NewMemFS(), Auth: func(http.ResponseWriter, *http.Request) (string, error) { return "", nil }}
	mux := http.NewServeMux()
	a.RegisterOnMux(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); d.Close() })
	return srv
}

func TestRemoteUpload(t *testing.T) {
	ctx := context.Background()
	srv := perfdata(t)
	r := history.NewRemote(srv.URL, 10*time.Second)
	t0 := time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC)
	for i := range 3 {
		_, err := history.Put(ctx, r, fmt.Sprintf("run%d.txt", i), resultFile("1.0", 30000+float64(i)*1000, 50), history.Labels{Commit: fmt.Sprint("c", i), Host: "h", RunTime: t0.Add(time.Duration(i) * time.Hour)})
		require.NoError(t, err)
	}
	_, err := history.Put(ctx, r, "dup.txt", resultFile("1.0", 30000, 50), history.Labels{})
	assert.ErrorIs(t, err, history.ErrStored, "the server's copy is looked up too")
	series, err := history.Load(ctx, r, "rdma-device:rxe0", history.Options{})
	require.NoError(t, err)
	require.Len(t, series, 2)
	all, err := history.Load(ctx, r, "", history.Options{})
	require.NoError(t, err)
	assert.Equal(t, series, all, "every upload")
	require.Len(t, series[1].Points, 3)
	for i, p := range series[1].Points {
		assert.Equal(t, 30100+float64(i)*1000, p.Median)
		assert.Equal(t, fmt.Sprint("c", i), p.Steps["commit"])
	}
}

func TestRemoteFailures(t *testing.T) {
	// a port nobody listens on: the connection is refused
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String()
	ln.Close()
	// a server that takes the request and never answers
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	// a server that answers with an error
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "disk full", 500) }))
	t.Cleanup(broken.Close)

	for _, url := range []string{refused, hang.URL, broken.URL} {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := history.Put(ctx, history.NewRemote(url, 2*time.Second), "x.txt", resultFile("1", 1, 1), history.Labels{})
		cancel()
		require.Error(t, err, url)
		assert.Less(t, time.Since(start), 5*time.Second, "%s: the upload ends by its deadline", url)
		assert.False(t, errors.Is(err, history.ErrStored))
		assert.Contains(t, err.Error(), "127.0.0.1", "the error names the server")
	}
}

// TestFabricLinks: a fabric stream's links are series of their own, so
// one cable's drift shows across nightly runs.
func TestFabricLinks(t *testing.T) {
	ctx := context.Background()
	l := openLocal(t)
	for i, f := range []string{"healthy-2026-12-03.txt", "faults-2026-12-03.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "fabric-run", f))
		require.NoError(t, err)
		_, err = history.Put(ctx, l, f, b, history.Labels{Host: "ctl", RunTime: time.Date(2026, 12, 3, i, 0, 0, 0, time.UTC)})
		require.NoError(t, err)
	}
	series, err := history.Load(ctx, l, "", history.Options{})
	require.NoError(t, err)
	links := map[string]bool{}
	for _, s := range series {
		require.True(t, strings.HasPrefix(s.Name, "Fabric/src="), s.Name)
		assert.Len(t, s.Points, 2, s.Name)
		link, _, _ := strings.Cut(strings.TrimPrefix(s.Name, "Fabric/"), "/bench=")
		links[link] = true
	}
	assert.Len(t, links, 12, "every directed link of the four nodes")
}
