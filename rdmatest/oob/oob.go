// Package oob is the out-of-band exchange between a benchmark process and
// a remote peer (cmd/rdmapeer): the TCP conversation that sets up the
// passive side of a scenario on another host before any RDMA traffic.
//
// # Wire format
//
// Every message is a frame:
//
//	magic   4 bytes  "RDBP"
//	version 1 byte   Version (a peer refuses any other, naming both)
//	type    1 byte   a MsgType
//	length  4 bytes  big endian, payload bytes, at most MaxPayload
//	payload          JSON of the type's struct, unknown fields refused
//
// Every field is bounded and validated after decoding (Validate methods),
// so a peer never acts on a malformed or oversized request.
//
// # Conversation
//
//	client → Hello{Version, Client, Nonce}    peer → Challenge{Nonce, TokenRequired} or Error
//	client → Auth{Proof}                      peer → HelloOK{Device…, Proof} or Error
//	client → Setup{Scenario, Endpoints, QKey} peer → SetupOK{Endpoints, Targets} or Error
//	client → Start                            peer → Started (its passive role runs)
//	client → Stop                             peer → Stopped{Counts}; resources released
//
// An agent (rdmapeer -agent, for rdmafabric) also takes, instead of
// Setup, one of:
//
//	client → Facts                            peer → FactsOK{Node, Lines}
//	client → Run{Dst, Scenario, Runs, Iters}  peer → RunResult × Runs, then RunDone (or Error)
//
// A peer that is not an agent answers them with an Error.
//
// A connection that closes at any point releases everything the peer made
// for it; the peer may send an Error instead of any answer (a refusal, or
// its shutdown).
//
// # Authentication
//
// The token never travels. Each side sends a fresh random nonce; the
// client proves it knows the token with ClientProof (HMAC-SHA256 keyed
// with the token over the peer's nonce and its own), the peer with
// PeerProof over the same nonces in the other order; both compare in
// constant time (hmac.Equal). A recorded handshake is useless on another
// connection, whose peer nonce differs. The exchange does not encrypt:
// everything after it, and the scenario itself, is in clear, as perftest's.
//
// Version 2 (this one) added the challenge; version 1 sent the token in
// Hello and is refused.
package oob

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Version is the protocol version this package speaks.
const Version = 2

// MaxPayload bounds a frame's payload (64 KiB).
const MaxPayload = 64 << 10

var magic = [4]byte{'R', 'D', 'B', 'P'}

// MsgType identifies a frame's payload.
type MsgType uint8

// Message types.
const (
	MsgHello MsgType = iota + 1
	MsgHelloOK
	MsgSetup
	MsgSetupOK
	MsgStart
	MsgStop
	MsgStopped
	MsgError
	MsgStarted
	MsgChallenge
	MsgAuth
	MsgFacts
	MsgFactsOK
	MsgRun
	MsgRunResult
	MsgRunDone
	MsgClock
	MsgClockOK
	msgLast
)

func (t MsgType) String() string {
	names := [...]string{"", "Hello", "HelloOK", "Setup", "SetupOK", "Start", "Stop", "Stopped", "Error", "Started", "Challenge", "Auth",
		"Facts", "FactsOK", "Run", "RunResult", "RunDone", "Clock", "ClockOK"}
	if t > 0 && t < msgLast {
		return names[t]
	}
	return fmt.Sprintf("MsgType(%d)", uint8(t))
}

// FrameError is a malformed frame: what was wrong, with the value and the
// limit where there is one.
type FrameError struct {
	Reason string
	Err    error // what cut the frame short (a deadline, a closed connection), if anything
}

func (e *FrameError) Error() string {
	if e.Err != nil {
		return "oob: bad frame: " + e.Reason + ": " + e.Err.Error()
	}
	return "oob: bad frame: " + e.Reason
}

// Unwrap returns what cut the frame short: errors.Is(err,
// os.ErrDeadlineExceeded) tells a peer that stalled mid-frame.
func (e *FrameError) Unwrap() error { return e.Err }

// WriteFrame writes one frame with v encoded as its payload.
func WriteFrame(w io.Writer, t MsgType, v any) error {
	payload, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("oob: encoding %s: %w", t, err)
	}
	if len(payload) > MaxPayload {
		return &FrameError{Reason: fmt.Sprintf("%s payload of %d bytes exceeds %d", t, len(payload), MaxPayload)}
	}
	var hdr [10]byte
	copy(hdr[:4], magic[:])
	hdr[4], hdr[5] = Version, byte(t)
	binary.BigEndian.PutUint32(hdr[6:], uint32(len(payload)))
	if _, err := w.Write(append(hdr[:], payload...)); err != nil {
		return fmt.Errorf("oob: writing %s: %w", t, err)
	}
	return nil
}

