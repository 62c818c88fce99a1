package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/rdmatest/peer"
)

// limits bound what clients may make the peer create and how long they
// may take.
type limits struct {
	clients int // sessions at once (after authentication)
	perHost int // connections per remote address, handshakes included
	conns   int // connections from all addresses together, handshakes included
	hosts   int // remote addresses tracked at once (see defaultMaxHosts)
	// prefixV4, prefixV6: the prefixes sharing a lockout and a log
	// budget (see prefixMaxFails).
	prefixV4, prefixV6 int
	hello              time.Duration
	idle               time.Duration
	client             budget // per session
	total              budget // all sessions together
}

// defaultLimits are the flags' defaults: safe on a shared node (see the
// README's Security section).
var defaultLimits = limits{
	clients: 4, perHost: 4, conns: 64, hosts: defaultMaxHosts, prefixV4: defaultPrefixV4, prefixV6: defaultPrefixV6, hello: 5 * time.Second, idle: 10 * time.Minute,
	client: budget{QPs: 16, WRs: 32768, CQEs: 65536, Mem: 64 << 20},
	total:  budget{QPs: 64, WRs: 131072, CQEs: 262144, Mem: 256 << 20},
}

// step bounds each setup exchange after the handshake.
const step = 30 * time.Second

// server holds what every session shares.
type server struct {
	dev   device
	token string // empty: no authentication (loopback or -trusted-network)
	lim   limits
	// Sessions create their resources concurrently (dev.open is safe for
	// concurrent use, see device), at most lim.clients at a time: no
	// server-wide lock is held across device work, so one slow Setup
	// (address resolution can take a second per QP) stalls no other
	// session. What they share is locked where it lives: the budget
	// (pool.take), the table of hosts, the passive loops' CPUs.
	slots chan struct{}
	pool  pool
	hosts *hosts
	// agent is the -agent mode's state; nil without -agent.
	agent *agent
	// ok and failed count the sessions that ended, by how; panics the
	// sessions that ended in a recovered panic.
	ok, failed, panics atomic.Int64
	logf               func(format string, v ...any)
}

func newServer(dev device, token string, lim limits) *server {
	return &server{dev: dev, token: token, lim: lim, slots: make(chan struct{}, lim.clients),
		pool: pool{total: lim.total}, hosts: newHosts(lim.perHost, lim.hosts, lim.prefixV4, lim.prefixV6), logf: log.Printf}
}

// errShutdown ends the sessions when the peer stops.
var errShutdown = errors.New("the peer is shutting down")

// errAuth is a failed handshake; the client is told no more.
var errAuth = errors.New("authentication failed")

// serve accepts clients until ctx ends, then ends every session (QPs to
// error, resources released, clients told) and waits for them.
func serve(ctx context.Context, ln net.Listener, s *server) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	// The table of hosts is swept every sweepEvery (expired entries
	// dropped, due summaries of suppressed lines logged); at the end,
	// once every session is over, the summaries still pending are.
	swept := make(chan struct{})
	defer func() {
		close(swept)
		wg.Wait()
		s.logSweep(true)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				s.logSweep(false)
			case <-swept:
				return
			}
		}
	}()
	var delay time.Duration
	// open bounds the connections of all addresses together: the
	// per-address limit does not stop many addresses (an IPv6 range)
	// from holding a goroutine and a descriptor each through their
	// handshake timeouts. Beyond it a connection is closed at once,
	// unanswered; the refusals are logged at most once a second.
	open := make(chan struct{}, s.lim.conns)
	var refused int
	var lastLog time.Time
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// EMFILE, ENFILE, ECONNABORTED…: back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logf("accept: %v; retrying in %v", err, delay)
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		delay = 0
		select {
		case open <- struct{}{}:
		default:
			conn.Close()
			if refused++; time.Since(lastLog) >= time.Second {
				s.logf("refused %d connections: %d open already (-max-conns %d)", refused, s.lim.conns, s.lim.conns)
				refused, lastLog = 0, time.Now()
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-open }()
			s.handle(ctx, conn)
		}()
	}
}

