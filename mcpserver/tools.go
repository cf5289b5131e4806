package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a server.
type Options struct {
	// Version is Trawler's, as the server names itself.
	Version string
	// Auth is the Authorization header of calls that bring none of their
	// own (over stdio: "Bearer " + TRAWLER_API_KEY).
	Auth string
	// MaxResult is the size in bytes from which a tool's answer is cut
	// down (fit); 0: 100 000.
	MaxResult int
	// Poll is how often a tool that waits for a job looks at it; 0: 1 s.
	Poll time.Duration
	Log  *slog.Logger
}

// Headers the HTTP handler sets on each MCP request for its tools: where
// it came from (Call.Host, Remote, TLS). A client's own are dropped.
const (
	hostHeader   = "X-Trawler-Mcp-Host"
	remoteHeader = "X-Trawler-Mcp-Remote"
	tlsHeader    = "X-Trawler-Mcp-Tls"
)

// server holds what the tools share.
type server struct {
	call Caller
	o    Options
}

// NewServer is the MCP server of Trawler's API, its calls made by call.
func NewServer(call Caller, o Options) *mcp.Server {
	if o.MaxResult <= 0 {
		o.MaxResult = 100_000
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			o.Version = info.Main.Version
		}
	}
	s := &server{call: call, o: o}
	srv := mcp.NewServer(&mcp.Implementation{Name: "trawler", Title: "Trawler", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Trawler turns web pages, documents and search results into clean Markdown or JSON, " +
			"and rents out Chromium sessions. The tools take the bodies of Firecrawl's v2 API.",
		Logger: o.Log,
	})
	for _, t := range s.tools() {
		srv.AddTool(&mcp.Tool{Name: t.name, Description: t.description, InputSchema: t.schema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly, OpenWorldHint: new(true)}}, s.handler(t))
	}
	return srv
}

// A tool is one MCP tool: its schema, and the REST calls it makes.
type tool struct {
	name, description string
	schema            map[string]any
	readOnly          bool
	run               func(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error)
}

// invocation is one call of a tool.
type invocation struct {
	s    *server
	base Call // the caller's Authorization and origin
	req  *mcp.CallToolRequest
}

func (s *server) handler(t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]any{}
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				return badArgs("arguments", "must be a JSON object"), nil
			}
		}
		base := Call{Auth: s.o.Auth}
		if req.Extra != nil && req.Extra.Header != nil {
			h := req.Extra.Header
			if a := h.Get("Authorization"); a != "" {
				base.Auth = a
			}
			base.Host, base.Remote, base.TLS = h.Get(hostHeader), h.Get(remoteHeader), h.Get(tlsHeader) == "1"
		}
		return t.run(ctx, &invocation{s: s, base: base, req: req}, args)
	}
}

// do makes a REST call and returns the API's answer as the tool's result:
// an error result, with the API's code and message, for a 4xx or 5xx.
func (in *invocation) do(ctx context.Context, method, path string, body any) (*mcp.CallToolResult, map[string]any, error) {
	c := in.base
	c.Method, c.Path = method, path
	switch b := body.(type) {
	case nil:
	case []byte:
		c.Body = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, nil, err
		}
		c.Body = raw
	}
	return in.send(ctx, c)
}

func (in *invocation) send(ctx context.Context, c Call) (*mcp.CallToolResult, map[string]any, error) {
	status, answer, err := in.s.call(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	var decoded map[string]any
	json.Unmarshal(answer, &decoded)
	return &mcp.CallToolResult{IsError: status >= 400, Content: []mcp.Content{&mcp.TextContent{Text: string(fit(answer, in.s.o.MaxResult))}}}, decoded, nil
}

// badArgs is the error result of arguments the tool itself refuses, in the
// API's shape for a bad request.
func badArgs(field, rule string) *mcp.CallToolResult {
	raw, _ := json.Marshal(map[string]any{"success": false, "code": "BAD_REQUEST", "error": field + ": " + rule,
		"details": []any{map[string]any{"path": []string{field}, "message": rule}}})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}}
}

