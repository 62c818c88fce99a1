package scenario

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// Axis is one key of a benchmark name ("size" in "WriteBW/size=64"): how
// a value of the key sets its Spec field, and how the field is written
// back. Axes lists them all; it is the one grammar of the values, shared
// by the bench_test matrix (which writes names) and Parse (which reads
// them).
type Axis struct {
	// Key is the key as it appears in a name.
	Key string
	// Allowed says which values Set takes, e.g. "a whole number ≥ 1".
	Allowed string

	set    func(s *Spec, value string) bool // false: a bad value
	format func(s Spec) string
}

// Set reads value into the Spec field of the axis. It refuses, with an
// error naming the key, the value and what is allowed, a value that is
// not in the axis' canonical form or is out of its range.
func (a Axis) Set(s *Spec, value string) error {
	if !a.set(s, value) {
		return fmt.Errorf("bad value %s=%q: want %s", a.Key, value, a.Allowed)
	}
	return nil
}

// Format writes the Spec field of the axis as a name's value: the form
// Set reads back to the same field.
func (a Axis) Format(s Spec) string { return a.format(s) }

// Axes returns the axes in the order their parts appear in a name.
func Axes() []Axis { return append([]Axis(nil), axes...) }

// axisOf returns the axis of key.
func axisOf(key string) (Axis, bool) {
	for _, a := range axes {
		if a.Key == key {
			return a, true
		}
	}
	return Axis{}, false
}

// maxCount is the upper bound of the counting axes (qd, qps, …): the
// device's limits are Spec.CheckLimits' business, not the grammar's.
const maxCount = math.MaxInt32

// axes is the grammar, in name order.
var axes = []Axis{
	opAxis(),
	transportAxis(),
	intAxis("size", "a whole number of bytes", 0, MaxSize, func(s *Spec) *int { return &s.Size }),
	intAxis("qd", "a whole number", 1, maxCount, func(s *Spec) *int { return &s.QD }),
	intAxis("qps", "a whole number", 1, maxCount, func(s *Spec) *int { return &s.QPs }),
	wordAxis("inline", "false", "true", func(s *Spec) *bool { return &s.Inline }),
	intAxis("batch", "a whole number", 1, maxCount, func(s *Spec) *int { return &s.Batch }),
	intAxis("signal", "a whole number", 1, maxCount, func(s *Spec) *int { return &s.Signal }),
	wordAxis("mode", "poll", "event", func(s *Spec) *bool { return &s.Event }),
	wordAxis("srq", "false", "true", func(s *Spec) *bool { return &s.SRQ }),
	wordAxis("bidir", "false", "true", func(s *Spec) *bool { return &s.Bidir }),
	wordAxis("hdr", "false", "true", func(s *Spec) *bool { return &s.HeaderOnly }),
	intAxis("counters", "a whole number", 1, maxCount, func(s *Spec) *int { return &s.Counters }),
	intAxis("stride", "a whole number of bytes", 1, maxCount, func(s *Spec) *int { return &s.Stride }),
	intAxis("threads", "a whole number", 1, maxCount, func(s *Spec) *int { return &s.Threads }),
	wordAxis("side", "requester", "responder", func(s *Spec) *bool { return &s.Inbound }),
	gapAxis(),
	mtuAxis(),
	rateAxis(),
}

// opNames are the op key's values: the atomics' verbs and EchoRPC's
// request verbs.
var opNames = []struct {
	name string
	op   verbs.Opcode
}{
	{"fadd", verbs.OpFetchAdd},
	{"cas", verbs.OpCmpSwap},
	{"write", verbs.OpWrite},
	{"send", verbs.OpSendImm},
}

// opAxis is op: Spec.Op. A verb without a name here formats as its
// verbs name ("RDMA_READ"), which Set refuses.
func opAxis() Axis {
	return Axis{
		Key:     "op",
		Allowed: "fadd, cas, write or send",
		set: func(s *Spec, v string) bool {
			for _, o := range opNames {
				if o.name == v {
					s.Op = o.op
					return true
				}
			}
			return false
		},
		format: func(s Spec) string {
			for _, o := range opNames {
				if o.op == s.Op {
					return o.name
				}
			}
			return s.Op.String()
		},
	}
}