// handle serves one connection from accept to close.
func (s *server) handle(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	who, host := conn.RemoteAddr().String(), hostOf(conn.RemoteAddr())
	if err := s.hosts.admit(host); err != nil {
		s.logHost(host, "%s: %v", who, err)
		conn.SetDeadline(time.Now().Add(time.Second))
		oob.WriteFrame(conn, oob.MsgError, &oob.Error{Msg: err.Error()})
		return
	}
	defer s.hosts.release(host)
	c := &session{s: s, conn: conn, who: who, host: host, watched: make(chan struct{}), done: make(chan struct{})}
	// Shutdown: unblock whatever the session waits for on the connection,
	// and keep it from setting a later deadline.
	go func() {
		defer close(c.watched)
		select {
		case <-ctx.Done():
			c.mu.Lock()
			c.stopping = true
			conn.SetDeadline(time.Now())
			c.mu.Unlock()
		case <-c.done:
		}
	}()
	err := c.run(ctx)
	close(c.done)
	switch {
	case err == nil:
		s.ok.Add(1)
		s.logHost(host, "%s: done", who)
	default:
		s.failed.Add(1)
		if !c.logged { // a failed handshake has its line already
			s.logHost(host, "%s: %s", who, oneLine(err))
		}
	}
}

// logHost logs a line about host within its log budget (see logBurst).
func (s *server) logHost(host, format string, v ...any) {
	if s.hosts.logLine(host) {
		s.logf(format, v...)
	}
}

// logSweep sweeps the table of hosts and logs the summaries of the
// suppressed lines (all of them when all).
func (s *server) logSweep(all bool) {
	for _, line := range s.hosts.sweep(all) {
		s.logf("%s", line)
	}
}

// session is one connection's conversation.
type session struct {
	s         *server
	conn      net.Conn
	who, host string
	client    string      // what the client calls itself (sanitised)
	hello     oob.HelloOK // the answer once the client authenticated
	watched   chan struct{}
	done      chan struct{}
	told      bool
	logged    bool // the session's end was logged (a failed handshake)
	// mu orders the session's deadlines after the shutdown's.
	mu       sync.Mutex
	stopping bool
}

// deadline sets the connection's deadline to d from now, unless the peer
// is shutting down (then the deadline is already past).
func (c *session) deadline(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopping {
		c.conn.SetDeadline(time.Now().Add(d))
	}
}

// writeDeadline sets the connection's write deadline alone (a read in
// progress keeps its own), unless the peer is shutting down.
func (c *session) writeDeadline(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopping {
		c.conn.SetWriteDeadline(time.Now().Add(d))
	}
}

// errClientLeft ends what a session waits on when its client closed
// the connection, or sent anything, while it was to say nothing: during
// an agent's Run (until RunDone) and a passive side's Start (until
// Started).
var errClientLeft = errors.New("the client left")

// watchClient reads the connection while the session works and the
// client is to send nothing, and calls left as soon as the read returns:
// the client closed it, reset it or broke the protocol, so the work is
// ended instead of holding the session's slot and budget. The writes
// meanwhile set write deadlines only (writeDeadline), so the read keeps
// none. The function it returns stops the watch and waits for it.
func (c *session) watchClient(left func(cause error)) (stop func()) {
	c.mu.Lock()
	if !c.stopping {
		c.conn.SetReadDeadline(time.Time{})
	}
	c.mu.Unlock()
	var quit atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [1]byte
		_, err := c.conn.Read(b[:])
		if quit.Load() {
			return
		}
		if err == nil {
			err = errors.New("it sent data")
		}
		left(fmt.Errorf("%w (%v)", errClientLeft, err))
	}()
	return func() {
		quit.Store(true)
		c.mu.Lock()
		c.conn.SetReadDeadline(time.Now()) // unblocks the read
		c.mu.Unlock()
		<-done
	}
}

// run does the handshake, takes a client slot, and serves the scenario.
// A panic ends the session with an error (and the client is told), not
// the daemon.
func (c *session) run(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.s.panics.Add(1)
			c.s.logHost(c.host, "%s: panic: %v\n%s", c.who, r, debug.Stack())
			err = c.fail(ctx, fmt.Errorf("internal error in the peer (panic: %v); the session is ended", r))
		}
	}()
	if err := c.handshake(ctx); err != nil {
		return err
	}
	select {
	case c.s.slots <- struct{}{}:
		defer func() { <-c.s.slots }()
	default:
		return c.fail(ctx, fmt.Errorf("busy: %d clients already (-max-clients)", c.s.lim.clients))
	}
	return c.serve(ctx)
}

