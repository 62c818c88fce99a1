package main

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/peer"
)

// budget is an amount of each resource a client can make the peer create
// (see peer.Cost): QPs, work requests of every queue, completion
// queue entries, and memory (registered plus reserved for inline data).
type budget struct {
	QPs, WRs, CQEs int
	Mem            int64
}

func costOf(c peer.Cost) budget {
	return budget{QPs: c.QPs, WRs: c.WRs, CQEs: c.CQEs, Mem: c.Memory()}
}

// item is one resource of a budget, with the flag that sets its limit.
type item struct {
	name       string
	ask, limit int64
	flag       string
}

func (b budget) items(limit budget, scope string) []item {
	return []item{
		{"qps", int64(b.QPs), int64(limit.QPs), "-" + scope + "-qps"},
		{"work requests (queue depths × QPs)", int64(b.WRs), int64(limit.WRs), "-" + scope + "-wrs"},
		{"CQ entries", int64(b.CQEs), int64(limit.CQEs), "-" + scope + "-cqe"},
		{"memory bytes (registered + inline)", b.Mem, limit.Mem, "-" + scope + "-mem"},
	}
}

// ErrOverLimit is a request beyond the peer's per-client or total limits.
var ErrOverLimit = errors.New("over this peer's limit")

// within checks a client's cost against the per-client limits.
func (b budget) within(limit budget) error {
	var errs []error
	for _, it := range b.items(limit, "max") {
		if it.ask > it.limit {
			errs = append(errs, fmt.Errorf("%s %d exceeds this peer's limit %d per client (%s): %w", it.name, it.ask, it.limit, it.flag, ErrOverLimit))
		}
	}
	return errors.Join(errs...)
}

// pool is the global budget every session draws from.
type pool struct {
	mu    sync.Mutex
	total budget
	used  budget
}

// take reserves c, or says which resource is exhausted.
func (p *pool) take(c budget) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := budget{p.used.QPs + c.QPs, p.used.WRs + c.WRs, p.used.CQEs + c.CQEs, p.used.Mem + c.Mem}
	var errs []error
	used := p.used.items(p.total, "total")
	for i, it := range in.items(p.total, "total") {
		if it.ask > it.limit {
			errs = append(errs, fmt.Errorf("%s: %d in use by other clients + %d asked exceeds this peer's total %d (%s): %w",
				it.name, used[i].ask, it.ask-used[i].ask, it.limit, it.flag, ErrOverLimit))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	p.used = in
	return nil
}

// give returns what take reserved.
func (p *pool) give(c budget) {
	p.mu.Lock()
	p.used = budget{p.used.QPs - c.QPs, p.used.WRs - c.WRs, p.used.CQEs - c.CQEs, p.used.Mem - c.Mem}
	p.mu.Unlock()
}

func (p *pool) inUse() budget {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Failed handshakes: after maxFails from one address within failWindow,
// the address is refused for blockFor.
const (
	maxFails   = 5
	failWindow = time.Minute
	blockFor   = time.Minute
)

// hosts counts connections and failed handshakes per remote address.
type hosts struct {
	mu       sync.Mutex
	perHost  int
	m        map[string]*hostState
	now      func() time.Time
	maxFails int
}

type hostState struct {
	conns        int
	fails        []time.Time
	blockedUntil time.Time
}

func newHosts(perHost int) *hosts {
	return &hosts{perHost: perHost, m: map[string]*hostState{}, now: time.Now, maxFails: maxFails}
}

// hostOf is the address's IP (the whole string when it has no port).
func hostOf(a net.Addr) string {
	if a == nil {
		return "unknown"
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return h
}

// admit counts a new connection from host, or refuses it.
func (h *hosts) admit(host string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.state(host)
	if now := h.now(); now.Before(st.blockedUntil) {
		return fmt.Errorf("refused: %d failed handshakes from %s within %v; try again in %v", len(st.fails), host, failWindow, st.blockedUntil.Sub(now).Round(time.Second))
	}
	if st.conns >= h.perHost {
		return fmt.Errorf("refused: %d connections from %s already (-max-conns-per-host %d)", st.conns, host, h.perHost)
	}
	st.conns++
	return nil
}

// state is host's entry, made when missing; h.mu is held.
func (h *hosts) state(host string) *hostState {
	st := h.m[host]
	if st == nil {
		st = &hostState{}
		h.m[host] = st
	}
	return st
}

// release ends a connection admitted for host.
func (h *hosts) release(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.m[host]
	if st == nil {
		return
	}
	st.conns--
	h.prune(host, st)
}

// fail records a failed handshake from host and tells how many there
// were within failWindow, and whether host is now blocked.
func (h *hosts) fail(host string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.state(host)
	now := h.now()
	st.fails = append(st.fails, now)
	h.prune(host, st)
	if len(st.fails) >= h.maxFails {
		st.blockedUntil = now.Add(blockFor)
		return len(st.fails), true
	}
	return len(st.fails), false
}

// prune forgets failures older than failWindow, and host when nothing of
// it is left.
func (h *hosts) prune(host string, st *hostState) {
	now := h.now()
	i := 0
	for i < len(st.fails) && now.Sub(st.fails[i]) > failWindow {
		i++
	}
	st.fails = st.fails[i:]
	if st.conns == 0 && len(st.fails) == 0 && !now.Before(st.blockedUntil) {
		delete(h.m, host)
	}
}
