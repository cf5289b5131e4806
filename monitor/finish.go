package monitor

import (
	"context"
	"encoding/json"
	"time"

	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/webhook"
)

// finish writes the check's outcome, once: its pages, the monitor's
// snapshots and state, and its webhook events, in one transaction.
func (r *run) finish(ctx context.Context, def Definition, pages []Page, keep, drop []store.MonitorSnapshot, status, msg string) {
	if ctx.Err() != nil {
		return // lost, or the service is stopping: the check is run again
	}
	now := time.Now()
	sum := Summarize(pages)
	r.mu.Lock()
	r.detail.Error = msg
	c := r.check
	c.Status, c.FinishedAt = status, now
	c.Summary, _ = json.Marshal(sum)
	c.Detail, _ = json.Marshal(r.detail)
	r.mu.Unlock()
	o := store.CheckOutcome{Check: c, Snapshots: keep, Dropped: drop}
	for i, p := range pages {
		body, _ := json.Marshal(p)
		o.Pages = append(o.Pages, store.MonitorPage{Seq: i, Status: p.Status, Body: body})
	}
	if m, err := r.s.Store.MonitorByID(ctx, c.Team, c.Monitor); err == nil && status == CheckFailed {
		o.Failures = m.Failures + 1
		if _, sched, err := decode(m.Spec); err == nil {
			if d := backoff(o.Failures, sched.Interval()); d > 0 {
				o.NextRunAt = now.Add(d)
			}
		}
	}
	o.Events = events(c, def, pages, sum, status, msg)
	ok, err := r.s.Store.FinishMonitorCheck(context.WithoutCancel(ctx), o)
	if err != nil {
		r.s.Log.Error("finishing a monitor check", "check", c.ID, "err", err)
		return
	}
	if !ok {
		r.s.Log.Warn("a monitor check was finished by another node", "check", c.ID)
		return
	}
	if len(o.Events) > 0 && r.s.Webhooks != nil {
		r.s.Webhooks.Notify()
	}
	r.s.Log.Info("monitor check done", "monitor", c.Monitor, "check", c.ID, "status", status,
		"pages", sum.TotalPages, "changed", sum.Changed, "new", sum.New, "removed", sum.Removed, "errors", sum.Error)
}

// pageData is the data of a monitor.page event.
type pageData struct {
	MonitorID        string    `json:"monitorId"`
	CheckID          string    `json:"checkId"`
	URL              string    `json:"url"`
	Status           string    `json:"status"`
	PreviousScrapeID *string   `json:"previousScrapeId"`
	CurrentScrapeID  *string   `json:"currentScrapeId"`
	Error            *string   `json:"error"`
	IsMeaningful     *bool     `json:"isMeaningful,omitempty"`
	Judgment         *Judgment `json:"judgment,omitempty"`
	Diff             *Diff     `json:"diff,omitempty"`
}

// events are the check's webhook events: monitor.page for each page that
// is not the same as before, then monitor.check.completed.
func events(c store.MonitorCheck, def Definition, pages []Page, sum Summary, status, msg string) []store.WebhookEvent {
	spec := def.Webhook
	if spec == nil {
		return nil
	}
	var out []store.WebhookEvent
	if wants(spec, "monitor.page") {
		for _, p := range pages {
			if p.Status == PageSame {
				continue
			}
			d := pageData{MonitorID: c.Monitor, CheckID: c.ID, URL: p.URL, Status: p.Status,
				PreviousScrapeID: p.PreviousScrapeID, CurrentScrapeID: p.CurrentScrapeID, Error: p.Error,
				Judgment: p.Judgment, Diff: p.Diff}
			if p.Judgment != nil {
				d.IsMeaningful = &p.Judgment.Meaningful
			}
			raw, _ := json.Marshal(d)
			errMsg := ""
			if p.Error != nil {
				errMsg = *p.Error
			}
			body := webhook.Body("monitor.page", c.ID, p.Status != PageError, spec, []json.RawMessage{raw}, errMsg)
			out = append(out, webhook.Event(c.Team, c.ID, spec, body))
		}
	}
	if wants(spec, "monitor.check.completed") {
		raw, _ := json.Marshal(map[string]any{"monitorId": c.Monitor, "checkId": c.ID, "status": status, "summary": sum})
		body := webhook.Body("monitor.check.completed", c.ID, status == CheckCompleted, spec, []json.RawMessage{raw}, msg)
		out = append(out, webhook.Event(c.Team, c.ID, spec, body))
	}
	return out
}

