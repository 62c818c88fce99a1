package main

import (
	"fmt"
	"strconv"
	"strings"
)

// queueLimit is netem's queue in packets: long enough that a delay or a
// rate limit never drops a packet (only loss= drops).
const queueLimit = 100000

// netem is the qdisc's parameters for f; refMBps is the healthy pass's
// median MB/s, the base of a rate limit.
func netem(f Fault, refMBps float64) (string, error) {
	switch f.Kind {
	case Delay:
		return fmt.Sprintf("netem delay %sms limit %d", num(f.Value), queueLimit), nil
	case Loss:
		return fmt.Sprintf("netem loss %s%% limit %d", num(f.Value), queueLimit), nil
	case Rate:
		if !(refMBps > 0) {
			return "", fmt.Errorf("fault %s: a rate limit needs the healthy pass's median MB/s (-ref-mbps), got %v", f, refMBps)
		}
		// MB/s is 10^6 bytes/s: × 8000 is kbit/s. netem counts the
		// whole frame, headers too.
		kbit := int64(f.Value / 100 * refMBps * 8000)
		return fmt.Sprintf("netem rate %dkbit limit %d", max(kbit, 8), queueLimit), nil
	}
	return "", fmt.Errorf("fault %s: unknown kind %q", f, f.Kind)
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// rule is one netem on a node's egress: to every destination (dst
// empty) or to one node.
type rule struct {
	dst   string
	netem string
}

// rules lists node's part of s: its own egress when it is the bad node
// (egress or both), its egress to the bad node (ingress or both), and
// its egress to the other end of the bad link (the link's first end
// always; the second with both).
func rules(s Spec, node string, refMBps float64) ([]rule, error) {
	var out []rule
	add := func(f Fault, dst string) error {
		n, err := netem(f, refMBps)
		if err == nil {
			out = append(out, rule{dst, n})
		}
		return err
	}
	if f := s.Node(); f != nil {
		switch {
		case node == f.A && f.Dir != Ingress:
			if err := add(*f, ""); err != nil {
				return nil, err
			}
		case node != f.A && f.Dir != Egress:
			if err := add(*f, f.A); err != nil {
				return nil, err
			}
		}
	}
	if f := s.Link(); f != nil {
		switch {
		case node == f.A:
			if err := add(*f, f.B); err != nil {
				return nil, err
			}
		case node == f.B && f.Dir == Both:
			if err := add(*f, f.A); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// TC returns the tc commands that put node's part of s on dev, one a
// line; addr maps a node name to its IPv4 address. Nothing for a node
// with no part. A fault on all of a node's egress is a root netem; faults
// towards given nodes go to bands of a prio qdisc of their own, picked
// by a u32 filter on the destination address (bands 1:1-1:3 keep prio's
// default map, so the rest of the traffic is untouched).
func TC(s Spec, node, dev string, refMBps float64, addr func(string) (string, error)) ([]string, error) {
	rs, err := rules(s, node, refMBps)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	if len(rs) == 1 && rs[0].dst == "" {
		return []string{fmt.Sprintf("tc qdisc add dev %s root %s", dev, rs[0].netem)}, nil
	}
	out := []string{fmt.Sprintf("tc qdisc add dev %s root handle 1: prio bands %d priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1", dev, 3+len(rs))}
	for i, r := range rs {
		if r.dst == "" {
			// The bad node is never an end of the bad link (Parse).
			return nil, fmt.Errorf("node %s: a fault on all its egress and another towards %s", node, rs[1-i].dst)
		}
		a, err := addr(r.dst)
		if err != nil {
			return nil, err
		}
		band := 4 + i
		out = append(out,
			fmt.Sprintf("tc qdisc add dev %s parent 1:%d handle %d0: %s", dev, band, band, r.netem),
			fmt.Sprintf("tc filter add dev %s parent 1: protocol ip prio 1 u32 match ip dst %s/32 flowid 1:%d", dev, a, band))
	}
	return out, nil
}

// segmentAddr is the address of nodeN on the guests' segment,
// 192.0.2.N (loopback's -cluster).
func segmentAddr(node string) (string, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(node, "node"))
	if !strings.HasPrefix(node, "node") || err != nil || n < 1 || n > 254 {
		return "", fmt.Errorf("node %q: want node1..node254 (192.0.2.N)", node)
	}
	return "192.0.2." + strconv.Itoa(n), nil
}
