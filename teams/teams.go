// Package teams owns who a caller is: API keys (stored only as SHA-256
// hashes, compared in constant time) mapped to teams, and each team's limits.
package teams

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/store"
)

// Team is an authenticated caller's team.
type Team struct {
	ID string
	// Concurrency is how many browsers the team may lease at once.
	Concurrency int
	// Features are the options the operator enabled for the team.
	Features config.Features
	// CreditLimit is the credits the team may use per calendar month
	// (UTC); 0: no limit.
	CreditLimit int64
}

// Registry authenticates bearer keys.
type Registry struct {
	local       bool
	concurrency int
	features    map[string]config.Features
	credits     map[string]int64
	keys        []store.KeyRecord
}

// Open stores the configured keys (hashed) and returns a registry over
// them. With no keys configured the registry is in local mode.
func Open(ctx context.Context, st *store.Store, cfg *config.Config) (*Registry, error) {
	r := &Registry{local: cfg.LocalMode(), concurrency: cfg.TeamConcurrency, features: cfg.TeamFeatures,
		credits: cfg.TeamCredits}
	if r.local {
		if err := st.EnsureTeam(ctx, config.LocalTeam); err != nil {
			return nil, fmt.Errorf("creating the local team: %w", err)
		}
	}
	recs := make([]store.KeyRecord, 0, len(cfg.APIKeys))
	for _, k := range cfg.APIKeys {
		recs = append(recs, store.KeyRecord{Hash: hashKey(k.Key), Team: k.Team})
	}
	if err := st.ReplaceKeys(ctx, recs); err != nil {
		return nil, err
	}
	keys, err := st.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading keys: %w", err)
	}
	r.keys = keys
	return r, nil
}

// Local reports whether the registry is in local mode.
func (r *Registry) Local() bool { return r.local }

// Authenticate returns the team of key. In local mode every caller, with or
// without a key, is the local team.
func (r *Registry) Authenticate(key string) (Team, bool) {
	if r.local {
		return r.team(config.LocalTeam), true
	}
	if key == "" {
		return Team{}, false
	}
	h := hashKey(key)
	found := ""
	// Compare against every key so the time taken does not tell which
	// (or whether any) key matched.
	for _, k := range r.keys {
		if subtle.ConstantTimeCompare(h, k.Hash) == 1 {
			found = k.Team
		}
	}
	if found == "" {
		return Team{}, false
	}
	return r.team(found), true
}

func (r *Registry) team(id string) Team {
	f := r.features[id]
	if r.local {
		// The local team is the operator: every feature is theirs.
		f = config.Features{ZeroDataRetention: true, IgnoreRobotsTxt: true, SearchZDR: true, SearchAnon: true}
	}
	return Team{ID: id, Concurrency: r.concurrency, Features: f, CreditLimit: r.credits[id]}
}

func hashKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// ByID returns team id, for work a team's request left running (a
// monitor's checks).
func (r *Registry) ByID(id string) Team { return r.team(id) }

// Concurrency returns team id's concurrency limit.
func (r *Registry) Concurrency(id string) int { return r.team(id).Concurrency }
