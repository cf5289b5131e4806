package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/execute"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/wire"
)

// Error is an error with its HTTP answer. The message is the user-facing
// sentence; internal causes stay in the log.
type Error struct {
	Status  int
	Code    string
	Message string
	Details any
	// RetryAfter, in seconds, is sent as the Retry-After header when set.
	RetryAfter int
}

func (e *Error) Error() string { return e.Message }

// FieldProblem is one entry of a validation error's details.
type FieldProblem struct {
	Path    []string `json:"path"`
	Message string   `json:"message"`
}

// Limits on a validation error's answer, which quotes what the request
// gave: a request with a million bad values is told about the first few,
// and how many more there are, not answered with each.
const (
	maxProblems       = 50
	maxProblemMessage = 1000
)

func badRequest(problems ...FieldProblem) *Error {
	if n := len(problems) - maxProblems; n > 0 {
		problems = append(problems[:maxProblems:maxProblems], FieldProblem{Path: []string{},
			Message: fmt.Sprintf("and %d more problems", n)})
	}
	msgs := make([]string, len(problems))
	for i := range problems {
		problems[i].Message = wire.Truncate(problems[i].Message, maxProblemMessage)
		msgs[i] = problems[i].Message
	}
	return &Error{Status: fiber.StatusBadRequest, Code: "BAD_REQUEST", Message: strings.Join(msgs, "; "), Details: problems}
}

func fieldError(path, format string, args ...any) FieldProblem {
	return FieldProblem{Path: strings.Split(path, "."), Message: fmt.Sprintf(format, args...)}
}

// errorHandler is where errors become the answers of Fiber's routes; the
// routes served on net/http (parse, watch) answer with toError too.
func (a *API) errorHandler(c *fiber.Ctx, err error) error {
	e := a.toError(err)
	if e.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(e.RetryAfter))
	}
	return c.Status(e.Status).JSON(e.body())
}

// body is e's answer in the wire format.
func (e *Error) body() wire.ErrorBody {
	return wire.ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details}
}

// toError is the one mapping from an error to its HTTP answer: a scrape's
// failures as scrape.Classify says, then the API's own.
func (a *API) toError(err error) *Error {
	if f, ok := scrape.Classify(err); ok {
		return &Error{Status: f.Status, Code: f.Code, Message: f.Message, RetryAfter: f.RetryAfter}
	}
	var e *Error
	var fe *fiber.Error
	var busy *browsers.BusyError
	var destroyed *sessions.DestroyedError
	var start *browsers.StartError
	var sandbox *execute.UnavailableError
	var unconfined *sessions.UnconfinedError
	var fault *store.FaultError
	var profileFault *profiles.StoreError
	switch {
	case errors.As(err, &profileFault):
		a.log.Error("the profile store failed", "err", err)
		return storageFault(profileFault.Full, "the profile store is full: the profile could not be saved",
			"the profile store is unavailable (a session that names a profile does not start without it)")
	case errors.As(err, &fault):
		// Whatever the request would have recorded, its result and its
		// charge, was recorded in full or not at all (store.FaultError).
		a.log.Error("the store failed", "err", err)
		return storageFault(fault.Full, "the service's data store is full: nothing of this request was recorded or charged",
			"the service's database is unavailable: nothing of this request was recorded or charged")
	case errors.Is(err, profiles.ErrLocked):
		return &Error{Status: fiber.StatusConflict, Code: "PROFILE_LOCKED",
			Message: "the profile is locked: another session is writing it (saveChanges:true); open it with saveChanges:false to read its last saved version, or retry when that session ends"}
	case errors.Is(err, profiles.ErrNotFound):
		return &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND", Message: "profile not found"}
	case errors.Is(err, crawl.ErrNotFound):
		return &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND", Message: "job not found"}
	case errors.Is(err, store.ErrNotFound):
		return &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND", Message: "not found"}
	case errors.As(err, &e):
		return e
	case errors.As(err, &fe):
		switch fe.Code {
		case fiber.StatusNotFound:
			return &Error{Status: fe.Code, Code: "NOT_FOUND", Message: "no such endpoint"}
		case fiber.StatusMethodNotAllowed:
			return &Error{Status: fe.Code, Code: "METHOD_NOT_ALLOWED", Message: "method not allowed on this endpoint"}
		case fiber.StatusRequestEntityTooLarge:
			return &Error{Status: fe.Code, Code: "PAYLOAD_TOO_LARGE", Message: "request body is larger than 10 MB"}
		default:
			return &Error{Status: fe.Code, Code: "BAD_REQUEST", Message: fe.Message}
		}
	case errors.As(err, &busy):
		secs := int(busy.RetryAfter.Seconds() + 0.999)
		return &Error{Status: fiber.StatusTooManyRequests, Code: "RATE_LIMITED",
			Message: "no browser available: " + busy.Reason + "; retry later", RetryAfter: secs}
	case errors.As(err, &destroyed):
		return &Error{Status: fiber.StatusGone, Code: "SESSION_DESTROYED", Message: destroyed.Error()}
	case errors.As(err, &unconfined):
		return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: unconfined.Error()}
	case errors.Is(err, sessions.ErrNotFound):
		return &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND", Message: "browser session not found"}
	case errors.As(err, &start) && errors.Is(err, syscall.ENOSPC):
		a.log.Error("browser start failed", "err", err)
		return storageFault(true, "the service's data directory is full: no browser could be started", "")
	case errors.As(err, &start):
		a.log.Error("browser start failed", "err", err)
		return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: "could not start a browser; see the server log"}
	case errors.Is(err, execute.ErrBusy):
		return &Error{Status: fiber.StatusTooManyRequests, Code: "RATE_LIMITED", RetryAfter: 5,
			Message: "too many executions are running on this server; retry later"}
	case errors.As(err, &sandbox):
		a.log.Error("execute sandbox failed", "err", err)
		return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: sandbox.Error()}
	case errors.Is(err, sessions.ErrNoRecorder):
		return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: err.Error()}
	case errors.Is(err, sessions.ErrClosed), errors.Is(err, browsers.ErrPoolClosed):
		return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: "the service is shutting down"}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: "the request took too long"}
	}
	id := uuid.NewString()
	a.log.Error("internal error", "errorId", id, "err", err)
	return &Error{Status: fiber.StatusInternalServerError, Code: "INTERNAL",
		Message: "internal error " + id + " (the server log has the details)", Details: fiber.Map{"errorId": id}}
}

// storageFault is the answer to a store that failed for its own state:
// 507 STORAGE_FULL when it is full, else 503 UNAVAILABLE, each with what
// happened and when to retry.
func storageFault(full bool, fullMsg, unavailableMsg string) *Error {
	if full {
		return &Error{Status: fiber.StatusInsufficientStorage, Code: "STORAGE_FULL", RetryAfter: 30,
			Message: fullMsg + "; retry once the operator has freed space"}
	}
	return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", RetryAfter: 5,
		Message: unavailableMsg + "; retry later"}
}
