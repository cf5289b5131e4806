package sessions

import (
	"errors"
	"fmt"
	"time"

	"github.com/trawler-dev/trawler/browsers"
)

// EndCode says why a session ended, for those that branch on it.
type EndCode string

// The ways a session ends.
const (
	// EndDeleted: DELETE /v2/browser/{id}.
	EndDeleted EndCode = "deleted"
	// EndShutdown: the service is shutting down.
	EndShutdown EndCode = "shutdown"
	// EndClientClosed: a CDP client sent Browser.close.
	EndClientClosed EndCode = "clientClosed"
	// EndTTL: the session reached its ttl.
	EndTTL EndCode = "ttl"
	// EndActivityTTL: the session was idle for its activityTtl.
	EndActivityTTL EndCode = "activityTtl"
	// EndBrowserExited: the session's browser exited on its own.
	EndBrowserExited EndCode = "browserExited"
	// EndRestarted: the service stopped without ending the session, and a
	// new run found it active in the store.
	EndRestarted EndCode = "restarted"
	// EndNodeLost: the node running the session's browser stopped saying
	// it is alive, and another node sharing its database ended the
	// session.
	EndNodeLost EndCode = "nodeLost"
)

// End is why a session ended: its code, and the text that is stored as the
// session's endReason and sent in close frames. A close frame's reason must
// stay under 123 bytes.
type End struct {
	Code EndCode
	Text string
}

func (e End) String() string { return e.Text }

// The ends whose text depends on nothing but their code.
var (
	Deleted      = End{EndDeleted, "session deleted by its owner"}
	Shutdown     = End{EndShutdown, "service shutting down"}
	ClientClosed = End{EndClientClosed, "browser closed by a CDP client"}
	Restarted    = End{EndRestarted, "service restarted"}
	NodeLost     = End{EndNodeLost, "the node running the session's browser was lost"}
)

func ttlEnd(ttl time.Duration) End {
	return End{EndTTL, fmt.Sprintf("ttl of %ds reached", int(ttl/time.Second))}
}

func idleEnd(ttl time.Duration) End {
	return End{EndActivityTTL, fmt.Sprintf("activityTtl of %ds passed without activity", int(ttl/time.Second))}
}

// leaseEnd is the end of a session whose lease ended under it, by cause.
func leaseEnd(cause error, ttl time.Duration) End {
	switch {
	case errors.Is(cause, browsers.ErrLeaseExpired):
		return ttlEnd(ttl)
	case errors.Is(cause, browsers.ErrPoolClosed):
		return Shutdown
	}
	// The browser exited (only the session itself releases its lease, once
	// it has ended): the text names the exit.
	return End{EndBrowserExited, cause.Error()}
}

// WebSocket close codes (RFC 6455, section 7.4.1).
const (
	closeNormal      = 1000
	closeGoingAway   = 1001
	closeServerError = 1011
)

// CloseCode is the WebSocket close code that tells a client of the session
// (a CDP client, a live-view viewer) of this end: going away when the
// service shuts down, an internal error when the browser exited, a normal
// closure otherwise.
func (e End) CloseCode() int {
	switch e.Code {
	case EndShutdown:
		return closeGoingAway
	case EndBrowserExited:
		return closeServerError
	}
	return closeNormal
}

// creditsPerMinute is what a session costs per browser minute, as
// Firecrawl bills its browser sessions.
const creditsPerMinute = 2

// recordingCreditsPerMinute is what recording a session adds per minute.
const recordingCreditsPerMinute = 1

// RecordingCredits is what recording a session that lasted d adds to its
// bill: recordingCreditsPerMinute for each minute it was started.
func RecordingCredits(d time.Duration) int {
	return startedMinutes(d) * recordingCreditsPerMinute
}

// startedMinutes counts the minutes started in d, at least one.
func startedMinutes(d time.Duration) int { return max(1, int((d+time.Minute-1)/time.Minute)) }

// Credits is what a session that lasted d is billed: creditsPerMinute for
// each minute it was started, at least one.
func Credits(d time.Duration) int {
	return startedMinutes(d) * creditsPerMinute
}
