//go:build !unix

package proxy

import "net"

// alive cannot check without a non-blocking peek: a closed connection shows
// when it is used.
func alive(net.Conn) bool { return true }

// peerClosed cannot tell without a peek: false.
func peerClosed(net.Conn) bool { return false }

// awaitPeerClose cannot wait without a peek: false at once (a client
// leaving shows when the response is written).
func awaitPeerClose(net.Conn) bool { return false }
