package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// The steps, in order, as their lines name them.
const (
	stepPort    = "device and port"
	stepGID     = "gid"
	stepControl = "control channel"
	stepUDP     = "udp 4791"
	stepCM      = "rdma_cm connect"
	stepPing    = "ping-pong"
	stepClose   = "disconnect"
)

// StepError is a failed step: its line is "FAIL <step>: <what> — <cause>".
type StepError struct {
	Step  string
	What  string // what was found
	Cause string // the likely cause, and what to do
	Err   error  // the underlying error, if any
}

func (e *StepError) Error() string {
	if e.Cause == "" {
		return e.Step + ": " + e.What
	}
	return e.Step + ": " + e.What + " — " + e.Cause
}

// Unwrap returns the underlying error.
func (e *StepError) Unwrap() error { return e.Err }

func fail(step, what, cause string, err error) *StepError {
	return &StepError{Step: step, What: what, Cause: cause, Err: err}
}

// reporter prints the step lines.
type reporter struct {
	w      io.Writer
	prefix string // the far end prefixes its lines with the client's address
}

func (r *reporter) ok(step, facts string) {
	fmt.Fprintf(r.w, "%sok   %s: %s\n", r.prefix, step, facts)
}

func (r *reporter) fail(e *StepError) {
	fmt.Fprintf(r.w, "%sFAIL %s\n", r.prefix, e.Error())
}

func (r *reporter) note(format string, args ...any) {
	fmt.Fprintf(r.w, "%s"+format+"\n", append([]any{r.prefix}, args...)...)
}

// checkPort is step 1: the port must be ACTIVE.
func checkPort(f PortFacts) (string, *StepError) {
	where := fmt.Sprintf("%s port %d", f.Device, f.Port)
	phys := f.PhysState
	if phys == "" {
		phys = "unknown"
	}
	if f.State == verbs.PortActive || f.State == verbs.PortActiveDefer {
		facts := fmt.Sprintf("%s %s (physical state %s), %s", where, f.State, phys, f.LinkLayer)
		if f.Netdev != "" {
			facts += " on netdev " + f.Netdev
		}
		facts += fmt.Sprintf(", MTU %d", f.ActiveMTU)
		if f.Speed != "" && f.Width > 0 {
			facts += fmt.Sprintf(", %s x%d", f.Speed, f.Width)
		}
		if f.QoS != "" {
			facts += "; ECN/PFC: " + f.QoS
		}
		return facts, nil
	}
	what := fmt.Sprintf("%s is %s (physical state %s)", where, f.State, phys)
	return "", fail(stepPort, what, portCause(f), nil)
}

// portCause names the likely cause of a port that is not ACTIVE.
func portCause(f PortFacts) string {
	netdev := ""
	if f.Netdev != "" {
		netdev = "netdev " + f.Netdev
		if f.NetdevState != "" {
			netdev += " is " + f.NetdevState
		}
	}
	switch {
	case f.State == verbs.PortInit && f.LinkLayer == verbs.LinkLayerInfiniBand:
		return "the link is up but no subnet manager configured the port: start opensm (or check the fabric's SM)"
	case f.State == verbs.PortArmed:
		return "the subnet manager has not moved the port to ACTIVE yet: check the SM's log"
	case f.PhysState == "Polling":
		if netdev != "" {
			return "no link partner: " + netdev + "; a cable unplugged or the switch port down"
		}
		return "no link partner: a cable unplugged or the switch port down"
	case f.LinkLayer == verbs.LinkLayerEthernet && netdev != "":
		return "the link under it is down: " + netdev + " (ip link set " + f.Netdev + " up), or its cable or switch port"
	case f.LinkLayer == verbs.LinkLayerEthernet:
		return "the link under it is down: the netdev under the port is down, or its cable or switch port"
	default:
		return "the link is down: a cable unplugged, the switch port down, or the port disabled (ibportstate)"
	}
}

// gidList is "0 (fe80::1, RoCE v2), 1 (::ffff:192.0.2.1, RoCE v2)".
func gidList(gids []GIDFact) string {
	if len(gids) == 0 {
		return "none"
	}
	parts := make([]string, len(gids))
	for i, g := range gids {
		parts[i] = fmt.Sprintf("%d (%s, %s)", g.Index, g.GID, g.Type)
	}
	return strings.Join(parts, ", ")
}

