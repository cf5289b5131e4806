package scrape

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/model/modeltest"
	"github.com/trawler-dev/trawler/scrape/changetracking"
	"github.com/trawler-dev/trawler/store"
)

// trackRig calls trackChanges as run does, on a real store and, for the
// json mode, the test model server.
type trackRig struct {
	t   *testing.T
	s   *Service
	llm *modeltest.Server
}

func newTrackRig(t *testing.T) *trackRig {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	llm := modeltest.Start(t)
	m := model.New(model.Config{BaseURL: llm.URL, Model: modeltest.DefaultModel, Concurrency: 2, ContextTokens: 32000,
		OutputTokens: 1000}, nil)
	return &trackRig{t: t, llm: llm, s: &Service{Store: st, Model: m, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
}

// track scrapes markdown (answered with status) for team under f and
// returns the document and the credits trackChanges added.
func (r *trackRig) track(team string, status int, markdown string, f Format, edit func(*Request, *Document)) (*Document, int) {
	r.t.Helper()
	req := Request{Team: team, URL: "http://shop.test/pricing", Options: DefaultOptions()}
	doc := &Document{Markdown: markdown, Metadata: map[string]any{"url": req.URL}}
	if edit != nil {
		edit(&req, doc)
	}
	credits := r.s.trackChanges(context.Background(), req, "req-1", doc, &page{status: status}, f)
	require.NotNil(r.t, doc.ChangeTracking)
	return doc, credits
}

// The statuses over a page's life, and what a server error and zero data
// retention leave of its history.
func TestTrackChangesStatuses(t *testing.T) {
	t.Parallel()
	r := newTrackRig(t)
	f := Format{Type: "changeTracking", Modes: []string{"git-diff"}}
	steps := []struct {
		name     string
		status   int
		markdown string
		zdr      bool
		want     string
		previous bool // previousScrapeAt is set
		diff     bool
	}{
		{"first scrape", 200, "# Pricing\n\nPro: $29", false, "new", false, false},
		{"again", 200, "# Pricing\n\nPro: $29", false, "same", true, false},
		{"whitespace only", 200, "# Pricing  \n\n\nPro:   $29\n", false, "same", true, false},
		{"zero data retention reads nothing", 200, "# Pricing\n\nPro: $99", true, "new", false, false},
		{"and wrote nothing", 200, "# Pricing\n\nPro: $29", false, "same", true, false},
		{"a server error is compared", 503, "# Service unavailable", false, "changed", true, true},
		{"but not kept", 200, "# Pricing\n\nPro: $29", false, "same", true, false},
		{"changed", 200, "# Pricing\n\nPro: $39", false, "changed", true, true},
		{"gone", 404, "# Not found", false, "removed", true, false},
		{"still gone", 410, "# Gone", false, "removed", true, false},
		{"back", 200, "# Pricing\n\nPro: $39", false, "changed", true, true},
	}
	for _, st := range steps {
		doc, credits := r.track("acme", st.status, st.markdown, f, func(req *Request, _ *Document) {
			req.Options.ZeroDataRetention = st.zdr
		})
		ct := doc.ChangeTracking
		assert.Equal(t, st.want, ct.ChangeStatus, st.name)
		assert.Equal(t, "visible", ct.Visibility, st.name)
		assert.Equal(t, st.previous, ct.PreviousScrapeAt != nil, "%s: previousScrapeAt", st.name)
		assert.Equal(t, st.diff, ct.Diff != nil, "%s: diff", st.name)
		assert.Zero(t, credits, "%s: git-diff costs nothing", st.name)
		if st.zdr {
			assert.Contains(t, doc.Warning, "zero data retention", st.name)
		}
		if st.status == 503 {
			assert.Contains(t, doc.Warning, "HTTP 503", st.name)
		}
		if st.name == "back" {
			assert.Equal(t, "--- previous\n+++ current\n@@ -0,0 +1,3 @@\n+# Pricing\n+\n+Pro: $39\n", ct.Diff.Text,
				"a removed page had no content")
		}
	}
	doc, _ := r.track("globex", 200, "# Pricing\n\nPro: $39", f, nil)
	assert.Equal(t, "new", doc.ChangeTracking.ChangeStatus, "another team's history is its own")
	doc, _ = r.track("acme", 200, "# Pricing\n\nPro: $39", Format{Type: "changeTracking", Tag: "weekly"}, nil)
	assert.Equal(t, "new", doc.ChangeTracking.ChangeStatus, "a tag's history is its own")
	doc, _ = r.track("acme", 200, "# Pricing\n\nPro: $49", Format{Type: "changeTracking", Tag: "weekly"}, nil)
	assert.Equal(t, "changed", doc.ChangeTracking.ChangeStatus)
	assert.Nil(t, doc.ChangeTracking.Diff, "no diff without the git-diff mode")
	doc, _ = r.track("acme", 200, "# Pricing\n\nPro: $39", f, func(req *Request, _ *Document) {
		req.URL = "http://SHOP.test/pricing#plans"
	})
	assert.Equal(t, "same", doc.ChangeTracking.ChangeStatus, "the URL is normalised as the cache normalises it")
}

// The json mode asks the model only when the page changed, once for each
// version it has no extraction of, and bills the model's credits once a
// page.
func TestTrackChangesJSONMode(t *testing.T) {
	t.Parallel()
	r := newTrackRig(t)
	price := regexp.MustCompile(`Pro: \$(\d+)`)
	r.llm.Respond(func(q modeltest.Request) modeltest.Reply {
		return modeltest.Reply{Content: fmt.Sprintf(`{"plan": "Pro", "price": %s}`, price.FindStringSubmatch(q.User())[1])}
	})
	f := Format{Type: "changeTracking", Modes: []string{"json"}, Prompt: "the Pro plan's price",
		Schema: []byte(`{"type":"object","properties":{"plan":{"type":"string"},"price":{"type":"number"}},"required":["plan","price"]}`)}
	page := func(price int) string { return fmt.Sprintf("# Pricing\n\nPro: $%d \n", price) }
	seen := 0
	calls := func() int {
		n := len(r.llm.Requests()) - seen
		seen += n
		return n
	}

	doc, credits := r.track("acme", 200, page(29), f, nil)
	assert.Equal(t, "new", doc.ChangeTracking.ChangeStatus)
	assert.Nil(t, doc.ChangeTracking.JSON)
	assert.Zero(t, calls(), "a new page is not sent to the model")
	assert.Zero(t, credits)

	doc, credits = r.track("acme", 200, page(29), f, nil)
	assert.Equal(t, "same", doc.ChangeTracking.ChangeStatus)
	assert.Zero(t, calls(), "nor one that did not change")
	assert.Zero(t, credits)

	doc, credits = r.track("acme", 200, page(39), f, nil)
	assert.Equal(t, "changed", doc.ChangeTracking.ChangeStatus)
	assert.Equal(t, map[string]changetracking.JSONChange{"price": {Previous: float64(29), Current: float64(39)}}, doc.ChangeTracking.JSON)
	assert.Equal(t, 2, calls(), "both versions are read")
	assert.Equal(t, modelCredits, credits)

	doc, credits = r.track("acme", 200, page(49), f, nil)
	assert.Equal(t, map[string]changetracking.JSONChange{"price": {Previous: float64(39), Current: float64(49)}}, doc.ChangeTracking.JSON)
	assert.Equal(t, 1, calls(), "the previous version's extraction was kept")
	assert.Equal(t, modelCredits, credits)

	doc, _ = r.track("acme", 200, page(49)+"\n", f, nil)
	assert.Equal(t, "same", doc.ChangeTracking.ChangeStatus)
	assert.Zero(t, calls())
	doc, credits = r.track("acme", 200, "# Pricing\n\nPro: $49, billed yearly\n", f, func(_ *Request, d *Document) {
		d.JSON = map[string]any{"from": "the json format"}
	})
	assert.Equal(t, map[string]changetracking.JSONChange{}, doc.ChangeTracking.JSON, "the extraction did not change")
	assert.Equal(t, 1, calls(), "a same version inherited the extraction")
	assert.Zero(t, credits, "the page's json format billed the model already")

	other := f
	other.Prompt = "the price"
	_, _ = r.track("acme", 200, "# Pricing\n\nPro: $59\n", other, nil)
	assert.Equal(t, 2, calls(), "another prompt's extraction is not reused")

	r.llm.Enqueue(modeltest.Reply{Status: 400, Content: "no"}, modeltest.Reply{Status: 400, Content: "no"})
	doc, credits = r.track("acme", 200, "# Pricing\n\nPro: $69\n", other, nil)
	assert.Equal(t, "changed", doc.ChangeTracking.ChangeStatus)
	assert.Nil(t, doc.ChangeTracking.JSON)
	assert.Contains(t, doc.Warning, "changeTracking: json:")
	assert.Zero(t, credits, "a failed call is not billed")
}
