// Package logtest captures what a component logs for the test that reads
// it while the component runs.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a logger (or a process's output) writes and
// a test reads at the same time.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
