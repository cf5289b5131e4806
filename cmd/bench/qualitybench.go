package main

import (
	"bytes"
	"context"
	"net/url"
	"time"

	readability "github.com/go-shiori/go-readability"
	trafilatura "github.com/markusmobius/go-trafilatura"
	"golang.org/x/net/html"

	"github.com/trawler-dev/trawler/content"
	"github.com/trawler-dev/trawler/content/quality"
	"github.com/trawler-dev/trawler/scrape/detect"
)

// mainContentQuality scores onlyMainContent's Markdown, go-trafilatura
// and go-readability on trafilatura's evaluation corpus, as its
// comparison script does (package content/quality), and counts the pages
// of that corpus (all server-rendered) the render decision would send to
// a browser.
func (b *bench) mainContentQuality(ctx context.Context, _ *instance) error {
	dir, err := quality.ModuleDir(".")
	if err != nil {
		return err
	}
	pages, err := quality.Load(dir)
	if err != nil {
		return err
	}
	logf("quality corpus: %d pages of %s", len(pages), dir)
	extractors := []struct {
		name    string
		extract func(quality.Page, []byte, *url.URL) string
	}{
		{"", func(p quality.Page, body []byte, _ *url.URL) string {
			res, err := content.Transform(body, p.URL, content.Options{OnlyMainContent: true, Want: content.Want{Markdown: true}})
			if err != nil {
				return ""
			}
			return quality.PlainText(res.Markdown)
		}},
		{"_trafilatura", func(_ quality.Page, body []byte, u *url.URL) string {
			doc, err := html.Parse(bytes.NewReader(body))
			if err != nil {
				return ""
			}
			res, err := trafilatura.ExtractDocument(doc, trafilatura.Options{OriginalURL: u, ExcludeComments: true})
			if err != nil {
				return ""
			}
			return res.ContentText
		}},
		{"_readability", func(_ quality.Page, body []byte, u *url.URL) string {
			a, err := readability.FromReader(bytes.NewReader(body), u)
			if err != nil {
				return ""
			}
			return a.TextContent
		}},
	}
	counts := make([]quality.Counts, len(extractors))
	took := make([]time.Duration, len(extractors))
	rendered := 0
	for _, p := range pages {
		if err := ctx.Err(); err != nil {
			return err
		}
		body := p.UTF8()
		if !detect.ServerRendered(body, "text/html") {
			rendered++
		}
		u, _ := url.Parse(p.URL)
		for i, e := range extractors {
			t := time.Now()
			text := e.extract(p, body, u)
			took[i] += time.Since(t)
			counts[i].Add(p, text)
		}
	}
	for i, e := range extractors {
		c := counts[i]
		logf("main content%s: TP %d FN %d FP %d TN %d, %.1f ms a page", e.name, c.TP, c.FN, c.FP, c.TN,
			float64(took[i].Microseconds())/1000/float64(len(pages)))
		figure("main_content_f1"+e.name, c.F1(), "score")
		figure("main_content_precision"+e.name, c.Precision(), "score")
		figure("main_content_recall"+e.name, c.Recall(), "score")
	}
	figure("main_content_f1_over_trafilatura", counts[0].F1()/counts[1].F1(), "x")
	figure("render_needless_share", float64(rendered)/float64(len(pages)), "share")
	return nil
}
