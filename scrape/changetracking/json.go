package changetracking

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"

	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/store"
)

// Extraction is what the json mode extracts from each version of a page:
// by a schema and a prompt, with Extract, which asks the model for one
// version's answer and reports whether its Markdown was cut to fit the
// model's context.
type Extraction struct {
	Schema  *model.Schema
	Prompt  string
	Extract func(ctx context.Context, markdown string) (answer any, cut bool, err error)
}

// Compare is the json mode: once the page changed, it extracts from both
// versions and sets r.JSON to the top-level members whose values differ.
// The model is asked only when something changed, and never twice for
// one version: current keeps its extraction (keyed by the schema and
// prompt) for the next comparison, and a version the same as the previous
// one inherits the previous one's. A failure is a warning (warn, under
// "json: ") and leaves r.JSON unset.
//
// It reports whether the model answered at all, and whether a version was
// trimmed to fit its context.
func (e Extraction) Compare(ctx context.Context, r *Result, prev, current *store.PageVersion,
	warn func(string, ...any)) (answered, trimmed bool) {
	current.ExtractionKey = extractionKey(e.Schema, e.Prompt)
	reusable := prev != nil && prev.ExtractionKey == current.ExtractionKey && prev.Extraction != nil
	switch r.ChangeStatus {
	case StatusSame:
		if reusable {
			current.Extraction = prev.Extraction
		}
		return false, false
	case StatusChanged:
	default:
		return false, false // new or removed: nothing to compare with, or nothing to read
	}

	var (
		mu     sync.Mutex
		group  sync.WaitGroup
		failed bool
	)
	extract := func(markdown string, out *[]byte) {
		defer group.Done()
		ans, cut, err := e.Extract(ctx, markdown)
		mu.Lock()
		defer mu.Unlock()
		trimmed = trimmed || cut
		if err != nil {
			failed = true
			warn("json: %v", err)
			return
		}
		answered = true
		raw, err := json.Marshal(ans)
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
	if after != nil {
		current.Extraction = after
	}
	if !failed {
		r.JSON = jsonChanges(before, after)
	}
	return answered, trimmed
}

// extractionKey identifies what an extraction answers: the normalised
// schema (nil: any JSON object) and the prompt.
func extractionKey(schema *model.Schema, prompt string) string {
	h := sha256.New()
	if schema != nil {
		b, _ := schema.MarshalJSON()
		h.Write(b)
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