// take removes the string argument name from args; ok is false (with the
// error result) when it is missing or not a non-empty string.
func take(args map[string]any, name string) (string, *mcp.CallToolResult) {
	v, present := args[name]
	delete(args, name)
	s, ok := v.(string)
	if !present || !ok || s == "" {
		return "", badArgs(name, "required, a non-empty string")
	}
	return s, nil
}

// validID is the shape of a job's or a session's id. An id goes into the
// call's path: anything else (a slash, a dot segment, an escape) is
// refused here rather than left to the router.
var validID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// takeID takes the id argument (take), which must have validID's shape.
func takeID(args map[string]any) (string, *mcp.CallToolResult) {
	id, bad := take(args, "id")
	if bad == nil && !validID.MatchString(id) {
		return "", badArgs("id", "must be a job's or session's id: letters, digits, - and _ only")
	}
	return id, bad
}

// paging takes the optional skip and limit arguments as a query string.
func paging(args map[string]any) (string, *mcp.CallToolResult) {
	q := url.Values{}
	for _, name := range []string{"skip", "limit"} {
		v, ok := args[name]
		if !ok {
			continue
		}
		delete(args, name)
		n, isNum := v.(float64)
		if !isNum || n < 0 || n != float64(int64(n)) {
			return "", badArgs(name, "must be a whole number, 0 or more")
		}
		q.Set(name, strconv.FormatInt(int64(n), 10))
	}
	if len(q) == 0 {
		return "", nil
	}
	return "?" + q.Encode(), nil
}

// noneLeft refuses arguments a tool does not take.
func noneLeft(args map[string]any) *mcp.CallToolResult {
	for k := range args {
		return badArgs(k, "unknown argument")
	}
	return nil
}

// post is a tool whose arguments are the body of POST path.
func post(path string) func(context.Context, *invocation, map[string]any) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error) {
		r, _, err := in.do(ctx, http.MethodPost, path, args)
		return r, err
	}
}

// byID is a tool that takes a job's or session's id (and, with paged,
// skip and limit) and makes method on path + "/" + id.
func byID(method, path string, paged bool) func(context.Context, *invocation, map[string]any) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error) {
		id, bad := takeID(args)
		if bad != nil {
			return bad, nil
		}
		q := ""
		if paged {
			if q, bad = paging(args); bad != nil {
				return bad, nil
			}
		}
		if bad := noneLeft(args); bad != nil {
			return bad, nil
		}
		r, _, err := in.do(ctx, method, path+"/"+url.PathEscape(id)+q, nil)
		return r, err
	}
}

// crawl starts a crawl; with wait, it follows it to its end, reporting
// progress (pages completed of those found) when the client asked for it,
// and cancels the crawl when the client cancels the call.
func (s *server) crawl(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error) {
	wait, _ := args["wait"].(bool)
	if v, ok := args["wait"]; ok {
		if _, isBool := v.(bool); !isBool {
			return badArgs("wait", "must be true or false"), nil
		}
		delete(args, "wait")
	}
	r, started, err := in.do(ctx, http.MethodPost, "/v2/crawl", args)
	if err != nil || r.IsError || !wait {
		return r, err
	}
	id, _ := started["id"].(string)
	if id == "" {
		return r, nil
	}
	path := "/v2/crawl/" + url.PathEscape(id)
	token := in.req.Params.GetProgressToken()
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// The client gave up on the call: the crawl goes too, as a
			// client that hung up on its own crawl would cancel it.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			in.do(cctx, http.MethodDelete, path, nil)
			return nil, ctx.Err()
		case <-tick.C:
		}
		st, status, err := in.do(ctx, http.MethodGet, path+"?limit=1", nil)
		if err != nil {
			if ctx.Err() != nil {
				continue // cancelled: the crawl is cancelled above
			}
			return nil, err
		}
		if st.IsError {
			return st, nil
		}
		done, _ := status["completed"].(float64)
		total, _ := status["total"].(float64)
		if token != nil {
			in.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: done, Total: total, Message: fmt.Sprintf("%.0f of %.0f pages", done, total)})
		}
		if state, _ := status["status"].(string); state != "scraping" {
			r, _, err := in.do(ctx, http.MethodGet, path, nil)
			return r, err
		}
	}
}

