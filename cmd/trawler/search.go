package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
)

// searchCmd searches the index of TRAWLER_DATA_DIR (and the providers
// TRAWLER_SEARCH_PROVIDERS lists) without a server: it runs the service in
// this process and asks its own handler, so that the request is validated
// and answered as POST /v2/search would be.
func searchCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	fs.SetOutput(stderr)
	limit := fs.Int("limit", 10, "results per source, 1 to 100")
	source := fs.String("source", "web", "web, images or news")
	scrapeResults := fs.Bool("scrape", false, "scrape each result and print its Markdown")
	asJSON := fs.Bool("json", false, "print the API's JSON answer")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trawler search [flags] QUERY\n\nSearches the pages Trawler fetched into TRAWLER_DATA_DIR (./data by default), with the\nquery operators of POST /v2/search. Stop the server of that data directory first.\n\nflags:")
		fs.PrintDefaults()
	}
	query, err := oneArgument(fs, args, "QUERY")
	if err != nil {
		return err
	}
	body := map[string]any{"query": query, "limit": *limit, "sources": []string{*source}}
	if *scrapeResults {
		body["scrapeOptions"] = map[string]any{"formats": []string{"markdown"}}
	}
	overrides := map[string]string{"TRAWLER_WARM_BROWSERS": "0"}
	if strings.TrimSpace(os.Getenv("TRAWLER_DATA_DIR")) == "" {
		// What a server fetched, never a temporary directory.
		overrides["TRAWLER_DATA_DIR"] = "./data"
	}
	svc, stop, err := localService(context.Background(), "search", stderr, overrides)
	if err != nil {
		return err
	}
	defer stop()
	raw, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, "/v2/search", strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	svc.Handler().ServeHTTP(rec, req)
	if *asJSON {
		_, err := stdout.Write(rec.Body.Bytes())
		return err
	}
	return printSearch(stdout, stderr, rec.Code, rec.Body.Bytes(), *source)
}

// printSearch prints an answer of POST /v2/search for a person.
func printSearch(stdout, stderr io.Writer, status int, raw []byte, source string) error {
	var ans struct {
		Success bool                        `json:"success"`
		Error   string                      `json:"error"`
		Data    map[string][]map[string]any `json:"data"`
		Warning *string                     `json:"warning"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("unreadable answer (HTTP %d): %s", status, raw)
	}
	if !ans.Success {
		return fmt.Errorf("%s", ans.Error)
	}
	if ans.Warning != nil {
		fmt.Fprintln(stderr, "warning:", *ans.Warning)
	}
	results := ans.Data[source]
	if len(results) == 0 {
		fmt.Fprintln(stderr, "no results")
	}
	for _, r := range results {
		str := func(k string) string { s, _ := r[k].(string); return s }
		fmt.Fprintf(stdout, "%v. %s\n   %s\n", r["position"], str("title"), str("url"))
		switch source {
		case "images":
			fmt.Fprintf(stdout, "   %s (%vx%v)\n", str("imageUrl"), r["imageWidth"], r["imageHeight"])
		case "news":
			fmt.Fprintf(stdout, "   %s %s\n", str("date"), str("snippet"))
		default:
			fmt.Fprintf(stdout, "   %s\n", str("description"))
		}
		if md := str("markdown"); md != "" {
			fmt.Fprintf(stdout, "\n%s\n\n", md)
		}
		if md, ok := r["metadata"].(map[string]any); ok && md["error"] != nil {
			fmt.Fprintf(stdout, "   (not scraped: %v)\n", md["error"])
		}
	}
	return nil
}
