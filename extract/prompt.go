package extract

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trawler-dev/trawler/model"
)

// defaultSystem instructs the model when the request gives no
// systemPrompt; it reads like the json format's (package scrape), for many
// pages.
const defaultSystem = "You extract structured data from web pages, given as Markdown, each under a heading " +
	"with its URL. Use only what the pages state, and combine what they say into one answer; when they do not " +
	"give a value, answer null for it (or an empty list). Answer with JSON only."

// pageOverhead is a generous estimate of the tokens of a page's heading
// and the blank lines around it.
const pageOverhead = 16

// prompt is the user message of an extract: the request, the schema and
// each page's Markdown under a heading with its URL. The pages share what
// budget (model.Client.InputBudget) leaves of the context after the system
// prompt and the rest;
// trimmed says whether a page was cut to fit.
func prompt(system, request string, schema *model.Schema, pages []page, budget func(reserve int) int) (text string, trimmed bool) {
	var out strings.Builder
	if request != "" {
		out.WriteString("Request: " + request + "\n\n")
	}
	if schema != nil {
		raw, _ := json.Marshal(schema)
		out.WriteString("JSON schema of the answer:\n" + string(raw) + "\n\n")
	}
	fmt.Fprintf(&out, "The %d pages to extract from follow, each under a heading with its URL. Links written from the root "+
		"(/path) are on the site of the page they are in; write URLs in your answer in full.\n\n", len(pages))
	reserve := model.EstimateTokens(out.String()+system) + 64
	sizes := make([]int, len(pages))
	for i, p := range pages {
		sizes[i] = model.EstimateTokens(p.markdown)
		reserve += model.EstimateTokens(p.url) + pageOverhead
	}
	shares := share(sizes, budget(reserve))
	for i, p := range pages {
		md, cut := model.Fit(p.markdown, shares[i])
		trimmed = trimmed || cut
		fmt.Fprintf(&out, "# Page %d: %s\n\n%s\n\n", i+1, p.url, strings.TrimSpace(md))
	}
	return strings.TrimSpace(out.String()), trimmed
}

// share divides budget among items of sizes, fairly: an item smaller than
// its even share keeps its size, and what it leaves goes to the larger
// ones.
func share(sizes []int, budget int) []int {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return sizes[a] - sizes[b] })
	out := make([]int, len(sizes))
	left := max(0, budget)
	for k, i := range order {
		fair := left / (len(order) - k)
		out[i] = min(sizes[i], fair)
		left -= out[i]
	}
	return out
}
