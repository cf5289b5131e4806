package service

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/search"
	"github.com/trawler-dev/trawler/search/provider"
	"github.com/trawler-dev/trawler/store"
)

// searchParts are the search index, the syncer that keeps it in step with
// the cache, and the search service over both; index and syncer are nil
// with TRAWLER_SEARCH_INDEX=false, service with no source at all.
type searchParts struct {
	index   index.Backend
	syncer  *index.Syncer
	service *search.Service
}

// newSearch opens the index (bleve's files under the data directory, or
// PostgreSQL's tables when the store is there) and builds the
// sources TRAWLER_SEARCH_PROVIDERS lists. The scraper tells the syncer of
// each page it caches.
func newSearch(cfg *config.Config, st *store.Store, scraper *scrape.Service, log *slog.Logger) (*searchParts, error) {
	p := &searchParts{}
	var idx search.Source
	specs := cfg.SearchProviders
	if cfg.SearchIndex {
		// On PostgreSQL the index is the database's, shared by every node;
		// on SQLite it is bleve's files in the data directory.
		var ix index.Backend
		if db := st.Postgres(); db != nil {
			ix = index.OpenPG(db)
		} else {
			bl, err := index.Open(filepath.Join(cfg.DataDir, "search.bleve"))
			if err != nil {
				return nil, err
			}
			ix = bl
		}
		p.index, p.syncer = ix, index.NewSyncer(ix, st, scrape.IndexDoc, log)
		scraper.OnCached = func(seq int64, d *index.Doc) {
			if d != nil {
				p.syncer.Offer(seq, *d)
			} else {
				p.syncer.Notify()
			}
		}
		idx = &search.IndexSource{Index: ix, Syncer: p.syncer, PublicOnly: !cfg.AllowPrivateNetworks}
	} else {
		var live []provider.Spec
		for _, s := range specs {
			if s.Kind != provider.KindIndex {
				live = append(live, s)
			}
		}
		specs = live
	}
	// Providers are the operator's own endpoints: they are reached directly,
	// not through the network guard, each request bounded by the search's
	// timeout.
	sources, err := search.Sources(specs, idx, &http.Client{})
	if err != nil {
		p.close()
		return nil, err
	}
	if len(sources) > 0 {
		p.service = &search.Service{Sources: sources, Scraper: scraper, Log: log}
	}
	return p, nil
}

// run keeps the index in step until ctx ends.
func (p *searchParts) run(ctx context.Context) {
	if p.syncer != nil {
		p.syncer.Run(ctx)
	}
}

// notify tells the syncer that the cache changed.
func (p *searchParts) notify() {
	if p.syncer != nil {
		p.syncer.Notify()
	}
}

func (p *searchParts) close() {
	if p.index != nil {
		p.index.Close()
	}
}