// transports are the transport key's values, as Transport.String
// writes them.
var transports = []verbs.Transport{verbs.TransportRC, verbs.TransportUC, verbs.TransportUD}

// transportAxis is transport: Spec.Transport, upper case.
func transportAxis() Axis {
	return Axis{
		Key:     "transport",
		Allowed: "RC, UC or UD",
		set: func(s *Spec, v string) bool {
			for _, t := range transports {
				if t.String() == v {
					s.Transport = t
					return true
				}
			}
			return false
		},
		format: func(s Spec) string { return s.Transport.String() },
	}
}

// intAxis is a key of decimal integers lo..hi, without sign, leading
// zero or suffix.
func intAxis(key, what string, lo, hi int, field func(*Spec) *int) Axis {
	allowed := fmt.Sprintf("%s %d..%d", what, lo, hi)
	if hi == maxCount {
		allowed = fmt.Sprintf("%s ≥ %d", what, lo)
	}
	return Axis{
		Key:     key,
		Allowed: allowed,
		set: func(s *Spec, v string) bool {
			n, ok := parseInt(v)
			if !ok || n < lo || n > hi {
				return false
			}
			*field(s) = n
			return true
		},
		format: func(s Spec) string { return strconv.Itoa(*field(&s)) },
	}
}

// parseInt reads a decimal integer in canonical form (strconv.Itoa's).
func parseInt(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	return n, err == nil && strconv.Itoa(n) == v
}

// wordAxis is a boolean key written as one of two words.
func wordAxis(key, no, yes string, field func(*Spec) *bool) Axis {
	return Axis{
		Key:     key,
		Allowed: no + " or " + yes,
		set: func(s *Spec, v string) bool {
			if v != no && v != yes {
				return false
			}
			*field(s) = v == yes
			return true
		},
		format: func(s Spec) string {
			if *field(&s) {
				return yes
			}
			return no
		},
	}
}

// gapAxis is gap: Spec.Gap as time.Duration writes it ("10µs");
// time.ParseDuration's other spellings ("10us") are read too.
func gapAxis() Axis {
	return Axis{
		Key:     "gap",
		Allowed: "a duration ≥ 0 such as 0s, 10µs (or 10us) or 1ms",
		set: func(s *Spec, v string) bool {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return false
			}
			s.Gap = d
			return true
		},
		format: func(s Spec) string { return s.Gap.String() },
	}
}

// mtus are the path MTUs a Spec takes.
var mtus = []int{256, 512, 1024, 2048, 4096}

// mtuAxis is mtu: Spec.MTU in bytes.
func mtuAxis() Axis {
	return Axis{
		Key:     "mtu",
		Allowed: "256, 512, 1024, 2048 or 4096",
		set: func(s *Spec, v string) bool {
			n, ok := parseInt(v)
			for _, m := range mtus {
				if ok && n == m {
					s.MTU = n
					return true
				}
			}
			return false
		},
		format: func(s Spec) string { return strconv.Itoa(s.MTU) },
	}
}

// percent is a rate's value: a decimal percentage and '%'.
var percent = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)%$`)

// rateAxis is rate: Spec.Load as a percentage of the peak rate ("25%"
// is Load 0.25).
func rateAxis() Axis {
	return Axis{
		Key:     "rate",
		Allowed: "a percentage of the peak rate, more than 0% and at most 100%, such as 25% or 12.5%",
		set: func(s *Spec, v string) bool {
			load, ok := parseRate(v)
			if ok {
				s.Load = load
			}
			return ok
		},
		format: func(s Spec) string { return formatRate(s.Load) },
	}
}

// parseRate reads a rate's value as a Load: the percentage / 100.
func parseRate(v string) (float64, bool) {
	m := percent.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	p, err := strconv.ParseFloat(m[1], 64)
	if err != nil || p <= 0 || p > 100 {
		return 0, false
	}
	return p / 100, true
}

// formatRate writes load as the shortest percentage that parseRate
// reads back to it ("7%" for 7.0/100, whose ·100 is 7.000000000000001).
func formatRate(load float64) string {
	pct := load * 100
	for prec := range 17 {
		v := strconv.FormatFloat(pct, 'f', prec, 64) + "%"
		if back, ok := parseRate(v); ok && back == load {
			return v
		}
	}
	return strconv.FormatFloat(pct, 'f', -1, 64) + "%"
}
