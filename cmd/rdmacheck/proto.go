package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// The control channel: one JSON object per line over TCP, at most
// maxMsg bytes each, every read and write under a deadline.

const (
	protoVersion = 1
	maxMsg       = 4096
)

// Message types.
const (
	msgHello = "hello" // near → far: what the near end will do; far → near: its facts or its failure
	msgUDP   = "udp"   // near → far: datagrams come now (or Skip); far → near: whether one arrived
	msgCM    = "cm"    // near → far: about to connect; far → near: listening on CMPort, or its failure
	msgPings = "pings" // far → near: every ping checked, or the first mismatch
	msgBye   = "bye"   // near → far: done; far → near: what it left open (Live)
	msgFail  = "fail"  // far → near: the far end's failure in its current step
)

// message is every message of the control channel; Type says which
// fields mean something.
type message struct {
	Type    string `json:"type"`
	Version int    `json:"version,omitempty"`

	// hello
	Device    string `json:"device,omitempty"`
	Port      int    `json:"port,omitempty"`
	GIDIndex  int    `json:"gid_index,omitempty"`
	GID       string `json:"gid,omitempty"`
	GIDType   string `json:"gid_type,omitempty"`
	LinkLayer string `json:"link_layer,omitempty"`
	QPN       uint32 `json:"qpn,omitempty"`  // the UD QP
	QKey      uint32 `json:"qkey,omitempty"` // its Q_Key
	Size      int    `json:"size,omitempty"`
	Count     int    `json:"count,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`

	// verdicts
	Fail    string   `json:"fail,omitempty"` // a failed step's line, without "FAIL "
	Nonce   uint64   `json:"nonce,omitempty"`
	Skip    bool     `json:"skip,omitempty"`
	Got     bool     `json:"got,omitempty"`
	Stray   int      `json:"stray,omitempty"` // datagrams that were not ours
	CMPort  int      `json:"cm_port,omitempty"`
	Iter    int      `json:"iter,omitempty"`
	Mismat  string   `json:"mismatch,omitempty"`
	Live    []string `json:"live,omitempty"`
	Elapsed int64    `json:"elapsed_us,omitempty"`
	Waited  int64    `json:"waited_us,omitempty"` // how long the far end waited for a datagram
}

// ctl is one end of a control channel.
type ctl struct {
	c   net.Conn
	buf []byte // read but not yet taken: a partial line survives a read deadline
}

func newCtl(c net.Conn) *ctl { return &ctl{c: c} }

func (t *ctl) send(m message, deadline time.Time) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding a %q message: %w", m.Type, err)
	}
	if len(b) >= maxMsg {
		return fmt.Errorf("a %q message of %d bytes exceeds the limit %d", m.Type, len(b), maxMsg)
	}
	if err := t.c.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err = t.c.Write(append(b, '\n'))
	return err
}

// errTooLong is a line longer than maxMsg.
var errTooLong = fmt.Errorf("a control message longer than %d bytes", maxMsg)

// recv reads the next message within the deadline. A timeout keeps what
// was read so far for the next call.
func (t *ctl) recv(deadline time.Time) (message, error) {
	var m message
	for {
		if i := bytes.IndexByte(t.buf, '\n'); i >= 0 {
			line := t.buf[:i]
			t.buf = t.buf[i+1:]
			if err := json.Unmarshal(line, &m); err != nil {
				return m, fmt.Errorf("an unreadable control message (%d bytes): %w", len(line), err)
			}
			if m.Type == "" {
				return m, errors.New("a control message without a type")
			}
			return m, nil
		}
		if len(t.buf) >= maxMsg {
			return m, errTooLong
		}
		if err := t.c.SetReadDeadline(deadline); err != nil {
			return m, err
		}
		var chunk [maxMsg]byte
		n, err := t.c.Read(chunk[:maxMsg-len(t.buf)])
		t.buf = append(t.buf, chunk[:n]...)
		if err != nil && n == 0 {
			return m, err
		}
	}
}

// expect reads the next message and requires its type to be one of
// types; a msgFail from the far end comes back as a *farFail.
func (t *ctl) expect(deadline time.Time, types ...string) (message, error) {
	m, err := t.recv(deadline)
	if err != nil {
		return m, err
	}
	if m.Type == msgFail {
		return m, &farFail{line: m.Fail}
	}
	for _, ty := range types {
		if m.Type == ty {
			return m, nil
		}
	}
	return m, fmt.Errorf("a %q control message where %q was expected", m.Type, types)
}

// farFail is the far end's failure, as it reported it.
type farFail struct{ line string }

func (f *farFail) Error() string { return "the far end: " + f.line }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
