package content

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPublished(t *testing.T) {
	t.Parallel()
	soon := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	tests := []struct {
		name string
		html string
		want time.Time // zero: no date
	}{
		{
			name: "article:published_time first, in UTC",
			html: `<head><meta name="date" content="2020-01-01"><meta property="article:published_time" content="2024-03-05T10:20:30+01:00"></head>`,
			want: time.Date(2024, 3, 5, 9, 20, 30, 0, time.UTC),
		},
		{
			name: "og:article:published_time without seconds",
			html: `<head><meta property="og:article:published_time" content="2023-07-01T08:00Z"><meta itemprop="datePublished" content="2001-01-01"></head>`,
			want: time.Date(2023, 7, 1, 8, 0, 0, 0, time.UTC),
		},
		{
			name: "itemprop meta",
			html: `<head><meta itemprop="datePublished" content="2022-02-03"><meta name="date" content="2001-01-01"></head>`,
			want: time.Date(2022, 2, 3, 0, 0, 0, 0, time.UTC),
		},
		{
			name: "itemprop on a time element's datetime",
			html: `<div itemscope itemtype="https://schema.org/BlogPosting"><p>Posted <time itemprop="datePublished" datetime="2022-02-03T04:05:06">3 Feb</time></p></div>`,
			want: time.Date(2022, 2, 3, 4, 5, 6, 0, time.UTC),
		},
		{
			name: "JSON-LD @graph",
			html: `<head><script type="application/ld+json">{"@context":"https://schema.org","@graph":[` +
				`{"@type":"WebSite","name":"Example","publisher":{"@type":"Organization","datePublished":"1999-01-01"}},` +
				`{"@type":"NewsArticle","headline":"Tides","datePublished":"2021-05-06T07:08:09-0300"}]}</script>` +
				`<meta name="date" content="2001-01-01"></head>`,
			want: time.Date(2021, 5, 6, 10, 8, 9, 0, time.UTC),
		},
		{
			name: "JSON-LD array of objects, type written in capitals",
			html: `<script type="Application/LD+JSON">[{"@type":"BreadcrumbList"},{"@type":"Article","datePublished":"2021-06-07"}]</script>`,
			want: time.Date(2021, 6, 7, 0, 0, 0, 0, time.UTC),
		},
		{
			name: "broken JSON-LD passed over",
			html: `<head><script type="application/ld+json">{"@type":"Article","datePublished":"2021-01-01",}</script>` +
				`<meta name="date" content="2019-09-09 10:11:12"></head>`,
			want: time.Date(2019, 9, 9, 10, 11, 12, 0, time.UTC),
		},
		{
			name: "DC issued before DC.date",
			html: `<head><meta name="DC.date" content="2010-01-01"><meta name="DCTERMS.issued" content="2011-02-02"></head>`,
			want: time.Date(2011, 2, 2, 0, 0, 0, 0, time.UTC),
		},
		{
			name: "parsely-pub-date in RFC 1123",
			html: `<head><meta name="parsely-pub-date" content="Tue, 12 Mar 2019 15:04:05 GMT"><meta name="sailthru.date" content="2001-01-01"></head>`,
			want: time.Date(2019, 3, 12, 15, 4, 5, 0, time.UTC),
		},
		{
			name: "sailthru.date",
			html: `<head><meta name="sailthru.date" content="2018-04-05 06:07:08"></head>`,
			want: time.Date(2018, 4, 5, 6, 7, 8, 0, time.UTC),
		},
		{
			name: "time inside article",
			html: `<header><time datetime="2001-01-01">Today</time></header><article><h1>Post</h1><time datetime="2017-03-04T05:06">4 March</time></article>`,
			want: time.Date(2017, 3, 4, 5, 6, 0, 0, time.UTC),
		},
		{
			name: "time inside main",
			html: `<main><p>Updated <time datetime="2016-06-16">June</time></p></main>`,
			want: time.Date(2016, 6, 16, 0, 0, 0, 0, time.UTC),
		},
		{
			name: "time with pubdate",
			html: `<div class="byline"><time pubdate datetime="2015-05-05T05:05:05Z">5 May</time></div>`,
			want: time.Date(2015, 5, 5, 5, 5, 5, 0, time.UTC),
		},
		{
			name: "time outside article ignored",
			html: `<header><time datetime="2014-04-04">Today</time></header><article><p>No date here.</p></article><footer><time datetime="2013-03-03">2013</time></footer>`,
		},
		{
			name: "unreadable value passed over",
			html: `<head><meta property="article:published_time" content="yesterday"><meta property="og:published_time" content="2012-12-12T12:12:12.500Z"></head>`,
			want: time.Date(2012, 12, 12, 12, 12, 12, 500_000_000, time.UTC),
		},
		{
			name: "placeholder zero date passed over",
			html: `<head><meta property="article:published_time" content="0001-01-01T00:00:00"><meta name="date" content="2011-11-11"></head>`,
			want: time.Date(2011, 11, 11, 0, 0, 0, 0, time.UTC),
		},
		{
			name: "far future passed over",
			html: `<head><meta property="article:published_time" content="2999-01-01T00:00:00Z"><meta name="date" content="` +
				time.Now().Add(48*time.Hour).Format(time.RFC3339) + `"><meta name="DC.date" content="2010-10-10"></head>`,
			want: time.Date(2010, 10, 10, 0, 0, 0, 0, time.UTC),
		},
		{
			name: "less than a day ahead kept",
			html: fmt.Sprintf(`<head><meta property="article:published_time" content="%s"></head>`, soon.Format(time.RFC3339)),
			want: soon,
		},
		{
			name: "no date",
			html: `<head><title>Undated</title><meta name="description" content="2020-01-01"></head><p>Text</p>`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The date is computed whatever Want asks for.
			res, err := Transform([]byte(tc.html), "https://example.com/", Options{})
			require.NoError(t, err)
			require.Equal(t, tc.want, res.Published, "published")
			require.Equal(t, time.UTC, res.Published.Location(), "location")
		})
	}
}

