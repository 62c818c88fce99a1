package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// TestEveryRuleRefuses gives every rule of CheckLimits an input that it
// refuses, with the words its message must carry, and an input it
// accepts; a rule without a case here fails the test.
// TestStreamProgressRules: combinations a stream loop cannot run to the
// end are refused before anything is created.
func TestStreamProgressRules(t *testing.T) {
	const str = KindStream
	for _, tc := range []struct {
		s    Spec
		want string // "" = accepted
	}{
		{Spec{Kind: str, Op: verbs.OpWrite, Size: 8, QD: 8, Batch: 3, Signal: 8}, "qd 8, batch 3, signal interval 8"},
		{Spec{Kind: str, Op: verbs.OpWrite, Size: 8, QD: 10, Batch: 3, Signal: 8}, ""},
		{Spec{Kind: str, Op: verbs.OpWrite, Size: 8, QD: 8, Batch: 4, Signal: 8}, ""},
		{Spec{Kind: str, Op: verbs.OpWrite, Size: 8, QD: 128, Batch: 2, Load: 0.5}, "batch 2 must be 1"},
		{Spec{Kind: str, Op: verbs.OpWrite, Size: 8, QD: 128, Batch: 1, Load: 0.5}, ""},
		{Spec{Kind: str, Op: verbs.OpFetchAdd, Counters: 1<<32 + 1, Stride: 1 << 32}, "span more than 1073741824 bytes"}, // once wrapped to 8
	} {
		err := tc.s.CheckLimits(rxeLimits())
		if tc.want == "" {
			assert.NoError(t, err, "%+v", tc.s)
		} else {
			assert.ErrorContains(t, err, tc.want, "%+v", tc.s)
		}
	}
}

