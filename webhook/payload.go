package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/store"
)

// body is the JSON POSTed for one event, in Firecrawl's shape.
type body struct {
	Success   bool              `json:"success"`
	Type      string            `json:"type"`
	ID        string            `json:"id"`
	WebhookID string            `json:"webhookId"`
	Data      []json.RawMessage `json:"data"`
	Error     string            `json:"error,omitempty"`
	Metadata  map[string]any    `json:"metadata"`
}

// Payload builds the body of one event of job jobID: type kind+"."+event
// (kind "crawl" or "batch_scrape"), a new webhookId (the same bytes are sent
// on every retry, so receivers can deduplicate), data docs (a page event's
// [document], otherwise empty), error errMsg when there is one, and the
// spec's metadata echoed back. Success is false for "failed" and for a page
// event that carries an error; otherwise true.
func Payload(kind, event, jobID string, spec *Spec, docs []json.RawMessage, errMsg string) []byte {
	return Body(kind+"."+event, jobID, event != "failed" && !(event == "page" && errMsg != ""), spec, docs, errMsg)
}

// Body builds the body of one event of type typ about id (a job, a
// monitor check) in the same shape: data (empty when nil), error errMsg
// when there is one, a new webhookId and the spec's metadata.
func Body(typ, id string, success bool, spec *Spec, data []json.RawMessage, errMsg string) []byte {
	b := body{
		Success:   success,
		Type:      typ,
		ID:        id,
		WebhookID: uuid.NewString(),
		Data:      data,
		Error:     errMsg,
	}
	if b.Data == nil {
		b.Data = []json.RawMessage{}
	}
	if spec != nil {
		b.Metadata = spec.Metadata
	}
	if b.Metadata == nil {
		b.Metadata = map[string]any{}
	}
	out, err := encode(b)
	if err != nil {
		// Only a document that is not valid JSON gets here, a bug upstream;
		// the receiver still learns that the event happened.
		b.Success, b.Data = false, []json.RawMessage{}
		b.Error = fmt.Sprintf("the document could not be encoded: %v", err)
		out, _ = encode(b)
	}
	return out
}

// encode marshals v without escaping <, > and &, which documents are full of.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// target is where an event goes, stored with it as JSON.
type target struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Event is the stored form of one event of team's job jobID (spec not nil), to be added with
// store.AddWebhookEvent (or inside the caller's own transaction) and then
// announced with Dispatcher.Notify.
func Event(team, jobID string, spec *Spec, payload []byte) store.WebhookEvent {
	t, _ := json.Marshal(target{URL: spec.URL, Headers: spec.Headers}) // strings only: cannot fail
	return store.WebhookEvent{JobID: jobID, Team: team, Target: t, Payload: payload, State: store.WebhookPending}
}