// checkGID is step 2: the GID at index (-1: the best, as the benchmarks
// pick it) must be set.
func checkGID(pf PortFacts, gids []GIDFact, index int) (GIDFact, string, *StepError) {
	where := fmt.Sprintf("%s port %d", pf.Device, pf.Port)
	if len(gids) == 0 {
		cause := "the port has no GID: on RoCE the netdev under it has no address (ip addr add … dev " + orUnknown(pf.Netdev) + ")"
		if pf.LinkLayer == verbs.LinkLayerInfiniBand {
			cause = "the port has no GID: the subnet manager has not configured it"
		}
		return GIDFact{}, "", fail(stepGID, where+" has no set GID entries", cause, nil)
	}
	how := "given by -x"
	var g GIDFact
	if index < 0 {
		entries := make([]verbs.GIDEntry, len(gids))
		for i, g := range gids {
			entries[i] = verbs.GIDEntry{Index: g.Index, GID: g.GID, Type: g.Type}
		}
		best, err := verbs.PickBestGID(entries, pf.LinkLayer)
		if err != nil {
			return GIDFact{}, "", fail(stepGID, where+": "+err.Error(), "no usable GID: the netdev under the port needs an address", err)
		}
		i := slices.IndexFunc(gids, func(g GIDFact) bool { return g.Index == best.Index })
		g = gids[i]
		how = "the best, as the benchmarks pick it; -x to choose"
	} else {
		i := slices.IndexFunc(gids, func(g GIDFact) bool { return g.Index == index })
		if i < 0 {
			what := fmt.Sprintf("GID index %d of %s is empty; set entries: %s", index, where, gidList(gids))
			if pf.GIDTableLen > 0 && index >= pf.GIDTableLen {
				what = fmt.Sprintf("GID index %d is beyond the %d entries of %s's GID table; set entries: %s", index, pf.GIDTableLen, where, gidList(gids))
			}
			return GIDFact{}, "", fail(stepGID, what, "a wrong GID index: give -x one of the set entries (on RoCE v2 the one with the interface's IPv4 or IPv6 address)", nil)
		}
		g = gids[i]
	}
	facts := fmt.Sprintf("index %d %s %s", g.Index, g.GID, g.Type)
	if g.Netdev != "" {
		facts += " on netdev " + g.Netdev
	}
	return g, facts + " (" + how + ")", nil
}

func orUnknown(s string) string {
	if s == "" {
		return "<netdev>"
	}
	return s
}

// udpApplies says whether step 4 applies to a port and GID, and if not,
// why.
func udpApplies(pf PortFacts, g GIDFact) (bool, string) {
	switch {
	case pf.Transport == verbs.NodeTransportIWARP:
		return false, fmt.Sprintf("%s is iWARP: RDMA over TCP (the rdma_cm step's connection), no UDP port 4791", pf.Device)
	case pf.LinkLayer == verbs.LinkLayerInfiniBand:
		return false, fmt.Sprintf("%s port %d is InfiniBand: its packets are not carried in UDP", pf.Device, pf.Port)
	case g.Type == verbs.GIDTypeRoCEv1:
		return false, fmt.Sprintf("GID index %d is RoCE v1: Ethernet frames of ethertype 0x8915, not UDP datagrams (RoCE v2 GIDs: -x)", g.Index)
	case g.Type != verbs.GIDTypeRoCEv2:
		return false, fmt.Sprintf("GID index %d is of type %s, not RoCE v2", g.Index, g.Type)
	}
	return true, ""
}

// udpBlocked is step 4's failure when TCP worked but no datagram arrived.
func udpBlocked(far string, waited time.Duration) *StepError {
	return fail(stepUDP,
		fmt.Sprintf("TCP reached %s but no RoCE v2 datagram (UDP port 4791) arrived there in %s", far, waited),
		"a firewall passing TCP but dropping UDP, a switch port without RoCE, or a wrong GID index/type", nil)
}

// patternByte is byte j of message i sent by side ('a': the near end's
// pings, 'b': the far end's answers).
func patternByte(i, j int, side byte) byte {
	return byte(i*131+j*7) ^ side
}

func fillPattern(p []byte, i int, side byte) {
	for j := range p {
		p[j] = patternByte(i, j, side)
	}
}

// mismatch is a payload that differs from its pattern.
type mismatch struct {
	Iter, Byte int
	Want, Got  byte
	Len, WantN int // the received and the expected length
}

// checkPattern returns nil when p is message i of side, of length n.
func checkPattern(p []byte, n, i int, side byte) *mismatch {
	if len(p) != n {
		m := &mismatch{Iter: i, Byte: min(len(p), n), Len: len(p), WantN: n}
		return m
	}
	for j, b := range p {
		if w := patternByte(i, j, side); b != w {
			return &mismatch{Iter: i, Byte: j, Want: w, Got: b, Len: len(p), WantN: n}
		}
	}
	return nil
}

func (m *mismatch) String() string {
	if m.Len != m.WantN {
		return fmt.Sprintf("iteration %d: %d bytes received instead of %d", m.Iter, m.Len, m.WantN)
	}
	return fmt.Sprintf("payload mismatch at iteration %d byte %d (0x%02x instead of 0x%02x)", m.Iter, m.Byte, m.Got, m.Want)
}

const mismatchCause = "the data was changed between the two memories: a provider, firmware or DMA fault (or memory corruption on one host)"

// roundTrips summarises the ping-pongs' round trips.
func roundTrips(rtts []time.Duration) (lo, med, hi time.Duration) {
	s := slices.Clone(rtts)
	slices.Sort(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}