func TestEveryRuleRefuses(t *testing.T) {
	lim := rxeLimits()
	noAtomics := rxeLimits()
	noAtomics.Attr.AtomicCap = verbs.AtomicNone
	iwarp := siwLimits()
	const (
		lat, str = KindLatency, KindStream
	)
	write, send, fadd := verbs.OpWrite, verbs.OpSend, verbs.OpFetchAdd
	cases := map[string]struct {
		bad Spec
		// goodValueOnly: good passes this rule but not every rule (a
		// value rule's good input may still be beyond this device).
		goodValueOnly bool
		lim           *Limits // for bad (nil: rxe's); good is checked against rxe's
		want          []string
		good          Spec
	}{
		"size":         {bad: Spec{Kind: str, Op: send}, want: []string{"message size 0", "at least 1 byte"}, good: Spec{Kind: str, Op: send, Size: 1}},
		"counts":       {bad: Spec{Kind: str, Op: send, Size: 8, Batch: -2}, want: []string{"batch -2", "at least 1"}, good: Spec{Kind: str, Op: send, Size: 8, Batch: 2}},
		"window":       {bad: Spec{Kind: str, Op: write, Size: 8, QD: 4, Signal: 8}, want: []string{"signal interval 8", "qd 4"}, good: Spec{Kind: str, Op: write, Size: 8, QD: 8, Signal: 8}},
		"signal rules": {bad: Spec{Kind: str, Op: write, Size: 8, QD: 8, Signal: 8, SignalRules: true}, want: []string{"qd) 8", "2 × signal interval 8 = 16"}, good: Spec{Kind: str, Op: write, Size: 8, QD: 16, Signal: 8, SignalRules: true}},
		"counters":     {bad: Spec{Kind: str, Op: fadd, Counters: 2, Stride: 4}, want: []string{"stride 4", "multiple of 8"}, good: Spec{Kind: str, Op: fadd, Counters: 2, Stride: 8}},
		"threads":      {bad: Spec{Kind: lat, Op: write, Size: 8, Threads: 2}, want: []string{"threads 2", "one-way streams"}, good: Spec{Kind: str, Op: write, Size: 8, Threads: 2}},
		"bidir":        {bad: Spec{Kind: lat, Op: send, Size: 8, Bidir: true}, want: []string{"bidir", "streaming runs only"}, good: Spec{Kind: str, Op: send, Size: 8, Bidir: true}},
		"gap":          {bad: Spec{Kind: lat, Op: write, Size: 8, Gap: 2 * time.Second}, want: []string{"gap 2s", "0 … 1s"}, good: Spec{Kind: lat, Op: write, Size: 8, Gap: time.Millisecond}},
		"signal-all":   {bad: Spec{Kind: str, Op: write, Size: 8, SignalAll: true}, want: []string{"signal-all", "latency runs, not"}, good: Spec{Kind: lat, Op: write, Size: 8, SignalAll: true}},
		"load":         {bad: Spec{Kind: str, Op: write, Size: 8, Load: 1.5}, want: []string{"offered load 1.5", "(0, 1]"}, good: Spec{Kind: str, Op: write, Size: 8, Load: 0.5}},
		"device depth": {bad: Spec{Kind: str, Op: write, Size: 8, QD: 1 << 21}, want: []string{"qd 2097152", "max_qp_wr 1048576"}, good: Spec{Kind: str, Op: write, Size: 8, QD: 1 << 20}},
		"device QPs":   {bad: Spec{Kind: str, Op: write, Size: 8, QPs: 600000}, want: []string{"qps 600000", "max_qp 1048560"}, good: Spec{Kind: str, Op: write, Size: 8, QPs: 1000}},
		"message size": {bad: Spec{Kind: str, Op: write, Size: 16 << 20}, want: []string{"size 16777216", "max_msg_sz 8388608"}, good: Spec{Kind: str, Op: write, Size: 8 << 20}},
		"mtu value":    {bad: Spec{Kind: lat, Op: write, Size: 8, MTU: 300}, want: []string{"mtu 300", "256, 512, 1024, 2048 or 4096"}, good: Spec{Kind: lat, Op: write, Size: 8, MTU: 4096}, goodValueOnly: true},
		"mtu":          {bad: Spec{Kind: lat, Op: write, Size: 8, MTU: 2048}, want: []string{"mtu 2048", "active MTU 1024"}, good: Spec{Kind: lat, Op: write, Size: 8, MTU: 512}},
		"iwarp":        {bad: Spec{Kind: str, Op: send, Size: 8, Transport: verbs.TransportUD}, lim: &iwarp, want: []string{"siw0: UD: transport iWARP: reliable connected QPs only", "EOPNOTSUPP"}, good: Spec{Kind: str, Op: send, Size: 8, Transport: verbs.TransportUD}},
		"transport":    {bad: Spec{Kind: str, Op: write, Size: 8, Transport: verbs.TransportUD}, want: []string{"UD supports SEND only", "RDMA_WRITE"}, good: Spec{Kind: str, Op: send, Size: 8, Transport: verbs.TransportUD}},
		"counter span": {bad: Spec{Kind: str, Op: fadd, Counters: 1 << 24, Stride: 128}, want: []string{"span 2147483528 bytes", "above 1073741824"}, good: Spec{Kind: str, Op: fadd, Counters: 1 << 20, Stride: 128}},
		"atomics":      {bad: Spec{Kind: str, Op: fadd}, lim: &noAtomics, want: []string{"rxe0", "no atomic support (atomic_cap none)"}, good: Spec{Kind: str, Op: fadd}},
		"inline":       {bad: Spec{Kind: str, Op: write, Size: 600, Inline: true}, want: []string{"inline size 600", "max_inline_data 512"}, good: Spec{Kind: str, Op: write, Size: 512, Inline: true}},
		"srq":          {bad: Spec{Kind: str, Op: write, Size: 8, SRQ: true}, want: []string{"SRQ", "RDMA_WRITE"}, good: Spec{Kind: str, Op: send, Size: 8, SRQ: true}},
		"inbound":      {bad: Spec{Kind: str, Op: write, Size: 8, Inbound: true}, want: []string{"inbound", "RDMA_WRITE"}, good: Spec{Kind: str, Op: send, Size: 8, Inbound: true}},
		"latency QPs":  {bad: Spec{Kind: lat, Op: write, Size: 8, QPs: 2}, want: []string{"one QP, not 2"}, good: Spec{Kind: str, Op: write, Size: 8, QPs: 2}},
		"event":        {bad: Spec{Kind: lat, Op: write, Size: 8, Event: true}, want: []string{"write latency", "event mode"}, good: Spec{Kind: lat, Op: send, Size: 8, Event: true}},
	}
	for _, rules := range [][]rule{valueRules, deviceRules} {
		for _, r := range rules {
			t.Run(r.name, func(t *testing.T) {
				tc, ok := cases[r.name]
				require.True(t, ok, "rule %q has no bad-input case", r.name)
				l := lim
				if tc.lim != nil {
					l = *tc.lim
				}
				bad, good := tc.bad, tc.good
				bad.defaults()
				good.defaults()
				err := r.check(&bad, &l)
				require.Error(t, err, "the rule refuses %+v", tc.bad)
				for _, w := range tc.want {
					assert.Contains(t, err.Error(), w)
				}
				assert.NoError(t, r.check(&good, &lim), "the rule accepts %+v", tc.good)
				full := tc.bad.CheckLimits(l)
				require.Error(t, full, "CheckLimits refuses what the rule refuses")
				assert.Contains(t, full.Error(), tc.want[0])
				if !tc.goodValueOnly {
					assert.NoError(t, tc.good.CheckLimits(lim), "the good input passes every rule")
				}
			})
		}
	}
	assert.Len(t, cases, len(valueRules)+len(deviceRules), "a case per rule, none left over")
	assert.ErrorContains(t, Spec{Op: write, Size: 8}.CheckLimits(lim), "spec of kind Kind(0): want latency, stream or rpc")
}

