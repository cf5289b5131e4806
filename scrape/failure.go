package scrape

import (
	"errors"
	"net/http"
	"time"

	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/parse"
	"github.com/trawler-dev/trawler/scrape/media"
)

// Failure is how a failed scrape is reported, the same on every path: the
// HTTP status of a scrape (or parse) request that failed so, and the code
// and message of that answer; a job's record of a page that failed so
// carries the same code (GET /v2/crawl/{id}/errors).
type Failure struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, in seconds, is when a request failing so may be sent
	// again (the Retry-After header); 0 says nothing.
	RetryAfter int
}

// Classify is the one table of scrape failures: the page's own failures,
// those of the network guard and of the document parser. ok is false for an
// error that is none of them (a busy pool, a shutdown, a bug): the caller
// says what that is.
func Classify(err error) (f Failure, ok bool) {
	var (
		blocked  *netguard.BlockedError
		resolve  *netguard.ResolveError
		load     *LoadError
		action   *ActionError
		typeErr  *parse.TypeError
		budget   *parse.BudgetError
		busy     *parse.BusyError
		parseErr *ParseError
		retry    *RetryableError
		big      *media.TooLargeError
	)
	switch {
	case errors.As(err, &blocked):
		return Failure{Status: http.StatusForbidden, Code: "URL_BLOCKED", Message: blocked.Error()}, true
	case errors.As(err, &resolve):
		return Failure{Status: http.StatusBadGateway, Code: "SCRAPE_LOAD_ERROR", Message: "the target's host name could not be resolved: " + resolve.Host}, true
	case errors.Is(err, ErrTimeout):
		return Failure{Status: http.StatusRequestTimeout, Code: "SCRAPE_TIMEOUT", Message: "Scrape timed out"}, true
	case errors.Is(err, ErrNoCachedData):
		return Failure{Status: http.StatusNotFound, Code: "SCRAPE_NO_CACHED_DATA", Message: "no cached data for this URL is at least minAge old"}, true
	case errors.Is(err, ErrLockdownMiss):
		return Failure{Status: http.StatusNotFound, Code: "SCRAPE_LOCKDOWN_CACHE_MISS",
			Message: "lockdown: the cache has no entry for this URL, and lockdown never contacts the target"}, true
	case errors.Is(err, ErrPageCrashed):
		return Failure{Status: http.StatusBadGateway, Code: "SCRAPE_PAGE_CRASHED", Message: "the page crashed the browser tab"}, true
	case errors.As(err, &load):
		return Failure{Status: http.StatusBadGateway, Code: "SCRAPE_LOAD_ERROR", Message: load.Error()}, true
	case errors.As(err, &action):
		return Failure{Status: http.StatusUnprocessableEntity, Code: "SCRAPE_ACTION_ERROR", Message: action.Error()}, true
	case errors.As(err, &typeErr):
		return Failure{Status: http.StatusUnsupportedMediaType, Code: "UNSUPPORTED_FILE_TYPE", Message: typeErr.Error()}, true
	case errors.As(err, &budget):
		// Like a document too large in any other way (parse.ErrTooLarge),
		// the document is at fault: it is not the request that is large.
		return Failure{Status: http.StatusUnprocessableEntity, Code: "PARSE_ERROR", Message: budget.Error()}, true
	case errors.As(err, &busy):
		return Failure{Status: http.StatusTooManyRequests, Code: "RATE_LIMITED", Message: busy.Error(),
			RetryAfter: int((busy.RetryAfter + time.Second - 1) / time.Second)}, true
	case errors.As(err, &parseErr):
		return Failure{Status: http.StatusUnprocessableEntity, Code: "PARSE_ERROR", Message: parseErr.Error()}, true
	case errors.As(err, &big):
		return Failure{Status: http.StatusRequestEntityTooLarge, Code: "MEDIA_TOO_LARGE", Message: big.Error()}, true
	case errors.As(err, &retry):
		// Only a job's pages meet it, and only once their retries are spent.
		return Failure{Status: http.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: retry.Error()}, true
	}
	return Failure{}, false
}
