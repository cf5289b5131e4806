package discover

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestLinks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		base string
		html string
		want []string
	}{
		{
			name: "relative and absolute",
			base: "https://example.com/docs/intro",
			html: `<a href="setup">Setup</a> <a href="/about">About</a> <a href="https://other.org/x">x</a> <a href="../up">up</a>`,
			want: []string{"https://example.com/docs/setup", "https://example.com/about", "https://other.org/x", "https://example.com/up"},
		},
		{
			name: "base href applies, even to links before it",
			base: "https://example.com/page",
			html: `<a href="first">1</a><head><base href="https://cdn.example.com/v2/"></head><a href="second">2</a><base href="/ignored/">`,
			want: []string{"https://cdn.example.com/v2/first", "https://cdn.example.com/v2/second"},
		},
		{
			name: "relative base href",
			base: "https://example.com/a/b/page",
			html: `<base href="../root/"><a href="x">x</a>`,
			want: []string{"https://example.com/a/root/x"},
		},
		{
			name: "fragments dropped and merged",
			base: "https://example.com/docs/",
			html: `<a href="#top">top</a><a href="guide#install">i</a><a href="guide#use">u</a>`,
			want: []string{"https://example.com/docs/", "https://example.com/docs/guide"},
		},
		{
			name: "non-web schemes dropped",
			base: "https://example.com/",
			html: `<a href="javascript:void(0)">j</a><a href="mailto:me@example.com">m</a><a href="tel:+1">t</a><a href="data:text/plain,x">d</a><a href="">empty</a><a>none</a><a href="/ok">ok</a>`,
			want: []string{"https://example.com/ok"},
		},
		{
			name: "duplicates removed in document order",
			base: "https://example.com/",
			html: `<a href="/b">b</a><a href="/a">a</a><a href="/b">b again</a><a href="https://EXAMPLE.com:443/a">a again</a>`,
			want: []string{"https://example.com/b", "https://example.com/a"},
		},
		{
			name: "area counts, link and img do not",
			base: "https://example.com/",
			html: `<map><area href="/map-target" shape="rect"></map><link rel="next" href="/next"><img src="/i.png"><link rel="canonical" href="/canon">`,
			want: []string{"https://example.com/map-target"},
		},
		{
			name: "entities, case and whitespace in attributes",
			base: "https://example.com/",
			html: `<A HREF=" /search?a=1&amp;b=2 ">s</A><a class="x" href='/single'>q</a><a/href="/odd">`,
			want: []string{"https://example.com/search?a=1&b=2", "https://example.com/single", "https://example.com/odd"}, // <a/href> is an href to browsers too
		},
		{
			name: "links in script, style and comments are not links",
			base: "https://example.com/",
			html: `<script>document.write('<a href="/from-script">')</script><style>a[href="/css"]{}</style><!-- <a href="/commented"> --><a href="/real">r</a>`,
			want: []string{"https://example.com/real"},
		},
		{
			name: "broken markup still yields links",
			base: "https://example.com/",
			html: `<div><a href="/one">one<p><a href="/two">two</div></a></p><a href="/three"`,
			want: []string{"https://example.com/one", "https://example.com/two"},
		},
		{
			name: "credentials are never kept",
			base: "https://example.com/",
			html: `<a href="https://admin:hunter2@example.com/admin">a</a><a href="//u@other.org/x">b</a><base href="https://me:pw@cdn.example.com/"><a href="c">c</a>`,
			want: []string{"https://example.com/admin", "https://other.org/x", "https://cdn.example.com/c"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, u := range Links(mustParse(t, tc.base), []byte(tc.html)) {
				got = append(got, u.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Links =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

// BenchmarkLinks measures link extraction on a 100 KB page, the cost paid
// on every crawled page.
func BenchmarkLinks(b *testing.B) {
	var page strings.Builder
	page.WriteString(`<!doctype html><html><head><title>Bench</title><link rel="stylesheet" href="/s.css"><script>var x = "<a href='/no'>";</script></head><body>`)
	for i := 0; page.Len() < 100_000; i++ {
		fmt.Fprintf(&page, `<div class="item"><p>Paragraph %d with <b>bold</b> text and a <a href="/articles/%d?ref=list#c">relative link</a>, `+
			`an <a href="https://other.example.org/p/%d">absolute one</a> and <a href="javascript:void(0)">a script</a>.</p></div>`+"\n", i, i%300, i)
	}
	page.WriteString(`</body></html>`)
	doc := []byte(page.String())
	base := mustParse(b, "https://example.com/blog/")
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		Links(base, doc)
	}
}