// siwLimits are siw0's limits as the siw guest reads them (docs/siw.md).
func siwLimits() Limits {
	l := rxeLimits()
	l.Device = "siw0"
	l.Attr.Name = "siw0"
	l.Attr.NodeTransport = verbs.NodeTransportIWARP
	l.Attr.AtomicCap = verbs.AtomicNone
	l.Attr.MaxInline = 64
	return l
}

// TestIWARPSkips: on an iWARP device UD and UC (every verb, every kind),
// atomics and connecting by hand are *Unsupported naming what the device
// says; RC runs.
func TestIWARPSkips(t *testing.T) {
	siw := siwLimits()
	for _, tr := range []verbs.Transport{verbs.TransportUD, verbs.TransportUC} {
		for _, k := range []Kind{KindLatency, KindStream} {
			for _, op := range []verbs.Opcode{verbs.OpSend, verbs.OpWrite, verbs.OpRead} {
				err := Spec{Kind: k, Op: op, Size: 8, Transport: tr}.CheckLimits(siw)
				require.Error(t, err, "%s %s %v", tr, op, k)
				assert.True(t, IsUnsupported(err), "%v", err)
				assert.ErrorContains(t, err, SkipIWARPRC)
			}
		}
		err := Spec{Op: verbs.OpWrite, Size: 8, Transport: tr}.CheckRPC(siw)
		require.Error(t, err)
		assert.True(t, IsUnsupported(err), "%v", err)
	}
	for _, op := range []verbs.Opcode{verbs.OpWriteImm, verbs.OpSendImm} {
		err := Spec{Kind: KindStream, Op: op, Size: 8}.CheckLimits(siw)
		require.Error(t, err, "%s", op)
		assert.True(t, IsUnsupported(err), "%v", err)
		assert.ErrorContains(t, err, "siw0: "+op.String()+": "+SkipIWARPImm)
		assert.NoError(t, Spec{Kind: KindStream, Op: op, Size: 8}.CheckLimits(rxeLimits()), "%s runs on rxe", op)
	}
	err := Spec{Kind: KindStream, Op: verbs.OpFetchAdd}.CheckLimits(siw)
	require.Error(t, err)
	assert.True(t, IsUnsupported(err))
	assert.ErrorContains(t, err, "siw0 has no atomic support (atomic_cap none)")
	for _, op := range []verbs.Opcode{verbs.OpSend, verbs.OpWrite, verbs.OpRead} {
		assert.NoError(t, Spec{Kind: KindStream, Op: op, Size: 8}.CheckLimits(siw), "RC %s runs on iWARP", op)
	}
	err = Control{Op: OpConnect}.checkDevice(siw)
	require.Error(t, err)
	assert.True(t, IsUnsupported(err))
	assert.ErrorContains(t, err, "siw0: "+SkipIWARPConnect)
	assert.NoError(t, Control{Op: OpCreateQP}.checkDevice(siw))
	assert.NoError(t, Control{Op: OpConnect}.checkDevice(rxeLimits()))
}

// TestPairConfigCheck: a pair that could not be built is refused before
// anything is created, naming the field and its range.
func TestPairConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		c    PairConfig
		want string // "" = accepted
	}{
		{PairConfig{}, ""},
		{PairConfig{QPs: 16, SlotSize: 1 << 20, SendDepth: 4096}, ""},
		{PairConfig{SendDepth: -1}, "PairConfig.SendDepth -1 is out of range 1..16777216"},
		{PairConfig{RecvDepth: -5}, "PairConfig.RecvDepth -5"},
		{PairConfig{QPs: -2}, "PairConfig.QPs -2 is out of range 1..65536"},
		{PairConfig{SlotSize: 2 << 30}, "PairConfig.SlotSize 2147483648 is out of range 1..1073741824"},
		{PairConfig{QPs: 1 << 16, SlotSize: 1 << 30}, "65536 QPs × 2 slots of 1073741824 bytes exceed 1073741824 bytes"},
		{PairConfig{Inline: -1}, "PairConfig.Inline -1"},
	} {
		c := tc.c
		c.defaults()
		err := c.check()
		if tc.want == "" {
			assert.NoError(t, err, "%+v", tc.c)
		} else {
			assert.ErrorContains(t, err, tc.want, "%+v", tc.c)
		}
	}
}