// fail tells the client why its session ends (once) and returns err; when
// the peer is shutting down that is the reason.
func (c *session) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		<-c.watched // the watcher has set its deadline; ours comes after
		err = errShutdown
	}
	if !c.told {
		c.told = true
		c.conn.SetDeadline(time.Now().Add(time.Second)) // after the watcher's
		oob.WriteFrame(c.conn, oob.MsgError, &oob.Error{Msg: oneLine(err)})
	}
	return err
}

// handshake checks the client's version and its proof of the token
// (package oob, Authentication) within the hello deadline. A failure is
// counted against the remote address and logged with it.
func (c *session) handshake(ctx context.Context) error {
	c.deadline(c.s.lim.hello)
	var hello oob.Hello
	if err := oob.Decode(c.conn, oob.MsgHello, &hello); err != nil {
		if errors.Is(err, io.EOF) && ctx.Err() == nil {
			// Not an attempt (a port check, a client that gave up): not
			// counted against the address.
			return errors.New("closed the connection before saying hello")
		}
		return c.authFailed(ctx, fmt.Errorf("hello: %w", err))
	}
	c.client = oob.Sanitize(hello.Client)
	nonce, err := oob.NewNonce()
	if err != nil {
		return c.fail(ctx, err)
	}
	if err := oob.WriteFrame(c.conn, oob.MsgChallenge, &oob.Challenge{Nonce: nonce, TokenRequired: c.s.token != ""}); err != nil {
		return c.authFailed(ctx, err)
	}
	var auth oob.Auth
	if err := oob.Decode(c.conn, oob.MsgAuth, &auth); err != nil {
		return c.authFailed(ctx, fmt.Errorf("auth: %w", err))
	}
	if c.s.token != "" && !oob.ProofOK(auth.Proof, oob.ClientProof(c.s.token, nonce, hello.Nonce)) {
		return c.authFailed(ctx, errAuth)
	}
	ok := c.s.dev.info()
	if c.s.token != "" {
		ok.Proof = oob.PeerProof(c.s.token, hello.Nonce, nonce)
	}
	c.hello = ok
	return nil
}

// authFailed counts and logs a failed handshake; the client hears
// "authentication failed", with why its frames were refused (never
// anything about the token).
func (c *session) authFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return c.fail(ctx, err)
	}
	n, blocked := c.s.hosts.fail(c.host)
	note := ""
	if blocked != "" {
		note = fmt.Sprintf("; %s refused for %v", blocked, blockFor)
	}
	c.s.logHost(c.host, "%s (client %q): failed handshake (%d from this address within %v%s): %s", c.who, c.client, n, failWindow, note, oneLine(err))
	c.logged = true
	var ne net.Error
	switch {
	case errors.Is(err, errAuth):
		return c.fail(ctx, errAuth)
	case errors.As(err, &ne) && ne.Timeout():
		return c.fail(ctx, fmt.Errorf("%w: no handshake within %v (-hello-timeout)", errAuth, c.s.lim.hello))
	}
	return c.fail(ctx, fmt.Errorf("%w: %w", errAuth, err))
}

// serve answers the hello, then a Setup (setup, start, stop) or, from
// an agent's coordinator, a Facts or a Run request. Whatever ends it — a
// stop, an error, the client closing or dying, the peer's shutdown —
// releases everything.
func (c *session) serve(ctx context.Context) (err error) {
	conn, s := c.conn, c.s
	if err := oob.WriteFrame(conn, oob.MsgHelloOK, &c.hello); err != nil {
		return c.fail(ctx, err)
	}
	c.deadline(step)
	t, payload, err := oob.ReadFrame(conn)
	if err != nil {
		if errors.Is(err, io.EOF) && ctx.Err() == nil {
			return errors.New("the client left before asking for a scenario")
		}
		return c.fail(ctx, err)
	}
	switch {
	case (t == oob.MsgFacts || t == oob.MsgRun || t == oob.MsgClock) && s.agent == nil:
		return c.fail(ctx, fmt.Errorf("%s: this rdmapeer is not an agent (rdmapeer -agent)", t))
	case t == oob.MsgFacts:
		if err := oob.DecodeFrame(t, payload, oob.MsgFacts, &oob.Facts{}); err != nil {
			return c.fail(ctx, err)
		}
		return c.serveFacts(ctx, s.agent)
	case t == oob.MsgClock:
		if err := oob.DecodeFrame(t, payload, oob.MsgClock, &oob.Clock{}); err != nil {
			return c.fail(ctx, err)
		}
		return oob.WriteFrame(conn, oob.MsgClockOK, &oob.ClockOK{Now: time.Now().UnixNano()})
	case t == oob.MsgRun:
		var run oob.Run
		if err := oob.DecodeFrame(t, payload, oob.MsgRun, &run); err != nil {
			return c.fail(ctx, err)
		}
		return c.serveRun(ctx, s.agent, &run)
	}
	var req oob.Setup
	if err := oob.DecodeFrame(t, payload, oob.MsgSetup, &req); err != nil {
		return c.fail(ctx, err)
	}
	return c.serveSetup(ctx, &req)
}