// extract starts an extraction and waits for its result, as firecrawl-mcp's
// tool does.
func (s *server) extract(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error) {
	r, started, err := in.do(ctx, http.MethodPost, "/v2/extract", args)
	if err != nil || r.IsError {
		return r, err
	}
	id, _ := started["id"].(string)
	if id == "" {
		return r, nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.o.Poll):
		}
		r, st, err := in.do(ctx, http.MethodGet, "/v2/extract/"+url.PathEscape(id), nil)
		if err != nil || r.IsError {
			return r, err
		}
		if state, _ := st["status"].(string); state != "processing" {
			return r, nil
		}
	}
}

// parse converts a document given as base64 (POST /v2/parse, the other
// arguments its options) or by URL (POST /v2/scrape).
func (s *server) parse(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error) {
	if _, byURL := args["url"]; byURL {
		if _, both := args["file"]; both {
			return badArgs("file", "give either file (base64) or url, not both"), nil
		}
		r, _, err := in.do(ctx, http.MethodPost, "/v2/scrape", args)
		return r, err
	}
	data, bad := take(args, "file")
	if bad != nil {
		return badArgs("file", "required (the document, base64-encoded) unless url is given"), nil
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return badArgs("file", "must be base64 (standard, padded): "+err.Error()), nil
	}
	name := "document"
	if v, ok := args["filename"]; ok {
		n, isString := v.(string)
		if !isString || n == "" {
			return badArgs("filename", "must be a non-empty string"), nil
		}
		name = n
		delete(args, "filename")
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		return nil, err
	}
	fw.Write(raw)
	if len(args) > 0 {
		opts, _ := json.Marshal(args)
		ow, err := mw.CreateFormField("options")
		if err != nil {
			return nil, err
		}
		ow.Write(opts)
	}
	mw.Close()
	c := in.base
	c.Method, c.Path, c.ContentType, c.Body = http.MethodPost, "/v2/parse", mw.FormDataContentType(), body.Bytes()
	r, _, err := in.send(ctx, c)
	return r, err
}

// obj is a JSON schema of an object with properties; required names those
// that must be there. Other properties go to the API, which names any it
// does not take.
func obj(required []string, props map[string]any) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
func num(desc string) map[string]any { return map[string]any{"type": "integer", "description": desc} }

// scrapeOptions are the properties of a scrape's options, as the tools'
// schemas show them (the API's reference has them all).
func scrapeOptions() map[string]any {
	return map[string]any{
		"formats": map[string]any{"type": "array", "description": `Outputs: "markdown", "html", "rawHtml", "links", "images", "screenshot", "summary", {"type": "json", "schema": {...}, "prompt": "..."}, ...`,
			"items": map[string]any{}},
		"onlyMainContent": map[string]any{"type": "boolean", "description": "only the page's main content (default true)"},
		"includeTags":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"excludeTags":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"waitFor":         num("milliseconds to wait after the page settles"),
		"mobile":          map[string]any{"type": "boolean"},
		"actions":         map[string]any{"type": "array", "description": "click, write, press, scroll, wait, screenshot, executeJavascript, ...", "items": map[string]any{}},
		"location":        map[string]any{"type": "object", "description": `{"country": "DE", "languages": ["de"]}`},
		"maxAge":          num("accept a cached copy this many milliseconds old"),
		"timeout":         num("milliseconds"),
	}
}

