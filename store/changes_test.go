package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The previous version of a page is the newest of its own history: the
// same team, URL and tag, scraped no later than asked and within the
// retention; its Markdown and extraction come back as stored.
func TestPageVersionHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	long := strings.Repeat("A line of the page that compresses well.\n", 3000)
	put := func(team, tag string, age time.Duration, md string, extraction string) {
		t.Helper()
		v := PageVersion{Team: team, URLKey: "http://a.test/p", Tag: tag, ScrapedAt: now.Add(-age), StatusCode: 200,
			Markdown: md}
		if extraction != "" {
			v.ExtractionKey, v.Extraction = "k1", []byte(extraction)
		}
		require.NoError(t, s.PutPageVersion(ctx, v, 10, now.Add(-90*24*time.Hour)))
	}
	put("acme", "", 3*time.Hour, "# Old", "")
	put("acme", "", 2*time.Hour, long, `{"price":9}`)
	put("acme", "weekly", time.Hour, "# Weekly", "")
	put("globex", "", 30*time.Minute, "# Globex's", "")

	for _, tc := range []struct {
		name, team, tag string
		before          time.Time
		since           time.Time
		want            string // the Markdown, "" for ErrNotFound
	}{
		{"the newest of the default history", "acme", "", now, time.Time{}, long},
		{"an earlier one", "acme", "", now.Add(-150 * time.Minute), time.Time{}, "# Old"},
		{"a tag is its own history", "acme", "weekly", now, time.Time{}, "# Weekly"},
		{"an unknown tag", "acme", "daily", now, time.Time{}, ""},
		{"another team's", "globex", "", now, time.Time{}, "# Globex's"},
		{"a team with none", "initech", "", now, time.Time{}, ""},
		{"none before", "acme", "", now.Add(-4 * time.Hour), time.Time{}, ""},
		{"past the retention", "acme", "", now, now.Add(-time.Hour), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := s.PreviousPageVersion(ctx, tc.team, "http://a.test/p", tc.tag, tc.before, tc.since)
			if tc.want == "" {
				require.ErrorIs(t, err, ErrNotFound)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, v.Markdown)
			require.Equal(t, 200, v.StatusCode)
		})
	}
	v, err := s.PreviousPageVersion(ctx, "acme", "http://a.test/p", "", now, time.Time{})
	require.NoError(t, err)
	require.Equal(t, now.Add(-2*time.Hour), v.ScrapedAt)
	require.Equal(t, "k1", v.ExtractionKey)
	require.JSONEq(t, `{"price":9}`, string(v.Extraction))
	var stored int
	require.NoError(t, s.db.QueryRow(`SELECT MAX(LENGTH(markdown)) FROM page_versions`).Scan(&stored))
	require.Less(t, stored, len(long)/10, "the Markdown is stored compressed")

	old, err := s.PreviousPageVersion(ctx, "acme", "http://a.test/p", "", now.Add(-150*time.Minute), time.Time{})
	require.NoError(t, err)
	require.Empty(t, old.ExtractionKey)
	require.Nil(t, old.Extraction, "a version without extraction")
}

// A page keeps its newest versions only, and none past the retention;
// other pages' histories are left alone; the sweep drops what is old
// whatever its page.
func TestPageVersionPruning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	count := func(team, tag string) int {
		t.Helper()
		var n int
		require.NoError(t, s.db.QueryRow(`SELECT COUNT(*) FROM page_versions WHERE team_id = ? AND tag = ?`, team, tag).Scan(&n))
		return n
	}
	put := func(team, tag string, at time.Time, md string, keep int, since time.Time) {
		t.Helper()
		require.NoError(t, s.PutPageVersion(ctx, PageVersion{Team: team, URLKey: "http://a.test/p", Tag: tag, ScrapedAt: at,
			StatusCode: 200, Markdown: md}, keep, since))
	}
	put("globex", "", now.Add(-200*24*time.Hour), "globex, long ago", 10, time.Time{})
	put("acme", "weekly", now.Add(-time.Hour), "weekly", 10, time.Time{})
	for i := range 14 {
		put("acme", "", now.Add(time.Duration(i-14)*time.Minute), fmt.Sprintf("version %d", i), 10, now.Add(-90*24*time.Hour))
	}
	require.Equal(t, 10, count("acme", ""), "the newest ten of a page")
	v, err := s.PreviousPageVersion(ctx, "acme", "http://a.test/p", "", now, time.Time{})
	require.NoError(t, err)
	require.Equal(t, "version 13", v.Markdown)
	_, err = s.PreviousPageVersion(ctx, "acme", "http://a.test/p", "", now.Add(-11*time.Minute), time.Time{})
	require.ErrorIs(t, err, ErrNotFound, "versions 0 to 3 were dropped")
	v, err = s.PreviousPageVersion(ctx, "acme", "http://a.test/p", "", now.Add(-10*time.Minute), time.Time{})
	require.NoError(t, err)
	require.Equal(t, "version 4", v.Markdown, "the oldest kept")
	require.Equal(t, 1, count("acme", "weekly"), "another tag's history is its own")
	require.Equal(t, 1, count("globex", ""), "another team's history is its own")

	// The retention applies when the page is scraped again.
	put("acme", "", now, "version 14", 10, now.Add(-270*time.Second))
	require.Equal(t, 5, count("acme", ""), "versions 10 to 14, scraped within four and a half minutes")

	require.NoError(t, s.PrunePageVersions(ctx, now.Add(-90*24*time.Hour)))
	require.Equal(t, 0, count("globex", ""), "the sweep drops what is past the retention")
	require.Equal(t, 5, count("acme", ""))
	require.Equal(t, 1, count("acme", "weekly"))
}
