package scenario_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/scenario"
	"github.com/rdmabench/rdmabench/verbs"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in    string
		want  scenario.Spec
		canon string // String()
	}{
		{"BenchmarkWriteBW/transport=UC/size=65536/qd=128-8",
			scenario.Spec{Kind: scenario.KindStream, Op: verbs.OpWrite, Transport: verbs.TransportUC, Size: 65536, QD: 128},
			"WriteBW/transport=UC/size=65536/qd=128"},
		{"WriteBW/size=65536", // short form: the rest keeps the defaults
			scenario.Spec{Kind: scenario.KindStream, Op: verbs.OpWrite, Size: 65536}, "WriteBW/size=65536"},
		{"WriteBW/qd=16/size=64", // any order; the canonical name has the matrix's
			scenario.Spec{Kind: scenario.KindStream, Op: verbs.OpWrite, Size: 64, QD: 16}, "WriteBW/size=64/qd=16"},
		{"ReadBW", scenario.Spec{Kind: scenario.KindStream, Op: verbs.OpRead}, "ReadBW"},
		{"SendLat/transport=UD/size=8/inline=true/mode=event",
			scenario.Spec{Kind: scenario.KindLatency, Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 8, Inline: true, Event: true},
			"SendLat/transport=UD/size=8/inline=true/mode=event"},
		{"WriteLatGap/gap=10us", scenario.Spec{Kind: scenario.KindLatency, Op: verbs.OpWrite, Gap: 10 * time.Microsecond}, "WriteLatGap/gap=10µs"},
		{"WriteLatMTU/mtu=1024", scenario.Spec{Kind: scenario.KindLatency, Op: verbs.OpWrite, MTU: 1024}, "WriteLatMTU/mtu=1024"},
		{"AtomicLat/op=cas", scenario.Spec{Kind: scenario.KindLatency, Op: verbs.OpCmpSwap}, "AtomicLat/op=cas"},
		{"AtomicContention/op=fadd/counters=256/stride=64",
			scenario.Spec{Kind: scenario.KindStream, Op: verbs.OpFetchAdd, Counters: 256, Stride: 64, SignalRules: true},
			"AtomicContention/op=fadd/counters=256/stride=64"},
		{"HeaderOnly/size=0/hdr=true/side=responder",
			scenario.Spec{Kind: scenario.KindStream, Op: verbs.OpSendImm, HeaderOnly: true, Inbound: true, SignalRules: true},
			"HeaderOnly/size=0/hdr=true/side=responder"},
		{"SendLoad/rate=12.5%", scenario.Spec{Kind: scenario.KindStream, Op: verbs.OpSend, Load: 0.125}, "SendLoad/rate=12.5%"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := scenario.Parse(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Spec)
			assert.Equal(t, tt.canon, got.String())
			back, err := scenario.Parse(got.String())
			require.NoError(t, err, "canonical name")
			assert.Equal(t, got, back, "Parse(String())")
		})
	}
}

