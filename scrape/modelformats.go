package scrape

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/trawler-dev/trawler/content"
	"github.com/trawler-dev/trawler/model"
)

// modelCredits is what the model-backed formats add to a page's cost
// (Firecrawl bills JSON extraction 4 credits a page on top of the scrape);
// a page is billed them once, whichever of json, summary and question it
// asked for, and only when one of them answered.
const modelCredits = 4

// The instructions of each model-backed format.
const (
	cleanSystem = "You clean the Markdown of a web page. Remove the residual boilerplate only: cookie banners, " +
		"ads, share widgets, breadcrumbs, newsletter sign-ups, comments and lists of related articles. Keep " +
		"everything else exactly as written, in its Markdown form: headings, paragraphs, lists, tables, code " +
		"blocks, image references and inline links. Do not summarise, rephrase, translate or add anything. " +
		"Answer with the cleaned Markdown only."
	jsonSystem = "You extract structured data from a web page, given as Markdown. Use only what the page " +
		"states; when it does not give a value, answer null for it (or an empty list). Answer with JSON only."
	summarySystem = "You summarise a web page, given as Markdown, in a few sentences of plain prose in the " +
		"page's own language: what the page is and its main points. Use only what the page says."
	questionSystem = "You answer a question from a web page, given as Markdown. Use only what the page says; " +
		"when it does not answer the question, say so plainly. Answer concisely."
)