// serveSetup serves the passive side of req: setup, start, stop.
func (c *session) serveSetup(ctx context.Context, req *oob.Setup) (err error) {
	conn, s := c.conn, c.s
	sc := req.Scenario
	lim := s.dev.limits()
	if err := peer.CheckSetup(req, lim); err != nil {
		return c.fail(ctx, err)
	}
	cost := costOf(req, lim)
	if err := cost.within(s.lim.client); err != nil {
		return c.fail(ctx, err)
	}
	if err := s.pool.take(cost); err != nil {
		return c.fail(ctx, err)
	}
	defer s.pool.give(cost)
	p, err := s.dev.open(req) // no lock: see server
	if err != nil {
		return c.fail(ctx, err)
	}
	defer func() {
		if err != nil {
			if aerr := p.Abort(); aerr != nil {
				s.logHost(c.host, "%s: %v", c.who, aerr)
			}
		}
		if cerr := p.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := oob.WriteFrame(conn, oob.MsgSetupOK, p.SetupOK()); err != nil {
		return c.fail(ctx, err)
	}
	if err := oob.Decode(conn, oob.MsgStart, &oob.Start{}); err != nil {
		if errors.Is(err, io.EOF) && ctx.Err() == nil {
			return errors.New("the client left before starting its scenario; released its resources")
		}
		return c.fail(ctx, err)
	}
	// Start waits for the client's rdma_cm connections, if any: a client
	// that leaves meanwhile ends the wait.
	var left atomic.Pointer[error]
	stopWatch := c.watchClient(func(cause error) { left.Store(&cause); p.Interrupt() })
	err = p.Start()
	stopWatch()
	if cause := left.Load(); cause != nil && err != nil {
		err = fmt.Errorf("%w: %w", *cause, err)
	}
	if err != nil {
		return c.fail(ctx, err)
	}
	c.deadline(step)
	if err := oob.WriteFrame(conn, oob.MsgStarted, &oob.Started{}); err != nil {
		return c.fail(ctx, err)
	}
	loop := "loop unpinned"
	switch {
	case sc.Role == "target":
		loop = "no loop (the NIC serves it)"
	case p.CPU() >= 0:
		loop = fmt.Sprintf("loop on CPU %d", p.CPU())
	}
	switch {
	case req.Program != nil:
		s.logHost(c.host, "%s (client %q): program of %d steps %s qps %d access %v, %s", c.who, c.client, len(req.Program.Steps), sc.Transport, sc.QPs, req.Access, loop)
	case len(req.Access) > 0: // an own pattern's side B without a program
		s.logHost(c.host, "%s (client %q): target %s qps %d access %v, %s", c.who, c.client, sc.Transport, sc.QPs, req.Access, loop)
	default:
		s.logHost(c.host, "%s (client %q): %s %s %s size %d qps %d, %s", c.who, c.client, sc.Role, sc.Transport, sc.Op, sc.Size, sc.QPs, loop)
	}

	// The scenario runs; the next frame is the client's Stop (or its
	// connection ending).
	c.deadline(s.lim.idle)
	var stop oob.Stop
	if err := oob.Decode(conn, oob.MsgStop, &stop); err != nil {
		if errors.Is(err, io.EOF) && ctx.Err() == nil {
			return errors.New("the client left without stopping; released its resources")
		}
		return c.fail(ctx, err)
	}
	st, err := p.StopWith(stop)
	if err != nil {
		return c.fail(ctx, err)
	}
	c.deadline(step)
	return oob.WriteFrame(conn, oob.MsgStopped, st)
}

// oneLine is err for a log line or an Error frame: joined errors on one
// line, sanitised and bounded (oob.Sanitize).
func oneLine(err error) string {
	return oob.Sanitize(strings.ReplaceAll(err.Error(), "\n", "; "))
}