// ReadFrame reads one frame's header and payload, checking magic,
// version, type and length before reading the payload.
func ReadFrame(r io.Reader) (MsgType, []byte, error) {
	var hdr [10]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, &FrameError{Reason: "truncated header", Err: err}
		}
		return 0, nil, err // io.EOF: the other side closed between frames
	}
	if !bytes.Equal(hdr[:4], magic[:]) {
		return 0, nil, &FrameError{Reason: fmt.Sprintf("magic %q, want %q (not an rdmabench peer?)", hdr[:4], magic[:])}
	}
	if hdr[4] != Version {
		return 0, nil, &FrameError{Reason: fmt.Sprintf("protocol version %d, this side speaks %d", hdr[4], Version)}
	}
	t := MsgType(hdr[5])
	if t == 0 || t >= msgLast {
		return 0, nil, &FrameError{Reason: fmt.Sprintf("unknown message type %d (known: 1..%d)", hdr[5], msgLast-1)}
	}
	n := binary.BigEndian.Uint32(hdr[6:])
	if n > MaxPayload {
		return 0, nil, &FrameError{Reason: fmt.Sprintf("%s payload length %d exceeds %d", t, n, MaxPayload)}
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, &FrameError{Reason: fmt.Sprintf("%s payload truncated", t), Err: err}
	}
	return t, payload, nil
}

// Decode reads one frame and decodes it into v, which must be of the
// type's struct; an Error frame from the peer is returned as *PeerError.
func Decode(r io.Reader, want MsgType, v Validator) error {
	t, payload, err := ReadFrame(r)
	if err != nil {
		return err
	}
	return DecodeFrame(t, payload, want, v)
}

// DecodeFrame decodes a frame that ReadFrame read, of type t, into v,
// as Decode does: for a side that reads a frame before it knows which
// message it is.
func DecodeFrame(t MsgType, payload []byte, want MsgType, v Validator) error {
	if t == MsgError && want != MsgError {
		var e Error
		if err := unmarshal(payload, &e); err != nil {
			return err
		}
		if err := e.Validate(); err != nil {
			return fmt.Errorf("oob: invalid Error from the peer: %w", err)
		}
		return &PeerError{Msg: Sanitize(e.Msg)}
	}
	if t != want {
		return &FrameError{Reason: fmt.Sprintf("got %s, want %s", t, want)}
	}
	if err := unmarshal(payload, v); err != nil {
		return err
	}
	if err := v.Validate(); err != nil {
		return fmt.Errorf("oob: invalid %s: %w", t, err)
	}
	return nil
}

func unmarshal(payload []byte, v any) error {
	d := json.NewDecoder(bufio.NewReader(bytes.NewReader(payload)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return &FrameError{Reason: fmt.Sprintf("payload: %v", err)}
	}
	if d.More() {
		return &FrameError{Reason: "payload: trailing data after the JSON value"}
	}
	return nil
}

// PeerError is an Error message the other side sent (Sanitize'd).
type PeerError struct{ Msg string }

func (e *PeerError) Error() string { return "oob: peer refused: " + e.Msg }

// Validator checks a decoded message's fields against their bounds.
type Validator interface{ Validate() error }

// NewNonce returns NonceLen random bytes from crypto/rand.
func NewNonce() ([]byte, error) {
	b := make([]byte, NonceLen)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("oob: nonce: %w", err)
	}
	return b, nil
}

// ClientProof is the client's answer to the peer's challenge:
// HMAC-SHA256 keyed with the token over a label, the peer's nonce and the
// client's nonce.
func ClientProof(token string, peerNonce, clientNonce []byte) []byte {
	return proof(token, "rdmabench oob v2 client", peerNonce, clientNonce)
}

// PeerProof is the peer's answer to the client's nonce: as ClientProof,
// with another label and the nonces the other way round, so that neither
// proof can stand for the other.
func PeerProof(token string, clientNonce, peerNonce []byte) []byte {
	return proof(token, "rdmabench oob v2 peer", clientNonce, peerNonce)
}

func proof(token, label string, a, b []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	for _, p := range [][]byte{[]byte(label), a, b} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return m.Sum(nil)
}

// ProofOK compares a received proof with the expected one in constant
// time.
func ProofOK(got, want []byte) bool { return hmac.Equal(got, want) }

// MaxTokenFile bounds a token file (ReadTokenFile).
const MaxTokenFile = 4 << 10

// ReadTokenFile reads a shared token from the file at path the one way
// both rdmapeer and its clients do: the first line, trimmed of white
// space, non-empty; the file must be a regular one of at most
// MaxTokenFile bytes (a token, not /dev/zero).
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("token file %q is not a regular file (%s)", path, st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("token file %q: %w", path, err)
	}
	if len(b) > MaxTokenFile {
		return "", fmt.Errorf("token file %q holds more than %d bytes: a token is one short line", path, MaxTokenFile)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	tok := string(bytes.TrimSpace(line))
	if tok == "" {
		return "", fmt.Errorf("token file %q: its first line is empty", path)
	}
	return tok, nil
}
