package scrape

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/store"
)

// TestScrapeTransformIsTheIndexDocument checks that the document a scrape
// hands the index from its own transform is the one the index would make
// of the cached page: the two paths must index the same thing.
func TestScrapeTransformIsTheIndexDocument(t *testing.T) {
	body := []byte(`<html lang="en"><head><title>Lighthouses</title><meta name="description" content="About lights">
<meta property="article:published_time" content="2026-10-01T10:00:00Z"></head><body><nav>menu words</nav>
<main><h1>Lighthouses</h1><p>A <a href="https://other.example/x">lighthouse</a> guides ships.</p>
<img src="/big.png" width="800" height="600" alt="a red lighthouse"></main></body></html>`)
	c := store.CachedPage{Team: "t", Key: "k", URL: "http://site.test/a", FinalURL: "http://site.test/a",
		CreatedAt: time.Now().UTC(), StatusCode: 200, ContentType: "text/html", Body: body}
	want, ok, err := IndexDoc(context.Background(), c)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "a red lighthouse", want.Images[0].Alt)
	require.Equal(t, []string{"other.example"}, want.LinkHosts)
	require.False(t, want.Published.IsZero())

	s := &Service{}
	pg := &page{status: 200, finalURL: c.FinalURL, contentType: c.ContentType, body: body}
	doc, err := s.transform(context.Background(), Request{Options: DefaultOptions()}, pg, true)
	require.NoError(t, err)
	require.Equal(t, &want, doc.indexDoc(c))

	// Options the index does not read pages with leave it to convert.
	o := DefaultOptions()
	o.OnlyMainContent = false
	doc, err = s.transform(context.Background(), Request{Options: o}, pg, true)
	require.NoError(t, err)
	require.Nil(t, doc.indexDoc(c))
}
