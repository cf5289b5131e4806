package provider

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSpecs(t *testing.T) {
	t.Parallel()
	withDefaults := func(p Paths) Paths {
		p.Results = firstNonEmpty(p.Results, "results")
		p.URL = firstNonEmpty(p.URL, "url")
		p.Title = firstNonEmpty(p.Title, "title")
		p.Description = firstNonEmpty(p.Description, "description|content|snippet")
		return p
	}
	tests := []struct {
		name string
		in   string
		want []Spec
	}{
		{name: "empty means the index", in: "", want: []Spec{{Kind: KindIndex}}},
		{name: "only separators", in: " ;\n ; ", want: []Spec{{Kind: KindIndex}}},
		{name: "index", in: "index", want: []Spec{{Kind: KindIndex}}},
		{name: "index in capitals", in: "INDEX", want: []Spec{{Kind: KindIndex}}},
		{
			name: "index then searxng, trailing slash dropped",
			in:   "index; searxng:http://127.0.0.1:8888/",
			want: []Spec{{Kind: KindIndex}, {Kind: KindSearXNG, URL: "http://127.0.0.1:8888"}},
		},
		{
			name: "newlines, a sub-path and a template with commas",
			in:   "searxng:https://searx.example/sub/\n  http:https://search.example/api?q={query}&fields=a,b,c&n={limit}#results=data.items&url=link&image=thumb.src\n",
			want: []Spec{
				{Kind: KindSearXNG, URL: "https://searx.example/sub"},
				{
					Kind:  KindHTTP,
					URL:   "https://search.example/api?q={query}&fields=a,b,c&n={limit}",
					Paths: withDefaults(Paths{Results: "data.items", URL: "link", Image: "thumb.src"}),
				},
			},
		},
		{
			name: "template without fragment takes the defaults",
			in:   "http:https://search.example/{query}",
			want: []Spec{{Kind: KindHTTP, URL: "https://search.example/{query}", Paths: withDefaults(Paths{})}},
		},
		{
			name: "every path key",
			in:   "http:https://s.example/?q={query}#results=.&url=u&title=t&description=d|e&published=p&image=i&width=w&height=h",
			want: []Spec{{Kind: KindHTTP, URL: "https://s.example/?q={query}", Paths: Paths{
				Results: ".", URL: "u", Title: "t", Description: "d|e", Published: "p", Image: "i", Width: "w", Height: "h",
			}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSpecs(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseSpecsInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error
	}{
		{name: "no kind", in: "bing", want: []string{`entry 1 "bing"`, "unknown kind"}},
		{name: "unknown kind", in: "index; brave:https://api.search.brave.com", want: []string{"entry 2", `unknown kind "brave"`}},
		{name: "index with an argument", in: "index:main", want: []string{"takes no argument"}},
		{name: "searxng without scheme", in: "searxng:127.0.0.1:8888", want: []string{"not an absolute http(s) URL"}},
		{name: "searxng over ftp", in: "searxng:ftp://searx.example", want: []string{"not an absolute http(s) URL"}},
		{name: "searxng with a query", in: "searxng:http://127.0.0.1:8888/?format=json", want: []string{"has a query or fragment"}},
		{name: "template without query", in: "http:https://search.example/api?n={limit}", want: []string{"template without {query}"}},
		{name: "kind left out", in: "http://search.example/api?q={query}", want: []string{`write "http:https://`}},
		{name: "relative template", in: "http:/api?q={query}", want: []string{"not an absolute http(s) URL"}},
		{name: "unknown placeholder", in: "http:https://s.example/?q={q}", want: []string{"unknown placeholder {q}"}},
		{name: "unknown path key", in: "http:https://s.example/?q={query}#results=a&link=b", want: []string{`unknown key "link"`}},
		{name: "malformed path", in: "http:https://s.example/?q={query}#url=a..b", want: []string{"keys joined by single dots"}},
		{name: "empty path", in: "http:https://s.example/?q={query}#title=", want: []string{`"title" is empty`}},
		{
			name: "every bad entry is reported",
			in:   "bing;searxng:ftp://x\nindex",
			want: []string{`entry 1 "bing"`, `entry 2 "searxng:ftp://x"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			specs, err := ParseSpecs(tc.in)
			require.Error(t, err)
			require.Nil(t, specs)
			for _, s := range tc.want {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestParseSpecsKeepsSecretsOutOfErrors(t *testing.T) {
	t.Parallel()
	_, err := ParseSpecs("http:https://search.example/api?key=SECRET&n={limit}; searxng:https://admin:hunter2@searx.example/?x=1")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "SECRET")
	require.NotContains(t, err.Error(), "hunter2")
	require.Contains(t, err.Error(), "n={limit}", "placeholders stay readable")
}

func TestSpecString(t *testing.T) {
	t.Parallel()
	specs, err := ParseSpecs("index; searxng:https://admin:hunter2@searx.example; http:https://s.example/api?q={query}&key=SECRET#url=link")
	require.NoError(t, err)
	var got []string
	for _, s := range specs {
		got = append(got, s.String())
	}
	require.Equal(t, []string{
		"index",
		"searxng:https://admin:xxxxx@searx.example",
		"http:https://s.example/api?q={query}&key=xxxxx",
	}, got)
}

func TestNew(t *testing.T) {
	t.Parallel()
	specs, err := ParseSpecs("index; searxng:https://admin:hunter2@searx.example; http:https://s.example/api?q={query}&key=SECRET")
	require.NoError(t, err)

	_, err = New(specs[0], nil)
	require.ErrorContains(t, err, "search package")

	p, err := New(specs[1], http.DefaultClient)
	require.NoError(t, err)
	require.IsType(t, &SearXNG{}, p)
	require.Equal(t, "searxng(https://admin:xxxxx@searx.example)", p.Name())

	p, err = New(specs[2], nil)
	require.NoError(t, err)
	require.IsType(t, &HTTP{}, p)
	require.Equal(t, "http(https://s.example/api)", p.Name())

	_, err = New(Spec{Kind: "brave", URL: "https://api.search.brave.com"}, nil)
	require.ErrorContains(t, err, `unknown provider kind "brave"`)

	_, err = New(Spec{Kind: KindHTTP, URL: "https://s.example/api?n={limit}"}, nil)
	require.ErrorContains(t, err, "template without {query}", "hand-built specs are checked too")
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // RFC 3339 in UTC; "" means not understood
	}{
		{"2024-01-02T03:04:05", "2024-01-02T03:04:05Z"},
		{"2024-01-02T03:04:05.123456", "2024-01-02T03:04:05.123456Z"},
		{"2024-01-02T03:04:05+02:00", "2024-01-02T01:04:05Z"},
		{"2024-01-02T03:04:05.5Z", "2024-01-02T03:04:05.5Z"},
		{"2024-01-02 03:04:05+0000", "2024-01-02T03:04:05Z"},
		{"2024-01-02 03:04:05", "2024-01-02T03:04:05Z"},
		{"2024-01-02", "2024-01-02T00:00:00Z"},
		{"2024", "2024-01-01T00:00:00Z"},
		{"Tue, 02 Jan 2024 03:04:05 GMT", "2024-01-02T03:04:05Z"},
		{"1700000000", "2023-11-14T22:13:20Z"},
		{"1700000000000", "2023-11-14T22:13:20Z"},
		{"3 hour(s), 5 minute(s) ago", ""},
		{"", ""},
		{"42", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, ok := parseTime(tc.in)
			if tc.want == "" {
				require.False(t, ok)
				return
			}
			require.True(t, ok)
			require.Equal(t, tc.want, got.UTC().Format("2006-01-02T15:04:05.999999999Z07:00"))
		})
	}
}