// modelPass answers the model-backed formats of req from doc's Markdown,
// in place: the onlyCleanContent pass first (its Markdown is what the
// others read), then json, summary and question at once. A format the
// model could not answer leaves a warning, never an error. It returns
// the credits the formats add.
func (s *Service) modelPass(ctx context.Context, req Request, requestID string, doc *Document) int {
	o := &req.Options
	if s.Model == nil {
		// The API refuses these formats without a model; a job stored
		// before the model was removed gets this.
		doc.Warning = joinWarning(doc.Warning, "the model-backed formats were skipped: no language model is configured (TRAWLER_LLM_BASE_URL)")
		return 0
	}
	md := doc.modelInput
	call := func(purpose, system, user string) model.Call {
		return model.Call{Team: req.Team, Request: requestID, Purpose: purpose, System: system, User: user}
	}
	if o.OnlyCleanContent {
		cleaned, warning := s.clean(ctx, call("onlyCleanContent", cleanSystem, md), md)
		doc.Warning = joinWarning(doc.Warning, warning)
		md = cleaned
		if o.Has("markdown") {
			doc.Markdown = md
		}
	}
	// The formats read the page without what costs tokens and says
	// nothing (link titles, permalinks, the origin of every link).
	pageURL, _ := doc.Metadata["url"].(string)
	if pageURL == "" {
		pageURL = req.URL
	}
	lean := content.ForModel(md, pageURL)
	about := "URL: " + pageURL + "\n"
	if origin := content.Origin(pageURL); origin != "" {
		about += "Links written from the root (/path) are on " + origin + "; write URLs in your answer in full.\n"
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	answered := false
	trimmed := false
	warn := func(format string, args ...any) {
		mu.Lock()
		doc.Warning = joinWarning(doc.Warning, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// page fits the page's Markdown into what is left of the context
	// after the call's own text.
	page := func(c model.Call, extra string) model.Call {
		text, cut := model.Fit(lean, s.Model.InputBudget(model.EstimateTokens(c.System+extra+about)+64))
		if cut {
			mu.Lock()
			trimmed = true
			mu.Unlock()
		}
		c.User = extra + about + "\nPage content (Markdown):\n\n" + text
		return c
	}
	run := func(name string, c model.Call, done func(*model.Answer)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans, err := s.Model.Complete(ctx, c)
			if err != nil {
				warn("%s: %v", name, err)
				return
			}
			mu.Lock()
			done(ans)
			answered = true
			mu.Unlock()
		}()
	}
	if f, ok := o.Format("json"); ok {
		if c, extra, err := jsonExtraction(call("json", jsonSystem, ""), f); err != nil {
			warn("json: the schema %v", err)
		} else {
			run("json", page(c, extra), func(a *model.Answer) { doc.JSON = a.JSON })
		}
	}
	if o.Has("summary") {
		run("summary", page(call("summary", summarySystem, ""), ""), func(a *model.Answer) { doc.Summary = strings.TrimSpace(a.Text) })
	}
	if f, ok := o.Format("question"); ok {
		run("question", page(call("question", questionSystem, ""), "Question: "+f.Question+"\n\n"),
			func(a *model.Answer) { doc.Answer = strings.TrimSpace(a.Text) })
	}
	wg.Wait()
	if trimmed {
		doc.Warning = joinWarning(doc.Warning, fmt.Sprintf("the page's Markdown (about %d tokens) was trimmed to fit the model's context of %d tokens",
			model.EstimateTokens(lean), s.Model.Config().ContextTokens))
	}
	if answered {
		return modelCredits
	}
	return 0
}

// clean runs the onlyCleanContent pass; it returns the Markdown to use and
// a warning when the pass was skipped or failed (the original is kept).
func (s *Service) clean(ctx context.Context, c model.Call, md string) (string, string) {
	if limit := s.Model.Config().OutputTokens; model.EstimateTokens(md) > limit {
		return md, fmt.Sprintf("onlyCleanContent was skipped: the Markdown (about %d tokens) exceeds the model's output limit of %d tokens; the original Markdown is kept",
			model.EstimateTokens(md), limit)
	}
	if strings.TrimSpace(md) == "" {
		return md, ""
	}
	ans, err := s.Model.Complete(ctx, c)
	if err != nil {
		return md, fmt.Sprintf("onlyCleanContent failed, the original Markdown is kept: %v", err)
	}
	out := strings.TrimSpace(ans.Text)
	// A model may fence its whole answer; the fence is not the page's.
	if strings.HasPrefix(out, "```") && strings.HasSuffix(out, "```") {
		if nl := strings.IndexByte(out, '\n'); nl > 0 {
			out = strings.TrimSpace(strings.TrimSuffix(out[nl+1:], "```"))
		}
	}
	if out == "" {
		return md, "onlyCleanContent answered nothing, the original Markdown is kept"
	}
	return out, ""
}

// jsonExtraction makes c the extraction f asks for (a schema, a prompt or
// both) and returns the text that goes before the page in its message.
func jsonExtraction(c model.Call, f Format) (model.Call, string, error) {
	extra := ""
	if f.Prompt != "" {
		extra = "Request: " + f.Prompt + "\n\n"
	}
	if len(f.Schema) == 0 {
		c.JSON = true
		return c, extra, nil
	}
	schema, err := model.NormalizeSchema(f.Schema)
	if err != nil {
		return c, "", err
	}
	c.Schema = schema
	return c, extra + "JSON schema of the answer:\n" + string(mustJSON(schema)) + "\n\n", nil
}

func mustJSON(v interface{ MarshalJSON() ([]byte, error) }) []byte {
	b, _ := v.MarshalJSON()
	return b
}

// personalitySchema is what the model says of a brand's personality.
var personalitySchema = json.RawMessage(`{"type": "object", "properties": {
	"tone": {"type": "string", "description": "the voice of the copy, in a few words (e.g. friendly and plain, formal, playful)"},
	"energy": {"type": "string", "enum": ["low", "medium", "high"]},
	"targetAudience": {"type": "string", "description": "who the site speaks to"}},
	"required": ["tone", "energy", "targetAudience"]}`)

const personalitySystem = "You describe the personality of a brand from its web page, given as Markdown, and its " +
	"colours and fonts. Judge only from what is given. Answer with JSON only."

// brandPersonality has the model judge the brand's personality (the one
// member of branding a reading of the page cannot give), when a model is
// configured; it is skipped without a word otherwise.
func (s *Service) brandPersonality(ctx context.Context, req Request, requestID string, doc *Document) {
	if s.Model == nil || doc.Branding == nil {
		return
	}
	schema, err := model.NormalizeSchema(personalitySchema)
	if err != nil {
		return // a mistake of this file, found by its tests
	}
	pageURL, _ := doc.Metadata["url"].(string)
	brand, _ := json.Marshal(struct {
		Colors     any `json:"colors,omitempty"`
		Typography any `json:"typography,omitempty"`
	}{doc.Branding.Colors, doc.Branding.Typography})
	extra := "Colours and typography: " + string(brand) + "\n\n"
	text, _ := model.Fit(content.ForModel(doc.modelInput, pageURL), s.Model.InputBudget(model.EstimateTokens(personalitySystem+extra)+64))
	ans, err := s.Model.Complete(ctx, model.Call{Team: req.Team, Request: requestID, Purpose: "branding",
		System: personalitySystem, User: extra + "Page content (Markdown):\n\n" + text, Schema: schema})
	if err != nil {
		doc.Warning = joinWarning(doc.Warning, "branding personality: "+err.Error())
		return
	}
	if m, ok := ans.JSON.(map[string]any); ok {
		doc.Branding.Personality = m
	}
}