// wants reports whether spec asks for event; none named is all.
func wants(spec *webhook.Spec, event string) bool {
	if len(spec.Events) == 0 {
		return true
	}
	for _, e := range spec.Events {
		if e == event {
			return true
		}
	}
	return false
}

// Judgment is the model's view of a changed page against the goal.
type Judgment struct {
	Meaningful        bool     `json:"meaningful"`
	Confidence        string   `json:"confidence"`
	Reason            string   `json:"reason"`
	MeaningfulChanges []Change `json:"meaningfulChanges"`
}

// Change is one change the judge found relevant to the goal.
type Change struct {
	Type   string  `json:"type"`
	Before *string `json:"before"`
	After  *string `json:"after"`
	Reason string  `json:"reason"`
}

var judgmentSchema = json.RawMessage(`{"type":"object","properties":{
	"meaningful":{"type":"boolean"},
	"confidence":{"type":"string","enum":["high","medium","low"]},
	"reason":{"type":"string"},
	"meaningfulChanges":{"type":"array","items":{"type":"object","properties":{
		"type":{"type":"string","enum":["added","removed","changed"]},
		"before":{"type":["string","null"]},"after":{"type":["string","null"]},"reason":{"type":"string"}},
		"required":["type","before","after","reason"]}}},
	"required":["meaningful","confidence","reason","meaningfulChanges"]}`)

const judgeSystem = `You watch web pages for a user. You are given the user's goal and the unified diff of a page between two checks (lines starting with - were removed, + were added). Decide whether the change matters for the goal. Answer in JSON: meaningful (true only when the change is relevant to the goal), confidence (high, medium or low), reason (one sentence), and meaningfulChanges: the goal-relevant changes, each with type (added, removed or changed), before and after (the text, or null) and reason. Ignore changes the goal does not care about (dates, counters, layout).`

// judgeCredits is what judging one changed page costs, as a model-backed
// format's call does.
const judgeCredits = 4

// judge asks the model, for each changed page, whether its change matters
// for the monitor's goal. Without a model (removed since the monitor was
// made) or when a call fails, the page says so in its metadata and has no
// judgment.
func (s *Service) judge(ctx context.Context, c store.MonitorCheck, def Definition, pages []Page, d *checkDetail) {
	if !def.JudgeEnabled || def.Goal == "" {
		return
	}
	schema, err := model.NormalizeSchema(judgmentSchema)
	if err != nil {
		s.Log.Error("the judgment schema", "err", err)
		return
	}
	for i := range pages {
		p := &pages[i]
		if p.Status != PageChanged || p.Diff == nil {
			continue
		}
		if s.Model == nil {
			p.Metadata = note("the goal was not judged: no language model is configured (TRAWLER_LLM_BASE_URL)")
			continue
		}
		system := judgeSystem
		user := "Goal: " + def.Goal + "\nPage: " + p.URL + "\n\nDiff:\n"
		text, _ := model.Fit(p.Diff.Text, s.Model.InputBudget(model.EstimateTokens(system+user)+256))
		ans, err := s.Model.Complete(ctx, model.Call{Team: c.Team, Request: c.ID, Purpose: "monitor", System: system,
			User: user + text, Schema: schema})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.Metadata = note("the goal was not judged: " + err.Error())
			continue
		}
		raw, _ := json.Marshal(ans.JSON)
		var j Judgment
		if json.Unmarshal(raw, &j) != nil {
			p.Metadata = note("the goal was not judged: the model's answer did not fit the judgment's shape")
			continue
		}
		if j.MeaningfulChanges == nil {
			j.MeaningfulChanges = []Change{}
		}
		p.Judgment = &j
		// Billed once per page and check, however often the check runs.
		if err := s.Store.AddCharge(context.WithoutCancel(ctx), store.Charge{Team: c.Team, Request: c.ID,
			Item: discover.PageKey(p.URL), Kind: store.CreditMonitor, Credits: judgeCredits}); err != nil {
			s.Log.Error("billing a monitor's judgment", "check", c.ID, "err", err)
		}
		d.Credits += judgeCredits
	}
}

func note(msg string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{"warning": msg})
	return raw
}
