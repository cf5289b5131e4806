package scrape

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"

	"github.com/trawler-dev/trawler/content"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/store"
)

// compareExtractions is the json mode: once the page changed, it extracts
// f's schema and prompt from both versions and sets ct.JSON to the
// top-level members whose values differ. The model is asked only when
// something changed, and never twice for one version: current keeps its
// extraction (keyed by the schema and prompt) for the next comparison, and
// a version the same as the previous one inherits the previous one's.
//
// It returns the credits the calls add: modelCredits when the model
// answered, as for the model-backed formats, and once a page: nothing when
// the page's json, summary or question already billed them.
func (s *Service) compareExtractions(ctx context.Context, req Request, requestID string, doc *Document, f Format,
	prev, current *store.PageVersion, warn func(string, ...any)) int {
	ct := doc.ChangeTracking
	if s.Model == nil {
		// The API refuses the json mode without a model; a job stored
		// before the model was removed gets this.
		warn("the json mode was skipped: no language model is configured (TRAWLER_LLM_BASE_URL)")
		return 0
	}
	c, extra, err := jsonExtraction(model.Call{Team: req.Team, Request: requestID, Purpose: "changeTracking", System: jsonSystem}, f)
	if err != nil {
		warn("the json mode's schema %v", err)
		return 0
	}
	current.ExtractionKey = extractionKey(c.Schema, f.Prompt)
	reusable := prev != nil && prev.ExtractionKey == current.ExtractionKey && prev.Extraction != nil
	switch ct.ChangeStatus {
	case changeSame:
		if reusable {
			current.Extraction = prev.Extraction
		}
		return 0
	case changeChanged:
	default:
		return 0 // new or removed: nothing to compare with, or nothing to read
	}

	pageURL, _ := doc.Metadata["url"].(string)
	if pageURL == "" {
		pageURL = req.URL
	}
	var (
		mu       sync.Mutex
		group    sync.WaitGroup
		trimmed  bool
		failed   bool
		answered bool
	)
	extract := func(markdown string, out *[]byte) {
		defer group.Done()
		ans, cut, err := s.extractVersion(ctx, c, markdown, pageURL, extra)
		mu.Lock()
		defer mu.Unlock()
		trimmed = trimmed || cut
		if err != nil {
			failed = true
			warn("json: %v", err)
			return
		}
		answered = true
		raw, err := json.Marshal(ans.JSON)
		if err != nil {
			failed = true
			warn("json: the model's answer cannot be encoded: %v", err)
			return
		}
		*out = raw
	}
	var before []byte
	switch {
	case reusable:
		before = prev.Extraction
	case prev.Markdown == "":
		// The previous version was a removed page: it had nothing to
		// extract, and every member is new.
	default:
		group.Add(1)
		go extract(prev.Markdown, &before)
	}
	var after []byte
	group.Add(1)
	go extract(current.Markdown, &after)
	group.Wait()
	if trimmed {
		warn("the page's Markdown was trimmed to fit the model's context of %d tokens", s.Model.Config().ContextTokens)
	}
	if after != nil {
		current.Extraction = after
	}
	if !failed {
		ct.JSON = jsonChanges(before, after)
	}
	if !answered || doc.JSON != nil || doc.Summary != "" || doc.Answer != "" {
		return 0
	}
	return modelCredits
}

// extractVersion asks the model for c's extraction from one version of the
// page, as the json format asks it: the Markdown without what costs
// tokens and says nothing, fitted into the model's context (it reports
// whether it was cut).
func (s *Service) extractVersion(ctx context.Context, c model.Call, markdown, pageURL, extra string) (*model.Answer, bool, error) {
	about := "URL: " + pageURL + "\n"
	if origin := content.Origin(pageURL); origin != "" {
		about += "Links written from the root (/path) are on " + origin + "; write URLs in your answer in full.\n"
	}
	text, cut := model.Fit(content.ForModel(markdown, pageURL),
		s.Model.InputBudget(model.EstimateTokens(c.System+extra+about)+64))
	c.User = extra + about + "\nPage content (Markdown):\n\n" + text
	ans, err := s.Model.Complete(ctx, c)
	return ans, cut, err
}

// extractionKey identifies what an extraction answers: the normalised
// schema (nil: any JSON object) and the prompt.
func extractionKey(schema *model.Schema, prompt string) string {
	h := sha256.New()
	if schema != nil {
		h.Write(mustJSON(schema))
	}
	h.Write([]byte{0})
	h.Write([]byte(prompt))
	return hex.EncodeToString(h.Sum(nil))
}

// jsonChanges compares two extractions (JSON; nil for none) member by
// member at the top level: a member whose value differs (compared as
// JSON, whatever the order of an object's keys), or that only one of them
// has, is in the result with both values (null where it is missing). An
// answer that is not an object (the schema's root was an array or a
// scalar) is compared whole, under "items" for an array and "value"
// otherwise, the names the model's schema wraps them under.
func jsonChanges(before, after []byte) map[string]JSONChange {
	prev, cur := decodeJSON(before), decodeJSON(after)
	out := map[string]JSONChange{}
	pm, pok := prev.(map[string]any)
	cm, cok := cur.(map[string]any)
	if (pok || prev == nil) && (cok || cur == nil) {
		for k, v := range pm {
			if w, ok := cm[k]; !ok || !sameJSON(v, w) {
				out[k] = JSONChange{Previous: v, Current: w}
			}
		}
		for k, w := range cm {
			if _, ok := pm[k]; !ok {
				out[k] = JSONChange{Current: w}
			}
		}
		return out
	}
	if !sameJSON(prev, cur) {
		key := "value"
		if _, ok := cur.([]any); ok {
			key = "items"
		}
		out[key] = JSONChange{Previous: prev, Current: cur}
	}
	return out
}

func decodeJSON(raw []byte) any {
	var v any
	if raw != nil {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil
		}
	}
	return v
}

// sameJSON compares two decoded JSON values by their encoding, in which
// objects' keys are sorted.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