func TestParseRunner(t *testing.T) {
	for in, want := range map[string]scenario.Runner{
		"WriteLat/size=8": scenario.Latency,
		"WriteBW/size=8":  scenario.Stream,
	} {
		n, err := scenario.Parse(in)
		require.NoError(t, err)
		assert.Equal(t, reflect.ValueOf(want).Pointer(), reflect.ValueOf(n.Runner()).Pointer(), in)
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		name, in string
		msgs     []string // all in the error
	}{
		{"grammar", "WriteBW/size", []string{`part "size" is not key=value`}},
		{"unknown family", "WriteBandwidth/size=8", []string{`unknown family "WriteBandwidth"`, "known: AtomicBW, AtomicContention, AtomicLat,", "WriteLoad"}},
		{"EchoRPC", "EchoRPC/op=write/transport=UC/size=32/qd=1/inline=true", []string{"family EchoRPC is not one Parse takes", "the fabric agent does not run echo RPCs yet", "the families it takes: AtomicBW,"}},
		{"control path", "RegMR/op=reg/size=4096/page=4K", []string{"family RegMR is not one Parse takes", "control path"}},
		{"unknown key", "WriteBW/colour=red", []string{`unknown key "colour"`, "known: op, transport, size, qd,", "mtu, rate)"}},
		{"key of another family", "WriteBW/gap=1ms", []string{`WriteBW has no key "gap"`, "its keys: transport, size, qd, qps, inline, batch, signal, bidir)"}},
		{"duplicate key", "WriteBW/size=64/qd=16/size=128", []string{`key "size" given twice`}},
		{"size suffix", "WriteBW/size=4K", []string{`size="4K"`, "a whole number of bytes 0..1073741824"}},
		{"size leading zero", "WriteBW/size=064", []string{`size="064"`}},
		{"size too large", "WriteBW/size=1073741825", []string{`size="1073741825"`}},
		{"qd zero", "WriteBW/qd=0", []string{`qd="0"`, "a whole number ≥ 1"}},
		{"qd sign", "WriteBW/qd=+8", []string{`qd="+8"`}},
		{"transport case", "WriteBW/transport=rc", []string{`transport="rc"`, "RC, UC or UD"}},
		{"bool word", "WriteBW/inline=yes", []string{`inline="yes"`, "false or true"}},
		{"mode", "SendLat/mode=busy", []string{`mode="busy"`, "poll or event"}},
		{"side", "InboundSend/side=both", []string{`side="both"`, "requester or responder"}},
		{"negative gap", "WriteLatGap/gap=-1ms", []string{`gap="-1ms"`, "a duration ≥ 0"}},
		{"mtu", "WriteLatMTU/mtu=1500", []string{`mtu="1500"`, "256, 512, 1024, 2048 or 4096"}},
		{"rate zero", "SendLoad/rate=0%", []string{`rate="0%"`, "more than 0% and at most 100%"}},
		{"rate over", "SendLoad/rate=101%", []string{`rate="101%"`}},
		{"rate without %", "SendLoad/rate=50", []string{`rate="50"`}},
		{"op unknown", "AtomicBW/op=read", []string{`op="read"`, "fadd, cas, write or send"}},
		{"op not atomic", "AtomicBW/op=write", []string{"AtomicBW needs op=fadd or op=cas, not op=write"}},
		{"op missing", "AtomicLat/transport=RC", []string{"AtomicLat needs op=fadd or op=cas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scenario.Parse(tt.in)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "scenario: "), err.Error())
			for _, m := range append(tt.msgs, tt.in) {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
}

// TestAxes: every axis reads a canonical value and writes it back, and
// refuses the empty value naming the key.
func TestAxes(t *testing.T) {
	canonical := map[string][]string{
		"op": {"fadd", "cas", "write", "send"}, "transport": {"RC", "UC", "UD"},
		"size": {"0", "8", "1073741824"}, "qd": {"1", "128"}, "qps": {"4"}, "inline": {"false", "true"},
		"batch": {"16"}, "signal": {"64"}, "mode": {"poll", "event"}, "srq": {"false", "true"},
		"bidir": {"false", "true"}, "hdr": {"false", "true"}, "counters": {"4096"}, "stride": {"8"},
		"threads": {"2"}, "side": {"requester", "responder"}, "gap": {"0s", "10µs", "100µs", "1ms"},
		"mtu": {"256", "512", "1024", "2048", "4096"}, "rate": {"7%", "10%", "25%", "50%", "75%", "90%", "100%", "0.5%"},
	}
	axes := scenario.Axes()
	require.Len(t, axes, len(canonical), "an example per axis")
	for _, a := range axes {
		require.Contains(t, canonical, a.Key)
		for _, v := range canonical[a.Key] {
			var s scenario.Spec
			require.NoError(t, a.Set(&s, v), "%s=%s", a.Key, v)
			assert.Equal(t, v, a.Format(s), "%s: Format(Set(v))", a.Key)
		}
		err := a.Set(&scenario.Spec{}, "")
		if assert.Error(t, err, a.Key) {
			assert.Equal(t, fmt.Sprintf("bad value %s=\"\": want %s", a.Key, a.Allowed), err.Error())
		}
	}
}

// A benchmark name as go test prints it, or a short form of it, gives the
// family's Spec and runner; a name Parse cannot run is refused with what
// it takes.
func ExampleParse() {
	n, err := scenario.Parse("BenchmarkWriteBW/transport=UC/size=65536/qd=128-8")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(n, n.Spec.Kind, n.Spec.Op, n.Spec.Transport, n.Spec.Size, n.Spec.QD)

	n, _ = scenario.Parse("WriteLatGap/gap=10us")
	fmt.Println(n, n.Spec.Kind, n.Spec.Op, n.Spec.Gap)

	_, err = scenario.Parse("WriteBW/size=4K")
	fmt.Println(err)
	// Output:
	// WriteBW/transport=UC/size=65536/qd=128 stream RDMA_WRITE UC 65536 128
	// WriteLatGap/gap=10µs latency RDMA_WRITE 10µs
	// scenario: benchmark name "WriteBW/size=4K": bad value size="4K": want a whole number of bytes 0..1073741824
}
