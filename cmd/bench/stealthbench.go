package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/test/stealth"
)

// stealthDetection is what test/stealth/detect.html reports.
type stealthDetection struct {
	Botd struct {
		Bot bool `json:"bot"`
	} `json:"botd"`
	FastBotDetection bool     `json:"fastBotDetection"`
	Signals          []string `json:"signals"`
	Error            string   `json:"error"`
	BotdError        string   `json:"botdError"`
	FpError          string   `json:"fpError"`
}

// settleSamples is how many scrapes of each settle-pattern page are timed.
const settleSamples = 5

// stealthPhase runs test/stealth's bot detectors (BotD, fpscanner) on every
// path a page reaches Trawler's browsers by (a rendered scrape, on a
// desktop and a phone; a session driven by Playwright and by Puppeteer)
// and, on the same Chromium in the same run, on two baselines: a plain
// Playwright-launched headless browser and Puppeteer with
// puppeteer-extra-plugin-stealth (test/node/stealth-bench.mjs). Then it
// times rendered scrapes of the settle-pattern pages against the same
// content with nothing kept open.
func (b *bench) stealthPhase(ctx context.Context, _ *instance) error {
	h, err := stealth.Handler()
	if err != nil {
		return err
	}
	site := httptest.NewServer(h)
	defer site.Close()
	in, err := b.startWith(ctx, "stealth", 1, 2, scrapeEnv(2, 30*time.Second))
	if err != nil {
		return err
	}
	defer in.Close()

	found := map[string]stealthDetection{}
	for name, opts := range map[string]map[string]any{"trawler_scrape": nil, "trawler_scrape_mobile": {"mobile": true}} {
		d, err := in.detectByScrape(ctx, site.URL, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		found[name] = d
	}
	var cdpURLs, ids []string
	for range 2 {
		c, err := in.create(ctx)
		if err != nil {
			return err
		}
		ids = append(ids, c.ID)
		cdpURLs = append(cdpURLs, c.CDPURL)
	}
	script, err := filepath.Abs("test/node/stealth-bench.mjs")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "node", append([]string{script, site.URL, b.chromium}, cdpURLs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	for _, id := range ids {
		if derr := in.do(ctx, http.MethodDelete, "/v2/browser/"+id, nil, nil); derr != nil {
			logf("deleting session %s: %v", id, derr)
		}
	}
	if err != nil {
		return fmt.Errorf("stealth-bench.mjs: %w: %s", err, stderr.String())
	}
	var node map[string]stealthDetection
	if err := json.Unmarshal(out, &node); err != nil {
		return fmt.Errorf("stealth-bench.mjs: %w: %s", err, out)
	}
	for k, v := range node {
		found[k] = v
	}
	flaggedTrawler, flaggedBase := 0, 0
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range found {
			if !yield(k) {
				return
			}
		}
	}) {
		d := found[name]
		if e := d.Error + d.BotdError + d.FpError; e != "" {
			return fmt.Errorf("%s: the detectors failed: %s", name, e)
		}
		logf("stealth %s: BotD bot=%v, fpscanner fastBotDetection=%v %v", name, d.Botd.Bot, d.FastBotDetection, d.Signals)
		figure("stealth_"+name+"_botd_bot", bool01(d.Botd.Bot), "flag")
		figure("stealth_"+name+"_fpscanner_bot", bool01(d.FastBotDetection), "flag")
		// A session's hasCDP is its client's own Runtime.enable
		// (docs/stealth.md): counted apart.
		own := slices.DeleteFunc(slices.Clone(d.Signals), func(s string) bool {
			return strings.HasPrefix(name, "trawler_session_") && strings.HasPrefix(s, "hasCDP:")
		})
		figure("stealth_"+name+"_fpscanner_signals", float64(len(own)), "count")
		flagged := d.Botd.Bot || len(own) > 0
		if strings.HasPrefix(name, "trawler_") {
			flaggedTrawler += int(bool01(flagged))
		} else {
			flaggedBase += int(bool01(flagged))
		}
	}
	figure("stealth_trawler_paths_flagged", float64(flaggedTrawler), "paths")
	figure("stealth_baselines_flagged", float64(flaggedBase), "paths")
	return in.settlePatterns(ctx, site.URL)
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// detectByScrape scrapes the detectors' page with opts, waiting for them.
func (in *instance) detectByScrape(ctx context.Context, site string, opts map[string]any) (stealthDetection, error) {
	var d stealthDetection
	body := map[string]any{"url": site + "/detect.html", "formats": []any{"markdown"}, "maxAge": 0, "actions": []any{
		map[string]any{"type": "wait", "selector": "#done"},
		map[string]any{"type": "executeJavascript", "script": "return document.getElementById('out').textContent"},
	}}
	for k, v := range opts {
		body[k] = v
	}
	raw, _ := json.Marshal(body)
	var a struct {
		Data struct {
			Actions struct {
				JavascriptReturns []struct {
					Value string `json:"value"`
				} `json:"javascriptReturns"`
			} `json:"actions"`
		} `json:"data"`
	}
	if err := in.do(ctx, http.MethodPost, "/v2/scrape", raw, &a); err != nil {
		return d, err
	}
	if len(a.Data.Actions.JavascriptReturns) != 1 {
		return d, fmt.Errorf("the scrape returned no detection")
	}
	return d, json.Unmarshal([]byte(a.Data.Actions.JavascriptReturns[0].Value), &d)
}

// settlePatterns times rendered scrapes of each settle-pattern page and of
// the plain page with the same content, interleaved.
func (in *instance) settlePatterns(ctx context.Context, site string) error {
	pages := append([]string{"/settle/plain"}, stealth.Patterns...)
	took := map[string][]time.Duration{}
	for range settleSamples {
		for _, p := range pages {
			start := time.Now()
			raw, _ := json.Marshal(map[string]any{"url": site + p, "formats": []any{"markdown"}, "maxAge": 0})
			var a scrapeAnswer
			if err := in.do(ctx, http.MethodPost, "/v2/scrape", raw, &a); err != nil {
				return err
			}
			if !strings.Contains(a.Data.Markdown, stealth.Content) {
				return fmt.Errorf("%s was taken without its content: %s", p, a.Data.Markdown)
			}
			took[p] = append(took[p], time.Since(start))
		}
	}
	var all []time.Duration
	for _, p := range pages {
		name := strings.TrimPrefix(p, "/settle/")
		logf("scrape rendered %s: %s", name, msList(took[p]))
		figure("scrape_rendered_"+name+"_p50_ms", ms(median(took[p])), "ms")
		if p != "/settle/plain" {
			all = append(all, took[p]...)
		}
	}
	figure("scrape_rendered_settle_patterns_p50_ms", ms(median(all)), "ms")
	figure("scrape_rendered_settle_patterns_max_ms", ms(slices.Max(all)), "ms")
	figure("scrape_rendered_settle_patterns_over_plain", float64(median(all))/float64(median(took["/settle/plain"])), "x")
	return nil
}
