package browsers

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What a page sees of a browser is an ordinary Chrome's (docs/stealth.md).
// Most of it is ChromiumFlags'; this file holds what depends on the
// machine: the user agent of the Chromium installed, without headless
// Chromium's "HeadlessChrome" (a flag, so that pages, frames, workers and
// every session's tabs say it), and a time zone other than UTC, which no
// user's machine reports and detectors flag.

// ReducedUserAgent is the user agent a Chromium of version
// ("156.0.8078.114") running on Linux reports, as a headful one gives it:
// Chromium's reduced user agent, which names only the major version, on a
// platform fixed per system. ok is false when version is not Chromium's.
func ReducedUserAgent(version string) (ua string, ok bool) {
	major, _, _ := strings.Cut(version, ".")
	if n, err := strconv.Atoi(major); err != nil || n <= 0 {
		return "", false
	}
	return "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + major + ".0.0.0 Safari/537.36", true
}

// DefaultTimezone is the browsers' time zone when Trawler's own is UTC:
// that of the default languages (en-US).
const DefaultTimezone = "America/New_York"

// Timezone is the browsers' time zone: Trawler's (TZ, else the system's),
// unless that is UTC or unknown.
func Timezone() string {
	tz := strings.TrimPrefix(os.Getenv("TZ"), ":")
	if tz == "" {
		if link, err := os.Readlink("/etc/localtime"); err == nil {
			if _, zone, ok := strings.Cut(filepath.ToSlash(link), "zoneinfo/"); ok {
				tz = zone
			}
		}
	}
	switch strings.TrimPrefix(tz, "Etc/") {
	case "", "UTC", "UCT", "GMT", "Universal", "Zulu", "GMT0", "Greenwich":
		return DefaultTimezone
	}
	if strings.HasPrefix(tz, "/") {
		return DefaultTimezone // a file's path: no zone name to give on
	}
	return tz
}

// versioned is a runtime that can tell its Chromium's version without
// starting a browser.
type versioned interface {
	ChromiumVersion(ctx context.Context) (string, error)
}

// PresentedFlags are the flags that make rt's browsers present the user
// agent of their Chromium: none when the version cannot be told (the tabs
// of scrapes still present it, from what the first browser says).
func PresentedFlags(ctx context.Context, rt versioned) []string {
	v, err := rt.ChromiumVersion(ctx)
	if err != nil {
		return nil
	}
	ua, ok := ReducedUserAgent(v)
	if !ok {
		return nil
	}
	return []string{"--user-agent=" + ua}
}
