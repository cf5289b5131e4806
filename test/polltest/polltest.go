// Package polltest waits, in tests, for something running in the background
// to make a condition true: a pool to refill, a job to end, a container to
// appear.
package polltest

import (
	"testing"
	"time"
)

// interval is how long Until sleeps between two checks.
const interval = 50 * time.Millisecond

// Until checks cond until it holds and fails the test, saying what it was
// waiting for, when d passes first. cond runs on the caller's goroutine, so
// it may fail the test itself (testify's Eventually runs its condition on
// another goroutine, where t.FailNow must not be called).
func Until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	UntilState(t, d, what, cond, nil)
}

// UntilState is Until whose failure also shows what state returns then, such
// as the counts of a pool that did not settle.
func UntilState(t testing.TB, d time.Duration, what string, cond func() bool, state func() string) {
	t.Helper()
	UntilEvery(t, d, interval, what, cond, state)
}

// UntilEvery is UntilState checking once every pause, for a check that
// costs too much to repeat at Until's pace (running docker-compose, say).
func UntilEvery(t testing.TB, d, pause time.Duration, what string, cond func() bool, state func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			if state != nil {
				t.Fatalf("timed out after %s waiting for %s; %s", d, what, state())
			}
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(pause)
	}
}
