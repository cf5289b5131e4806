package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// brandingRounds is how many times each design is scraped each way.
const brandingRounds = 15

// brandingDesigns are the local designs of scrape's branding tests
// (scrape/branding/testdata): light, dark, serif.
var brandingDesigns = []string{"/harbor/", "/nightfall/", "/fernleaf/"}

// brandingTime measures what the branding format adds to a rendered
// scrape: on a service of its own (one warm browser), each design is
// scraped with formats [screenshot] and with [screenshot, branding],
// maxAge 0, the two in alternating order, after a warm-up of each;
// branding_ms_p50 is the median of the pairs' differences (the goal is
// under 150 ms).
func (b *bench) brandingTime(ctx context.Context, _ *instance) error {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "scrape", "branding", "testdata")
	if _, err := os.Stat(filepath.Join(dir, "harbor", "index.html")); err != nil {
		return fmt.Errorf("the branding designs: %w", err)
	}
	site := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer site.Close()
	in, err := b.startWith(ctx, "branding", 1, 2, scrapeEnv(2, 30*time.Second))
	if err != nil {
		return err
	}
	defer in.Close()

	type answer struct {
		Data struct {
			Screenshot string          `json:"screenshot"`
			Branding   json.RawMessage `json:"branding"`
			Warning    string          `json:"warning"`
			Metadata   struct {
				Engine string `json:"engine"`
			} `json:"metadata"`
		} `json:"data"`
	}
	scrape := func(u string, branding bool) (time.Duration, error) {
		formats := []any{"screenshot"}
		if branding {
			formats = append(formats, "branding")
		}
		body, _ := json.Marshal(map[string]any{"url": u, "formats": formats, "maxAge": 0})
		var a answer
		t := time.Now()
		if err := in.do(ctx, http.MethodPost, "/v2/scrape", body, &a); err != nil {
			return 0, err
		}
		d := time.Since(t)
		switch {
		case a.Data.Metadata.Engine != "browser-render":
			return 0, fmt.Errorf("scrape %s: engine %q, want browser-render", u, a.Data.Metadata.Engine)
		case a.Data.Screenshot == "":
			return 0, fmt.Errorf("scrape %s: no screenshot", u)
		case branding && len(a.Data.Branding) < 100:
			return 0, fmt.Errorf("scrape %s: branding %s (warning %q)", u, a.Data.Branding, a.Data.Warning)
		case !branding && len(a.Data.Branding) > 0:
			return 0, errors.New("a scrape without the branding format answered one")
		}
		return d, nil
	}
	for _, p := range brandingDesigns {
		for _, branding := range []bool{false, true} {
			if _, err := scrape(site.URL+p, branding); err != nil {
				return err
			}
		}
	}
	var plain, branded, diffs []time.Duration
	for round := 0; round < brandingRounds; round++ {
		for _, p := range brandingDesigns {
			var pair [2]time.Duration
			order := []int{0, 1}
			if round%2 == 1 {
				order = []int{1, 0}
			}
			for _, k := range order {
				if err := in.waitWarm(ctx); err != nil {
					return err
				}
				d, err := scrape(site.URL+p, k == 1)
				if err != nil {
					return err
				}
				pair[k] = d
			}
			plain, branded = append(plain, pair[0]), append(branded, pair[1])
			diffs = append(diffs, pair[1]-pair[0])
		}
	}
	logf("branding: rendered scrape with a screenshot %.0f ms (p50), with the screenshot and branding %.0f ms, over %d pairs of %d designs",
		ms(median(plain)), ms(median(branded)), len(diffs), len(brandingDesigns))
	logf("branding: extra ms per pair: %s", msList(diffs))
	figure("branding_ms_p50", ms(median(diffs)), "ms")
	return nil
}
