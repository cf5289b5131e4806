// Package relay forwards a loopback port to a server, and can cut every
// connection through it and refuse new ones: how tests take a dependency
// (a database, an object store) away from a running service and give it
// back.
package relay

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Relay forwards connections on Addr to a target address.
type Relay struct {
	// Addr is the relay's host:port on 127.0.0.1.
	Addr string

	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

// Start relays a loopback port to target (host:port) until t ends.
func Start(t testing.TB, target string) *Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{Addr: ln.Addr().String(), target: target}
	t.Cleanup(func() {
		ln.Close()
		r.Cut()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			if r.down {
				r.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", r.target)
			if err != nil {
				r.mu.Unlock()
				c.Close()
				continue
			}
			r.conns = append(r.conns, c, up)
			r.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return r
}

// Cut closes every relayed connection and refuses new ones.
func (r *Relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = true
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

// Restore relays new connections again.
func (r *Relay) Restore() {
	r.mu.Lock()
	r.down = false
	r.mu.Unlock()
}
