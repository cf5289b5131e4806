package service

import (
	"context"
	"time"

	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/store"
)

// modelUsageRetention is how long each model call's usage is kept: the
// token usage of a billing period, and a year of history.
const modelUsageRetention = 400 * 24 * time.Hour

// newModel returns the language-model client, nil when none is
// configured.
func newModel(c model.Config, st *store.Store) *model.Client {
	if c.BaseURL == "" {
		return nil
	}
	return model.New(c, usageRecorder{st})
}

// usageRecorder keeps the model's usage in the store.
type usageRecorder struct{ st *store.Store }

func (r usageRecorder) RecordModelUsage(ctx context.Context, u model.Usage) error {
	return r.st.AddModelUsage(ctx, store.ModelUsage{Team: u.Team, Request: u.Request, Purpose: u.Purpose, Model: u.Model,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Attempts: u.Attempts, Duration: u.Duration, At: u.At,
		Error: u.Error})
}
