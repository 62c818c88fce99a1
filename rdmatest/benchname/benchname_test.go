package benchname

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Name
		str  string // String(); "" when it is in without the prefix
	}{
		{"BenchmarkWriteBW/transport=RC/size=64/qd=128-2",
			Name{"WriteBW", []Part{{"transport", "RC"}, {"size", "64"}, {"qd", "128"}}, 2}, "WriteBW/transport=RC/size=64/qd=128-2"},
		{"WriteBW/transport=RC/size=64/qd=128-2",
			Name{"WriteBW", []Part{{"transport", "RC"}, {"size", "64"}, {"qd", "128"}}, 2}, ""},
		{"SendLat/transport=RC/size=8/inline=false/mode=poll",
			Name{"SendLat", []Part{{"transport", "RC"}, {"size", "8"}, {"inline", "false"}, {"mode", "poll"}}, 0}, ""},
		{"WriteLatGap/transport=RC/size=8/gap=10µs-16",
			Name{"WriteLatGap", []Part{{"transport", "RC"}, {"size", "8"}, {"gap", "10µs"}}, 16}, ""},
		{"SendLoad/transport=RC/rate=25%-2", Name{"SendLoad", []Part{{"transport", "RC"}, {"rate", "25%"}}, 2}, ""},
		{"X/a=b-c", Name{"X", []Part{{"a", "b-c"}}, 0}, ""},
		{"X/a=b-3-2", Name{"X", []Part{{"a", "b-3"}}, 2}, ""},
		{"X/a=", Name{"X", []Part{{"a", ""}}, 0}, ""},
		{"X/a=b=c", Name{"X", []Part{{"a", "b=c"}}, 0}, ""},
		{"X-", Name{"X-", nil, 0}, ""},
		{"ReadBW-8", Name{"ReadBW", nil, 8}, ""},
		{"ReadBW", Name{"ReadBW", nil, 0}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			str := tt.str
			if str == "" {
				str = tt.in
			}
			assert.Equal(t, str, got.String())
			back, err := Parse(got.String())
			require.NoError(t, err, "round trip")
			assert.Equal(t, got, back, "Parse(String())")
		})
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct{ name, in, msg string }{
		{"empty", "", "empty family name"},
		{"prefix only", "Benchmark", "empty family name"},
		{"no base", "/a=b", "empty family name"},
		{"base with '='", "size=8", "holds '='"},
		{"prefix twice", "BenchmarkBenchmarkX/a=b", "starts with"},
		{"part without '='", "X/transport", `part "transport" is not key=value`},
		{"empty part", "X//a=b", `part "" is not key=value`},
		{"empty key", "X/=RC", `part "=RC" is not key=value`},
		{"procs zero", "X/a=b-0", "bad -GOMAXPROCS suffix"},
		{"procs leading zero", "X/a=b-02", "bad -GOMAXPROCS suffix"},
		{"procs overflow", "X/a=b-99999999999999999999", "bad -GOMAXPROCS suffix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Parse(tt.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
			assert.Equal(t, Name{}, n)
		})
	}
}

