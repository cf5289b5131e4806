package scrape

import (
	"errors"
	"net/http"

	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/parse"
)

// Failure is how a failed scrape is reported, the same on every path: the
// HTTP status of a scrape (or parse) request that failed so, and the code
// and message of that answer; a job's record of a page that failed so
// carries the same code (GET /v2/crawl/{id}/errors).
type Failure struct {
	Status  int
	Code    string
	Message string
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
		parseErr *ParseError
		retry    *RetryableError
		big      *MediaTooLargeError
	)
	switch {
	case errors.As(err, &blocked):
		return Failure{http.StatusForbidden, "URL_BLOCKED", blocked.Error()}, true
	case errors.As(err, &resolve):
		return Failure{http.StatusBadGateway, "SCRAPE_LOAD_ERROR", "the target's host name could not be resolved: " + resolve.Host}, true
	case errors.Is(err, ErrTimeout):
		return Failure{http.StatusRequestTimeout, "SCRAPE_TIMEOUT", "Scrape timed out"}, true
	case errors.Is(err, ErrNoCachedData):
		return Failure{http.StatusNotFound, "SCRAPE_NO_CACHED_DATA", "no cached data for this URL is at least minAge old"}, true
	case errors.Is(err, ErrLockdownMiss):
		return Failure{http.StatusNotFound, "SCRAPE_LOCKDOWN_CACHE_MISS",
			"lockdown: the cache has no entry for this URL, and lockdown never contacts the target"}, true
	case errors.Is(err, ErrPageCrashed):
		return Failure{http.StatusBadGateway, "SCRAPE_PAGE_CRASHED", "the page crashed the browser tab"}, true
	case errors.As(err, &load):
		return Failure{http.StatusBadGateway, "SCRAPE_LOAD_ERROR", load.Error()}, true
	case errors.As(err, &action):
		return Failure{http.StatusUnprocessableEntity, "SCRAPE_ACTION_ERROR", action.Error()}, true
	case errors.As(err, &typeErr):
		return Failure{http.StatusUnsupportedMediaType, "UNSUPPORTED_FILE_TYPE", typeErr.Error()}, true
	case errors.As(err, &parseErr):
		return Failure{http.StatusUnprocessableEntity, "PARSE_ERROR", parseErr.Error()}, true
	case errors.As(err, &big):
		return Failure{http.StatusRequestEntityTooLarge, "MEDIA_TOO_LARGE", big.Error()}, true
	case errors.As(err, &retry):
		// Only a job's pages meet it, and only once their retries are spent.
		return Failure{http.StatusServiceUnavailable, "UNAVAILABLE", retry.Error()}, true
	}
	return Failure{}, false
}
