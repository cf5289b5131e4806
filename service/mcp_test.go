package service_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// bearer adds a team's key to every request of an MCP client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// mcpClient connects the Go SDK's client to the service's /v2/mcp as the
// team of key; progress gets the progress notifications.
func mcpClient(t *testing.T, ts *testService, key string, progress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress(req.Params) }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "trawler-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/v2/mcp",
		HTTPClient: &http.Client{Transport: bearer{key: key, next: http.DefaultTransport}}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and decodes its answer, the API's JSON.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s", name)
	require.Len(t, res.Content, 1, "%s", name)
	text := res.Content[0].(*mcp.TextContent).Text
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(text), &out), "%s answered %s", name, text)
	return out, res.IsError
}

// TestMCPServer: the service's own MCP server, through the Go SDK's
// client: its tools are firecrawl-mcp's, each is the API's endpoint (its
// answers, its errors naming the field), a crawl followed to its end
// reports progress, a cancelled call cancels its crawl, and teams are
// isolated as over REST.
func TestMCPServer(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	// A slow site for the crawl that is cancelled: each page takes 300 ms
	// and links to the next two.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		var n int
		fmt.Sscanf(r.URL.Path, "/p/%d", &n)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><body><h1>Page %d</h1><p>%s</p><a href="/p/%d">next</a> <a href="/p/%d">after</a></body></html>`,
			n, strings.Repeat("Slow words. ", 30), 2*n+1, 2*n+2)
	}))
	t.Cleanup(slow.Close)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// No key, no MCP: the API's own 401.
	resp, err := http.Post(ts.URL+"/v2/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode, "an initialize without a key")

	var mu sync.Mutex
	var seen []float64
	acme := mcpClient(t, ts, keyAcme, func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		seen = append(seen, p.Progress)
		mu.Unlock()
	})
	tools, err := acme.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"firecrawl_scrape", "firecrawl_batch_scrape", "firecrawl_check_batch_status", "firecrawl_map",
		"firecrawl_crawl", "firecrawl_check_crawl_status", "firecrawl_cancel_crawl", "firecrawl_search", "firecrawl_extract",
		"firecrawl_parse", "firecrawl_browser_create", "firecrawl_browser_list", "firecrawl_browser_execute",
		"firecrawl_browser_delete", "firecrawl_browser_replay", "firecrawl_credit_usage"} {
		assert.Contains(t, names, want)
	}

	out, isErr := callTool(t, ctx, acme, "firecrawl_scrape", map[string]any{"url": s.URL + "/article", "formats": []any{"markdown"}})
	require.False(t, isErr, "scrape: %v", out)
	assert.Contains(t, out["data"].(map[string]any)["markdown"], "Kinds of nets", "the scrape's Markdown")

	// Bad arguments are the API's 400, naming the field.
	out, isErr = callTool(t, ctx, acme, "firecrawl_scrape", map[string]any{"url": s.URL + "/article", "formats": []any{"markdown"}, "waitFor": "soon"})
	assert.True(t, isErr, "a bad waitFor")
	assert.Equal(t, "BAD_REQUEST", out["code"])
	assert.Contains(t, fmt.Sprint(out), "waitFor")
	out, isErr = callTool(t, ctx, acme, "firecrawl_check_crawl_status", map[string]any{})
	assert.True(t, isErr, "a status without an id")
	assert.Contains(t, out["error"], "id")
	for _, id := range []string{"../../team/credit-usage", "..", "a%2Fb", "x?skip=1", "é"} {
		out, isErr = callTool(t, ctx, acme, "firecrawl_cancel_crawl", map[string]any{"id": id})
		assert.True(t, isErr, "id %q", id)
		assert.Contains(t, out["error"], "must be a job's or session's id", "id %q", id)
	}

	// A document given as base64.
	doc := base64.StdEncoding.EncodeToString([]byte("<html><body><h1>Harbour notes</h1><p>" + strings.Repeat("Ropes and buoys. ", 20) + "</p></body></html>"))
	out, isErr = callTool(t, ctx, acme, "firecrawl_parse", map[string]any{"file": doc, "filename": "notes.html"})
	require.False(t, isErr, "parse: %v", out)
	assert.Contains(t, out["data"].(map[string]any)["markdown"], "# Harbour notes")
	out, isErr = callTool(t, ctx, acme, "firecrawl_parse", map[string]any{"file": "not base64!", "filename": "notes.html"})
	assert.True(t, isErr, "a file that is not base64")
	assert.Contains(t, out["error"], "file")

	// A crawl followed to its end, with progress.
	res, err := acme.CallTool(ctx, &mcp.CallToolParams{Name: "firecrawl_crawl", Meta: mcp.Meta{"progressToken": "crawl-1"},
		Arguments: map[string]any{"url": s.URL + "/article", "limit": 3, "wait": true}})
	require.NoError(t, err)
	require.False(t, res.IsError, "crawl: %v", res.Content)
	var crawled map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &crawled))
	assert.Equal(t, "completed", crawled["status"])
	// The server sends each notification before the result, but the
	// client may hand it to its handler after CallTool has returned.
	assert.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0
	}, 3*time.Second, 20*time.Millisecond, "progress notifications during the crawl")

	// Usage and sessions.
	out, isErr = callTool(t, ctx, acme, "firecrawl_credit_usage", nil)
	require.False(t, isErr, "credit usage: %v", out)
	out, isErr = callTool(t, ctx, acme, "firecrawl_browser_create", map[string]any{"ttl": 120, "recording": true})
	require.False(t, isErr, "browser create: %v", out)
	id, _ := out["id"].(string)
	assert.True(t, strings.HasPrefix(fmt.Sprint(out["cdpUrl"]), "ws://127.0.0.1:"), "cdpUrl %v", out["cdpUrl"])
	out, isErr = callTool(t, ctx, acme, "firecrawl_browser_execute", map[string]any{"id": id, "code": "1 + 41"})
	require.False(t, isErr, "execute: %v", out)
	assert.EqualValues(t, 42, out["value"])
	require.Eventually(t, func() bool {
		out, isErr = callTool(t, ctx, acme, "firecrawl_browser_replay", map[string]any{"id": id})
		pages, _ := out["pages"].([]any)
		return !isErr && len(pages) > 0 && out["status"] == "recording"
	}, 5*time.Second, 200*time.Millisecond, "the recorded session's replay: %v", out)
	out, isErr = callTool(t, ctx, acme, "firecrawl_browser_replay", map[string]any{"id": id, "pageId": "../x"})
	assert.True(t, isErr, "a page id that is a path: %v", out)

	// Another team sees none of acme's: not its MCP session, nor its
	// browser session, nor its crawl.
	req, _ := http.NewRequest("POST", ts.URL+"/v2/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+keyGlobex)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", acme.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "globex on acme's MCP session")
	globex := mcpClient(t, ts, keyGlobex, nil)
	out, isErr = callTool(t, ctx, globex, "firecrawl_browser_execute", map[string]any{"id": id, "code": "document.title"})
	assert.True(t, isErr, "globex ran code in acme's session: %v", out)
	out, isErr = callTool(t, ctx, acme, "firecrawl_browser_delete", map[string]any{"id": id})
	require.False(t, isErr, "delete: %v", out)

	// A crawl whose call is cancelled is cancelled.
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := acme.CallTool(cctx, &mcp.CallToolParams{Name: "firecrawl_crawl",
			Arguments: map[string]any{"url": slow.URL + "/p/0", "limit": 200, "wait": true}})
		done <- err
	}()
	var crawlID string
	polltest.Until(t, 30*time.Second, "the slow crawl to be running", func() bool {
		r := ts.do("GET", "/v2/crawl/active", keyAcme, nil)
		list, _ := r.Body["crawls"].([]any)
		for _, c := range list {
			if m := c.(map[string]any); strings.HasPrefix(fmt.Sprint(m["url"]), slow.URL) {
				crawlID = m["id"].(string)
			}
		}
		return crawlID != ""
	})
	out, isErr = callTool(t, ctx, globex, "firecrawl_check_crawl_status", map[string]any{"id": crawlID})
	assert.True(t, isErr, "globex read acme's crawl: %v", out)
	out, isErr = callTool(t, ctx, globex, "firecrawl_cancel_crawl", map[string]any{"id": crawlID})
	assert.True(t, isErr, "globex cancelled acme's crawl: %v", out)
	assert.Equal(t, "scraping", ts.do("GET", "/v2/crawl/"+crawlID, keyAcme, nil).str("status"), "acme's crawl after globex's cancel")

	stop()
	require.Error(t, <-done, "the cancelled call")
	polltest.Until(t, 30*time.Second, "the crawl to be cancelled", func() bool {
		return ts.do("GET", "/v2/crawl/"+crawlID, keyAcme, nil).str("status") == "cancelled"
	})
}