// TestWith: the builder that bench_test forms sub-benchmark names with.
func TestWith(t *testing.T) {
	var root Name
	a := root.With("transport", "RC")
	b1, b2 := a.With("size", "8"), a.With("size", "64")
	assert.Equal(t, "transport=RC/size=8", b1.Sub(), "a prefix grows into several names")
	assert.Equal(t, "transport=RC/size=64", b2.Sub())
	assert.Equal(t, "transport=RC", a.Sub(), "With leaves its receiver alone")
	assert.Empty(t, root.Parts)
	assert.Empty(t, root.Sub())

	c := b1.With("transport", "UC")
	assert.Equal(t, "transport=UC/size=8", c.Sub(), "an existing key keeps its place")
	assert.Equal(t, "transport=RC/size=8", b1.Sub())

	full := Name{Base: "WriteLat", Parts: b1.Parts, Procs: 2}
	assert.Equal(t, "WriteLat/transport=RC/size=8-2", full.String())
	assert.Equal(t, []string{"BenchmarkWriteLat", "transport=RC", "size=8"}, full.Levels())
	assert.Equal(t, []string{"transport", "size"}, full.Keys())
	v, ok := full.Get("size")
	assert.True(t, ok)
	assert.Equal(t, "8", v)
	_, ok = full.Get("qd")
	assert.False(t, ok)

	for _, bad := range []struct{ key, value string }{
		{"", "x"}, {"a/b", "x"}, {"a=b", "x"}, {"k", "a/b"}, {"k", "a b"}, {"k", "a\x00"}, {"k", "x-2"},
	} {
		assert.Panics(t, func() { root.With(bad.key, bad.value) }, "%q=%q", bad.key, bad.value)
	}
	assert.NotPanics(t, func() { root.With("gap", "10µs").With("rate", "25%").With("x", "b-c") })
}

func TestHlogFile(t *testing.T) {
	tests := []struct{ name, file string }{
		{"BenchmarkWriteLat/transport=RC/size=8", "BenchmarkWriteLat_transport=RC_size=8.hlog"},
		{"BenchmarkWriteLatGap/transport=RC/size=8/gap=10µs", "BenchmarkWriteLatGap_transport=RC_size=8_gap=10_s.hlog"},
		{"BenchmarkSendLoad/transport=RC/rate=25%", "BenchmarkSendLoad_transport=RC_rate=25_.hlog"},
		{"BenchmarkThreads/x", "BenchmarkThreads_x.hlog"},
		{"a+b.c-d_e", "a+b.c-d_e.hlog"},
		{"a/ /b", "a_b.hlog"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.file, HlogFile(tt.name), tt.name)
	}
}

func TestParseHlogFile(t *testing.T) {
	tests := []struct {
		file string
		want Name
	}{
		{"BenchmarkWriteLat_transport=RC_size=8.hlog", Name{Base: "WriteLat", Parts: []Part{{"transport", "RC"}, {"size", "8"}}}},
		{"BenchmarkWriteLat_transport=RC_size=8", Name{Base: "WriteLat", Parts: []Part{{"transport", "RC"}, {"size", "8"}}}},
		{"BenchmarkWriteLatGap_size=8_gap=10_s", Name{Base: "WriteLatGap", Parts: []Part{{"size", "8"}, {"gap", "10_s"}}}},
		{"BenchmarkSendLoad_rate=25_", Name{Base: "SendLoad", Parts: []Part{{"rate", "25_"}}}},
		{"BenchmarkThreads_x", Name{Base: "Threads_x"}},
		{"mylog.hlog", Name{Base: "mylog"}},
	}
	for _, tt := range tests {
		got, err := ParseHlogFile(tt.file)
		require.NoError(t, err, tt.file)
		assert.Equal(t, tt.want, got, tt.file)
	}
	for _, bad := range []string{"", ".hlog", "Benchmark.hlog", "_a=b"} {
		_, err := ParseHlogFile(bad)
		assert.Error(t, err, bad)
	}
	// A name in the grammar whose values are file-safe comes back whole.
	n, err := Parse("SendBW/transport=RC/size=4096/qd=128/mode=poll")
	require.NoError(t, err)
	back, err := ParseHlogFile(HlogFile(Prefix + n.String()))
	require.NoError(t, err)
	assert.Equal(t, n, back)
}

// FuzzParse: whatever Parse accepts formats back to a name that parses
// to the same Name.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"BenchmarkWriteBW/transport=RC/size=64/qd=128-2", "X/a=b-3-2", "X/a=b-c", "X-", "X/a=b-0", "/a=b", "X//", "Benchmark", "BenchmarkBenchmarkX"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		back, err := Parse(n.String())
		require.NoError(t, err, "%q → %q", s, n.String())
		assert.Equal(t, n, back, "%q → %q", s, n.String())
	})
}
