package peerclient

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// fakePeer answers one client's handshake on a loopback port: with
// token (empty: no token required); lie makes it send a wrong proof. It
// returns the address and what the client sent as its proof.
func fakePeer(t *testing.T, token string, lie bool) (string, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	proofs := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		var hello oob.Hello
		if oob.Decode(c, oob.MsgHello, &hello) != nil {
			return
		}
		nonce, _ := oob.NewNonce()
		oob.WriteFrame(c, oob.MsgChallenge, &oob.Challenge{Nonce: nonce, TokenRequired: token != ""})
		var auth oob.Auth
		if oob.Decode(c, oob.MsgAuth, &auth) != nil {
			return
		}
		proofs <- auth.Proof
		if token != "" && !oob.ProofOK(auth.Proof, oob.ClientProof(token, nonce, hello.Nonce)) {
			oob.WriteFrame(c, oob.MsgError, &oob.Error{Msg: "authentication failed"})
			return
		}
		ok := &oob.HelloOK{Device: "rxe0", Provider: "rxe", FW: "1", MTU: 1024}
		if token != "" {
			ok.Proof = oob.PeerProof(token, hello.Nonce, nonce)
			if lie {
				ok.Proof = oob.PeerProof("another-token-of-16", hello.Nonce, nonce)
			}
		}
		oob.WriteFrame(c, oob.MsgHelloOK, ok)
		oob.ReadFrame(c) // until the client closes
	}()
	return ln.Addr().String(), proofs
}

// TestPeerHandshake: the client proves the token without sending it,
// checks the peer's proof, and says clearly what is missing.
func TestPeerHandshake(t *testing.T) {
	const token = "0123456789abcdef-s3cret"
	for _, tc := range []struct {
		name, peerToken, clientToken string
		lie                          bool
		want                         string // "" = success
	}{
		{"both have the token", token, token, false, ""},
		{"open peer", "", "", false, ""},
		{"open peer, client with a token", "", token, false, "it asks for no token, but this client has one"},
		{"wrong token", token, "0123456789abcdef-guess", false, "oob: peer refused: authentication failed"},
		{"no token", token, "", false, "the peer requires a token: set RDMA_PEER_TOKEN"},
		{"peer without the token", token, token, true, "the peer did not prove it knows the token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, proofs := fakePeer(t, tc.peerToken, tc.lie)
			r, err := Dial(addr, tc.clientToken, 5*time.Second)
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, "rxe0", r.hello.Device)
				require.NoError(t, r.Close())
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
			}
			if tc.lie {
				assert.ErrorIs(t, err, ErrPeerAuth)
			}
			select {
			case p := <-proofs:
				assert.Len(t, p, oob.ProofLen)
				if tc.clientToken != "" {
					assert.NotContains(t, string(p), tc.clientToken, "the token never travels")
				}
			default:
			}
		})
	}
}

// A refused connection is retried until the deadline, then named.
func TestDialRetriesUntilTheDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	start := time.Now()
	_, err = Dial(addr, "", 300*time.Millisecond)
	require.Error(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "retried until the deadline, not given up before it")
	assert.Contains(t, err.Error(), "no connection within 300ms")
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the refusal is kept as the cause, not the last try's timeout")
}

// A name the resolver does not know is retried too (it may exist in a
// moment), and the error names the lookup.
func TestDialRetriesAnUnknownName(t *testing.T) {
	start := time.Now()
	_, err := Dial("peer.invalid:18515", "", 300*time.Millisecond)
	require.Error(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "retried until the deadline")
	var dns *net.DNSError
	require.ErrorAs(t, err, &dns, "the cause is the lookup")
	assert.Equal(t, "peer.invalid", dns.Name)
}