func with(m map[string]any, more map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// tools are the server's tools, named as firecrawl-mcp names them where it
// has one.
func (s *server) tools() []tool {
	idOnly := obj([]string{"id"}, map[string]any{"id": str("the job's id")})
	paged := obj([]string{"id"}, map[string]any{"id": str("the job's id"),
		"skip": num("documents to skip"), "limit": num("documents to return at most")})
	return []tool{
		{name: "firecrawl_scrape", description: "Scrape one URL into Markdown, HTML, links, a screenshot, a summary or JSON by a schema. The arguments are POST /v2/scrape's body.",
			schema: obj([]string{"url"}, with(scrapeOptions(), map[string]any{"url": str("the page's URL")})), run: post("/v2/scrape")},
		{name: "firecrawl_batch_scrape", description: "Scrape many URLs as one job (POST /v2/batch/scrape); follow it with firecrawl_check_batch_status.",
			schema: obj([]string{"urls"}, with(scrapeOptions(), map[string]any{"urls": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}})), run: post("/v2/batch/scrape")},
		{name: "firecrawl_check_batch_status", description: "A batch scrape's status and documents, paged with skip and limit.", schema: paged, readOnly: true,
			run: byID(http.MethodGet, "/v2/batch/scrape", true)},
		{name: "firecrawl_cancel_batch_scrape", description: "Cancel a batch scrape.", schema: idOnly, run: byID(http.MethodDelete, "/v2/batch/scrape", false)},
		{name: "firecrawl_map", description: "List a site's URLs (POST /v2/map): its sitemap and links, optionally filtered by search.",
			schema: obj([]string{"url"}, map[string]any{"url": str("the site"), "search": str("keep the URLs that match"), "limit": num("URLs at most"),
				"sitemap": str(`"include", "skip" or "only"`), "includeSubdomains": map[string]any{"type": "boolean"}}), readOnly: true, run: post("/v2/map")},
		{name: "firecrawl_crawl", description: "Crawl a site (POST /v2/crawl). Returns the crawl's id at once, or, with wait: true, follows it to its end with progress notifications (cancelling the call cancels the crawl).",
			schema: obj([]string{"url"}, map[string]any{"url": str("where the crawl starts"), "limit": num("pages at most"),
				"maxDiscoveryDepth": num("link depth"), "includePaths": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"excludePaths":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"scrapeOptions": obj(nil, scrapeOptions()), "wait": map[string]any{"type": "boolean", "description": "wait for the crawl to end"}}),
			run: s.crawl},
		{name: "firecrawl_check_crawl_status", description: "A crawl's status and documents, paged with skip and limit.", schema: paged, readOnly: true,
			run: byID(http.MethodGet, "/v2/crawl", true)},
		{name: "firecrawl_cancel_crawl", description: "Cancel a crawl.", schema: idOnly, run: byID(http.MethodDelete, "/v2/crawl", false)},
		{name: "firecrawl_search", description: "Search the web (POST /v2/search), optionally scraping each result with scrapeOptions.",
			schema: obj([]string{"query"}, map[string]any{"query": str("the query"), "limit": num("results at most"),
				"sources": map[string]any{"type": "array", "items": map[string]any{}}, "scrapeOptions": obj(nil, scrapeOptions())}), readOnly: true, run: post("/v2/search")},
		{name: "firecrawl_extract", description: "Extract structured data from URLs by a prompt and a JSON schema (POST /v2/extract), waiting for the result.",
			schema: obj([]string{"urls"}, map[string]any{"urls": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"prompt": str("what to extract"), "schema": map[string]any{"type": "object", "description": "a JSON schema of the result"}}), run: s.extract},
		{name: "firecrawl_parse", description: "Convert a document (PDF, DOCX, DOC, ODT, RTF, XLSX, XLS, HTML) to Markdown: file as base64 with its filename (POST /v2/parse), or a url to fetch it from.",
			schema: obj(nil, map[string]any{"file": str("the document, base64-encoded"), "filename": str("its name, whose extension tells its type"),
				"url": str("where to fetch it instead"), "formats": map[string]any{"type": "array", "items": map[string]any{}}}), readOnly: true, run: s.parse},
		{name: "firecrawl_browser_create", description: "Start a Chromium session (POST /v2/browser): its cdpUrl takes Playwright's connectOverCDP or Puppeteer's connect, its liveViewUrl opens in a browser.",
			schema: obj(nil, map[string]any{"ttl": num("seconds the session lives at most"), "activityTtl": num("seconds without activity before it ends"),
				"profile":   map[string]any{"type": "object", "description": `{"name": "...", "saveChanges": true}`},
				"recording": map[string]any{"type": "boolean", "description": "record the session for replay (firecrawl_browser_replay, the replayUrl)"}}), run: post("/v2/browser")},
		{name: "firecrawl_browser_replay", description: "A recorded session's pages and rrweb events (GET /v2/browser/{id}/replay), paged with the cursor of next; with pageId, one page's; its replayUrl plays it in a browser.",
			schema: obj([]string{"id"}, map[string]any{"id": str("the session's id"), "pageId": str("one page's id, from pages"),
				"cursor": str("the cursor of the answer's next link")}), readOnly: true,
			run: func(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error) {
				id, bad := takeID(args)
				if bad != nil {
					return bad, nil
				}
				path := "/v2/browser/" + url.PathEscape(id) + "/replay"
				if _, ok := args["pageId"]; ok {
					page, bad := take(args, "pageId")
					if bad == nil && !validID.MatchString(page) {
						bad = badArgs("pageId", "must be a page's id from pages: letters, digits, - and _ only")
					}
					if bad != nil {
						return bad, nil
					}
					path += "/" + page
				}
				if _, ok := args["cursor"]; ok {
					cursor, bad := take(args, "cursor")
					if bad != nil {
						return bad, nil
					}
					path += "?cursor=" + url.QueryEscape(cursor)
				}
				if bad := noneLeft(args); bad != nil {
					return bad, nil
				}
				r, _, err := in.do(ctx, http.MethodGet, path, nil)
				return r, err
			}},
		{name: "firecrawl_browser_list", description: "The team's browser sessions.", readOnly: true,
			schema: obj(nil, map[string]any{"status": str(`"active" or "destroyed"`)}),
			run: func(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error) {
				q := ""
				if v, ok := args["status"]; ok {
					st, isString := v.(string)
					if !isString {
						return badArgs("status", "must be a string"), nil
					}
					q = "?status=" + url.QueryEscape(st)
					delete(args, "status")
				}
				if bad := noneLeft(args); bad != nil {
					return bad, nil
				}
				r, _, err := in.do(ctx, http.MethodGet, "/v2/browser"+q, nil)
				return r, err
			}},
		{name: "firecrawl_browser_execute", description: "Run code in a session's browser (POST /v2/browser/{id}/execute): JavaScript in its page, or a Node or Python script with Playwright.",
			schema: obj([]string{"id", "code"}, map[string]any{"id": str("the session's id"), "code": str("the code"),
				"language": str(`"js" (the page, default), "node", "python" or "bash"`), "timeout": num("seconds")}),
			run: func(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error) {
				id, bad := takeID(args)
				if bad != nil {
					return bad, nil
				}
				r, _, err := in.do(ctx, http.MethodPost, "/v2/browser/"+url.PathEscape(id)+"/execute", args)
				return r, err
			}},
		{name: "firecrawl_browser_delete", description: "End a browser session.", schema: obj([]string{"id"}, map[string]any{"id": str("the session's id")}),
			run: byID(http.MethodDelete, "/v2/browser", false)},
		{name: "firecrawl_credit_usage", description: "The team's credits: used and remaining this period.", schema: obj(nil, map[string]any{}), readOnly: true,
			run: func(ctx context.Context, in *invocation, args map[string]any) (*mcp.CallToolResult, error) {
				if bad := noneLeft(args); bad != nil {
					return bad, nil
				}
				r, _, err := in.do(ctx, http.MethodGet, "/v2/team/credit-usage", nil)
				return r, err
			}},
	}
}
