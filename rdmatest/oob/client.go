package oob

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrPeerAuth is a peer that failed to prove it knows the token.
var ErrPeerAuth = errors.New("the peer did not prove it knows the token (a different token, or not the peer you meant)")

// Handshake is the client's side of the conversation's opening on conn:
// Hello (client is free text for the peer's log), the peer's Challenge,
// Auth with the proof of token, and the peer's HelloOK, each exchange
// within timeout. With a token the peer must prove it knows it too
// (ErrPeerAuth otherwise); without one, a peer that asks for a token is
// refused here, before anything is sent that depends on it.
func Handshake(conn net.Conn, token, client string, timeout time.Duration) (HelloOK, error) {
	var ok HelloOK
	nonce, err := NewNonce()
	if err != nil {
		return ok, err
	}
	var ch Challenge
	if err := Call(conn, timeout, MsgHello, &Hello{Version: Version, Client: client, Nonce: nonce}, MsgChallenge, &ch); err != nil {
		return ok, err
	}
	if ch.TokenRequired && token == "" {
		return ok, errors.New("the peer requires a token: set RDMA_PEER_TOKEN or -rdma.peer-token-file (or -rdma.peer-token) to the peer's")
	}
	if !ch.TokenRequired && token != "" {
		// A client with a token trusts only a peer that proves it: an
		// open peer (or anything claiming to be one) would get the
		// rkeys of side A's buffer, or be trusted with a node's facts.
		return ok, fmt.Errorf("%w: it asks for no token, but this client has one (unset it to use an open peer)", ErrPeerAuth)
	}
	auth := &Auth{Proof: ClientProof(token, ch.Nonce, nonce)}
	if err := Call(conn, timeout, MsgAuth, auth, MsgHelloOK, &ok); err != nil {
		return ok, err
	}
	if ch.TokenRequired && !ProofOK(ok.Proof, PeerProof(token, nonce, ch.Nonce)) {
		return ok, ErrPeerAuth
	}
	return ok, nil
}

// Call sends one message of type t and decodes the answer, which must be
// of type want (or an Error: *PeerError), within timeout.
func Call(conn net.Conn, timeout time.Duration, t MsgType, req any, want MsgType, resp Validator) error {
	conn.SetDeadline(time.Now().Add(timeout))
	defer conn.SetDeadline(time.Time{})
	if err := WriteFrame(conn, t, req); err != nil {
		return err
	}
	return Decode(conn, want, resp)
}