func TestParseDate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Time // zero: not a date
	}{
		{"2024-03-05T10:20:30Z", time.Date(2024, 3, 5, 10, 20, 30, 0, time.UTC)},
		{"2024-03-05T10:20:30.123+02:00", time.Date(2024, 3, 5, 8, 20, 30, 123_000_000, time.UTC)},
		{"2024-03-05T10:20:30+0200", time.Date(2024, 3, 5, 8, 20, 30, 0, time.UTC)},
		{"2024-03-05T10:20:30", time.Date(2024, 3, 5, 10, 20, 30, 0, time.UTC)},
		{"2024-03-05T10:20-05:00", time.Date(2024, 3, 5, 15, 20, 0, 0, time.UTC)},
		{"2024-03-05T10:20", time.Date(2024, 3, 5, 10, 20, 0, 0, time.UTC)},
		{" 2024-03-05 ", time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)},
		{"2024-03-05 10:20:30", time.Date(2024, 3, 5, 10, 20, 30, 0, time.UTC)},
		{"Tue, 05 Mar 2024 10:20:30 GMT", time.Date(2024, 3, 5, 10, 20, 30, 0, time.UTC)},
		{"Tue, 05 Mar 2024 10:20:30 +0100", time.Date(2024, 3, 5, 9, 20, 30, 0, time.UTC)},
		{"", time.Time{}},
		{"2024-13-01", time.Time{}},
		{"March 5, 2024", time.Time{}},
		{"1709634030", time.Time{}},
		{"0001-01-01T00:00:00Z", time.Time{}},
	}
	for _, tc := range tests {
		got, ok := parseDate(tc.in)
		require.Equal(t, !tc.want.IsZero(), ok, "parseDate(%q) ok", tc.in)
		if ok {
			require.True(t, tc.want.Equal(got), "parseDate(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
