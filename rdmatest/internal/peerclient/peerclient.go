// Package peerclient is the client end of a session with a remote
// rdmapeer (-rdma.peer) that plays side B of a pair: it dials the peer
// (retrying until the deadline), proves the shared token in the
// handshake of package oob, asks for the passive side of a scenario, and
// starts and stops the peer's role.
package peerclient

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// Session is the client end of one peer session (one Pair).
type Session struct {
	conn    net.Conn
	timeout time.Duration
	role    string      // the role the peer plays (Setup), for messages
	hello   oob.HelloOK // what the peer said of itself
}

// Dial connects to the peer at addr, retrying until the deadline (the
// peer may still be starting: perftest's client gives up at once, we do
// not), and says hello. Every dial error is retried, a host name the resolver does
// not know included: a resolver may answer "no such host" for a name
// that exists in a moment (a peer's service record not yet registered,
// or a search domain's answer masking a temporary failure), and the
// deadline is short (-rdma.timeout, 10 s by default). The last try is at
// the deadline; the error names the last cause that was not the dial's
// own time running out (a refusal, an unknown name), if there was one.
func Dial(addr, token string, timeout time.Duration) (*Session, error) {
	deadline := time.Now().Add(timeout)
	var conn net.Conn
	var err, cause error
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		// A zero timeout would mean none: the last try gets at least 1 ms.
		conn, err = net.DialTimeout("tcp", addr, max(time.Until(deadline), time.Millisecond))
		if err == nil {
			break
		}
		var ne net.Error
		if cause == nil || !(errors.As(err, &ne) && ne.Timeout()) {
			cause = err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("rdmatest: peer %s: no connection within %v: %w", addr, timeout, cause)
		}
		time.Sleep(min(wait, left))
	}
	r := &Session{conn: conn, timeout: timeout}
	if err := r.handshake(token); err != nil {
		conn.Close()
		return nil, fmt.Errorf("rdmatest: peer %s: %w", addr, err)
	}
	return r, nil
}

// ErrPeerAuth is a peer that failed to prove it knows the token.
var ErrPeerAuth = oob.ErrPeerAuth

// handshake says hello and proves knowledge of token without sending it
// (package oob, Authentication); with a token, the peer must prove it
// too.
func (r *Session) handshake(token string) error {
	hello, err := oob.Handshake(r.conn, token, hostname(), r.timeout)
	r.hello = hello
	return err
}

// call sends one message and decodes the answer, within the deadline.
func (r *Session) call(t oob.MsgType, req any, want oob.MsgType, resp oob.Validator) error {
	return oob.Call(r.conn, r.timeout, t, req, want, resp)
}

// Setup asks the peer for the passive side that req describes (its
// scenario, with the client's endpoints and targets) and returns the
// peer's answer: its endpoints, targets and path MTU.
func (r *Session) Setup(req *oob.Setup) (oob.SetupOK, error) {
	r.role = req.Scenario.Role
	var ok oob.SetupOK
	err := r.call(oob.MsgSetup, req, oob.MsgSetupOK, &ok)
	return ok, err
}

// Start tells the peer to run its role, and waits until it does.
func (r *Session) Start() error {
	var ok oob.Started
	if err := r.call(oob.MsgStart, &oob.Start{}, oob.MsgStarted, &ok); err != nil {
		return fmt.Errorf("rdmatest: peer: starting %s: %w", r.role, err)
	}
	return nil
}

// Stop ends the peer's role and closes the session; the peer releases
// everything of this session when the connection closes.
func (r *Session) Stop() error {
	_, err := r.StopWith(oob.Stop{})
	return err
}

// StopWith is Stop with req's asks (oob.Stop: receives to wait for
// first, the sink's receive interval), and returns what the peer
// reports (oob.Stopped).
func (r *Session) StopWith(req oob.Stop) (oob.Stopped, error) {
	var done oob.Stopped
	err := r.call(oob.MsgStop, &req, oob.MsgStopped, &done)
	if err != nil {
		err = fmt.Errorf("rdmatest: peer: stopping %s: %w", r.role, err)
	}
	return done, errors.Join(err, r.Close())
}

// Close closes the session (again: nothing) without stopping the role:
// the peer releases everything of this session when the connection
// closes.
func (r *Session) Close() error {
	if r.conn == nil {
		return nil
	}
	err := r.conn.Close()
	r.conn = nil
	return err
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}
