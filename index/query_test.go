package index

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseQuery(t *testing.T) {
	t.Parallel()
	word := func(s string) Term { return Term{Text: s} }
	phrase := func(s string) Term { return Term{Text: s, Phrase: true} }
	tests := []struct {
		name string
		in   string
		want Query
	}{
		{name: "empty", in: "", want: Query{}},
		{name: "only white space", in: " \t\n ", want: Query{}},
		{name: "words keep their case", in: "Go  Generics", want: Query{Terms: []Term{word("Go"), word("Generics")}}},
		{name: "unicode white space separates", in: "go\u00a0rust\u3000zig", want: Query{Terms: []Term{word("go"), word("rust"), word("zig")}}},
		{name: "hyphen inside a word", in: "e-mail", want: Query{Terms: []Term{word("e-mail")}}},

		{name: "quoted phrase", in: `"exact phrase" go`, want: Query{Terms: []Term{phrase("exact phrase"), word("go")}}},
		{name: "phrase white space collapsed", in: "\"  tab\tand   spaces \"", want: Query{Terms: []Term{phrase("tab and spaces")}}},
		{name: "one-word phrase stays a phrase", in: `"golang"`, want: Query{Terms: []Term{phrase("golang")}}},
		{name: "empty phrases ignored", in: `"" go "  "`, want: Query{Terms: []Term{word("go")}}},
		{name: "unbalanced quote runs to the end", in: `go "generic type parameters`, want: Query{Terms: []Term{word("go"), phrase("generic type parameters")}}},
		{name: "quote inside a word starts a phrase", in: `foo"bar baz" qux`, want: Query{Terms: []Term{word("foo"), phrase("bar baz"), word("qux")}}},

		{name: "negated word", in: "go -java", want: Query{Terms: []Term{word("go")}, Not: []Term{word("java")}}},
		{name: "negated phrase", in: `-"stack overflow" go`, want: Query{Terms: []Term{word("go")}, Not: []Term{phrase("stack overflow")}}},
		{name: "lone dash ignored", in: "rust - go -", want: Query{Terms: []Term{word("rust"), word("go")}}},
		{name: "negated empty phrase ignored", in: `-"" go`, want: Query{Terms: []Term{word("go")}}},

		{name: "site", in: "site:go.dev generics", want: Query{Terms: []Term{word("generics")}, Sites: []string{"go.dev"}}},
		{name: "site lower-cased", in: "site:Docs.Python.ORG", want: Query{Sites: []string{"docs.python.org"}}},
		{name: "site with scheme and path reduced to host", in: "site:https://Docs.Python.org/3/library?x=1", want: Query{Sites: []string{"docs.python.org"}}},
		{name: "site with path reduced to host", in: "site:example.com/blog", want: Query{Sites: []string{"example.com"}}},
		{name: "site with trailing dot", in: "site:example.com.", want: Query{Sites: []string{"example.com"}}},
		{name: "site top-level domain", in: "site:gov", want: Query{Sites: []string{"gov"}}},
		{name: "site IP address", in: "site:127.0.0.1", want: Query{Sites: []string{"127.0.0.1"}}},
		{name: "site internationalised name kept as written", in: "site:Bücher.example", want: Query{Sites: []string{"bücher.example"}}},
		{name: "site quoted", in: `site:"example.com"`, want: Query{Sites: []string{"example.com"}}},
		{name: "negated site", in: "go -site:reddit.com", want: Query{Terms: []Term{word("go")}, NotSites: []string{"reddit.com"}}},

		{name: "filetype lower-cased", in: "report filetype:PDF", want: Query{Terms: []Term{word("report")}, FileTypes: []string{"pdf"}}},
		{name: "filetype leading dot dropped", in: "filetype:.docx", want: Query{FileTypes: []string{"docx"}}},
		{name: "negated filetype", in: "-filetype:pdf -filetype:.PPTX", want: Query{NotFileTypes: []string{"pdf", "pptx"}}},

		{name: "inurl", in: "inurl:Docs go", want: Query{Terms: []Term{word("go")}, InURL: []string{"Docs"}}},
		{name: "inurl value with a colon", in: "inurl:a:b", want: Query{InURL: []string{"a:b"}}},
		{name: "inurl quoted", in: `inurl:"release notes"`, want: Query{InURL: []string{"release notes"}}},
		{name: "negated inurl", in: "-inurl:beta", want: Query{NotInURL: []string{"beta"}}},
		{name: "intitle", in: "intitle:Changelog", want: Query{InTitle: []string{"Changelog"}}},
		{name: "intitle phrase is one string", in: `intitle:"Release Notes" go`, want: Query{Terms: []Term{word("go")}, InTitle: []string{"Release Notes"}}},
		{name: "intitle unbalanced quote", in: `intitle:"release notes`, want: Query{InTitle: []string{"release notes"}}},
		{name: "negated intitle", in: `-intitle:draft -intitle:"work in progress"`, want: Query{NotInTitle: []string{"draft", "work in progress"}}},

		{name: "allinurl with a space", in: "allinurl: api reference", want: Query{InURL: []string{"api", "reference"}}},
		{name: "allinurl without a space", in: "allinurl:api reference", want: Query{InURL: []string{"api", "reference"}}},
		{name: "allinurl after words", in: "go allinurl: api", want: Query{Terms: []Term{word("go")}, InURL: []string{"api"}}},
		{name: "allinurl leaves negations and operators alone", in: "allinurl: api -beta site:go.dev v2",
			want: Query{Not: []Term{word("beta")}, Sites: []string{"go.dev"}, InURL: []string{"api", "v2"}}},
		{name: "negated allinurl", in: "-allinurl: beta draft", want: Query{NotInURL: []string{"beta", "draft"}}},
		{name: "allintitle", in: "allintitle: getting started", want: Query{InTitle: []string{"getting", "started"}}},
		{name: "allintitle takes a phrase whole", in: `allintitle: "getting started" guide`, want: Query{InTitle: []string{"getting started", "guide"}}},
		{name: "allintitle quoted value", in: `allintitle:"getting started" guide`, want: Query{InTitle: []string{"getting started", "guide"}}},
		{name: "negated allintitle", in: "-allintitle: draft wip", want: Query{NotInTitle: []string{"draft", "wip"}}},
		{name: "allintitle then allinurl", in: "allintitle: a b allinurl: c", want: Query{InURL: []string{"c"}, InTitle: []string{"a", "b"}}},
		{name: "allintitle at the end is a word", in: "go allintitle:", want: Query{Terms: []Term{word("go"), word("allintitle:")}}},
		{name: "allinurl with only negations is a word", in: "allinurl: -x", want: Query{Terms: []Term{word("allinurl:")}, Not: []Term{word("x")}}},
		{name: "allintitle takes unknown operators as words", in: "allintitle: foo:bar", want: Query{InTitle: []string{"foo:bar"}}},

		{name: "related", in: "related:Example.com", want: Query{Related: []string{"example.com"}}},
		{name: "related with scheme", in: "related:https://example.com/about", want: Query{Related: []string{"example.com"}}},
		{name: "imagesize", in: "cat imagesize:640x480", want: Query{Terms: []Term{word("cat")}, ImageSize: &Size{Width: 640, Height: 480}}},
		{name: "imagesize upper-case X", in: "imagesize:1920X1080", want: Query{ImageSize: &Size{Width: 1920, Height: 1080}}},
		{name: "imagesize limit", in: "imagesize:100000x1", want: Query{ImageSize: &Size{Width: 100000, Height: 1}}},
		{name: "larger", in: "larger:800x600", want: Query{Larger: &Size{Width: 800, Height: 600}}},
		{name: "imagesize and larger together", in: "larger:10x10 imagesize:20x20", want: Query{ImageSize: &Size{Width: 20, Height: 20}, Larger: &Size{Width: 10, Height: 10}}},

		{name: "operators are case-insensitive", in: `Site:Go.dev FILETYPE:Pdf InTitle:Go inURL:x RELATED:a.b ImageSize:1x2 LARGER:3x4 -SITE:c.d AllInTitle: t`,
			want: Query{
				Sites: []string{"go.dev"}, NotSites: []string{"c.d"}, FileTypes: []string{"pdf"},
				InURL: []string{"x"}, InTitle: []string{"Go", "t"}, Related: []string{"a.b"},
				ImageSize: &Size{Width: 1, Height: 2}, Larger: &Size{Width: 3, Height: 4},
			}},

		{name: "unknown operator is a word", in: "foo:bar go", want: Query{Terms: []Term{word("foo:bar"), word("go")}}},
		{name: "URL is a word", in: "http://example.com/x", want: Query{Terms: []Term{word("http://example.com/x")}}},
		{name: "negated unknown operator", in: "-lang:go", want: Query{Not: []Term{word("lang:go")}}},
		{name: "unknown operator before a phrase", in: `foo:"bar baz"`, want: Query{Terms: []Term{word("foo:"), phrase("bar baz")}}},

		{name: "empty site is a word", in: "golang site:", want: Query{Terms: []Term{word("golang"), word("site:")}}},
		{name: "empty operator keeps its case", in: "Site:", want: Query{Terms: []Term{word("Site:")}}},
		{name: "space after intitle makes it a word", in: "intitle: go", want: Query{Terms: []Term{word("intitle:"), word("go")}}},
		{name: "empty quoted value is a word", in: `inurl:""`, want: Query{Terms: []Term{word("inurl:")}}},
		{name: "negated empty filetype is a negated word", in: "go -filetype:", want: Query{Terms: []Term{word("go")}, Not: []Term{word("filetype:")}}},
		{name: "negated empty imagesize is a negated word", in: "-imagesize: -larger: -related:",
			want: Query{Not: []Term{word("imagesize:"), word("larger:"), word("related:")}}},

		{name: "everything", in: `"machine learning" -"deep learning" tutorial site:arxiv.org -site:medium.com filetype:pdf intitle:survey -inurl:abs`,
			want: Query{
				Terms:     []Term{phrase("machine learning"), word("tutorial")},
				Not:       []Term{phrase("deep learning")},
				Sites:     []string{"arxiv.org"},
				NotSites:  []string{"medium.com"},
				FileTypes: []string{"pdf"},
				InTitle:   []string{"survey"},
				NotInURL:  []string{"abs"},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseQuery(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseQueryErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want OperatorError
	}{
		{name: "imagesize not a size", in: "imagesize:big", want: OperatorError{"imagesize", "big", ruleSize}},
		{name: "imagesize width only", in: "imagesize:640", want: OperatorError{"imagesize", "640", ruleSize}},
		{name: "imagesize no height", in: "imagesize:640x", want: OperatorError{"imagesize", "640x", ruleSize}},
		{name: "imagesize no width", in: "imagesize:x480", want: OperatorError{"imagesize", "x480", ruleSize}},
		{name: "imagesize signed", in: "imagesize:+640x480", want: OperatorError{"imagesize", "+640x480", ruleSize}},
		{name: "imagesize three sides", in: "imagesize:640x480x2", want: OperatorError{"imagesize", "640x480x2", ruleSize}},
		{name: "imagesize decimal", in: "imagesize:640.5x480", want: OperatorError{"imagesize", "640.5x480", ruleSize}},
		{name: "imagesize zero", in: "imagesize:0x480", want: OperatorError{"imagesize", "0x480", ruleSizeRange}},
		{name: "imagesize too large", in: "imagesize:640x100001", want: OperatorError{"imagesize", "640x100001", ruleSizeRange}},
		{name: "imagesize overflowing", in: "imagesize:99999999999999999999999x1", want: OperatorError{"imagesize", "99999999999999999999999x1", ruleSizeRange}},
		{name: "imagesize twice", in: "imagesize:640x480 imagesize:800x600", want: OperatorError{"imagesize", "800x600", ruleOnlyOnce}},
		{name: "larger width only", in: "larger:800", want: OperatorError{"larger", "800", ruleSize}},
		{name: "larger zero", in: "larger:0x0", want: OperatorError{"larger", "0x0", ruleSizeRange}},
		{name: "larger twice", in: "larger:1x1 larger:2x2", want: OperatorError{"larger", "2x2", ruleOnlyOnce}},

		{name: "negated imagesize", in: "cat -imagesize:640x480", want: OperatorError{"imagesize", "640x480", ruleNotNegated}},
		{name: "negated larger", in: "-larger:800x600", want: OperatorError{"larger", "800x600", ruleNotNegated}},
		{name: "negated related", in: "-related:example.com", want: OperatorError{"related", "example.com", ruleNotNegated}},
		{name: "negated malformed imagesize reports the negation", in: "-imagesize:big", want: OperatorError{"imagesize", "big", ruleNotNegated}},
		{name: "negated operator name in capitals", in: "-LARGER:1x1", want: OperatorError{"larger", "1x1", ruleNotNegated}},

		{name: "site with port", in: "site:example.com:8080", want: OperatorError{"site", "example.com:8080", ruleHost}},
		{name: "site URL with port", in: "site:https://example.com:8443/x", want: OperatorError{"site", "https://example.com:8443/x", ruleHost}},
		{name: "site underscore", in: "site:exa_mple.com", want: OperatorError{"site", "exa_mple.com", ruleHost}},
		{name: "site label starts with hyphen", in: "site:-example.com", want: OperatorError{"site", "-example.com", ruleHost}},
		{name: "site label ends with hyphen", in: "site:example-.com", want: OperatorError{"site", "example-.com", ruleHost}},
		{name: "site empty label", in: "site:example..com", want: OperatorError{"site", "example..com", ruleHost}},
		{name: "site leading dot", in: "site:.com", want: OperatorError{"site", ".com", ruleHost}},
		{name: "site scheme only", in: "site:https://", want: OperatorError{"site", "https://", ruleHost}},
		{name: "site with user", in: "site:user@example.com", want: OperatorError{"site", "user@example.com", ruleHost}},
		{name: "site wildcard", in: "site:*.example.com", want: OperatorError{"site", "*.example.com", ruleHost}},
		{name: "site IPv6 literal", in: "site:[::1]", want: OperatorError{"site", "[::1]", ruleHost}},
		{name: "site quoted with a space", in: `site:"example com"`, want: OperatorError{"site", "example com", ruleHost}},
		{name: "site label too long", in: "site:" + longLabel + ".com", want: OperatorError{"site", longLabel + ".com", ruleHost}},
		{name: "negated site malformed", in: "-site:bad_host", want: OperatorError{"site", "bad_host", ruleHost}},
		{name: "related malformed", in: "related:not_a_host", want: OperatorError{"related", "not_a_host", ruleHost}},

		{name: "filetype with a dot inside", in: "filetype:tar.gz", want: OperatorError{"filetype", "tar.gz", ruleFileType}},
		{name: "filetype too long", in: "filetype:verylongextension", want: OperatorError{"filetype", "verylongextension", ruleFileType}},
		{name: "filetype punctuation", in: "filetype:p-d-f", want: OperatorError{"filetype", "p-d-f", ruleFileType}},
		{name: "filetype only a dot", in: "filetype:.", want: OperatorError{"filetype", ".", ruleFileType}},
		{name: "filetype non-ASCII", in: "filetype:pdfé", want: OperatorError{"filetype", "pdfé", ruleFileType}},
		{name: "negated filetype malformed", in: "-filetype:tar.gz", want: OperatorError{"filetype", "tar.gz", ruleFileType}},

		{name: "error after valid operators", in: "go site:go.dev filetype:pdf imagesize:big", want: OperatorError{"imagesize", "big", ruleSize}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseQuery(tc.in)
			var oe *OperatorError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, tc.want, *oe)
			require.Zero(t, got)
		})
	}
}

// longLabel is one character longer than a host name label may be.
var longLabel = strings.Repeat("a", 64)

func TestParseQueryErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{in: "imagesize:big", want: `imagesize: "big" must be WIDTHxHEIGHT in pixels, for example 640x480`},
		{in: "larger:0x10", want: `larger: "0x10" must have a width and a height from 1 to 100000 pixels`},
		{in: "-related:example.com", want: `related: "example.com" cannot be negated with -`},
		{in: "site:example.com:8080", want: `site: "example.com:8080" must be a host name such as example.com (letters, digits, hyphens and dots, no port)`},
		{in: "filetype:tar.gz", want: `filetype: "tar.gz" must be a file extension of 1 to 10 letters or digits, such as pdf`},
		{in: "imagesize:1x1 imagesize:2x2", want: `imagesize: "2x2" may appear only once in a query`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			_, err := ParseQuery(tc.in)
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestParseQueryEmpty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{in: "", want: true},
		{in: `""`, want: true},
		{in: "-go", want: true},
		{in: `-"deep learning" -site:x.com -filetype:pdf -inurl:a -intitle:b -allinurl: c`, want: true},
		{in: "go", want: false},
		{in: `"a phrase"`, want: false},
		{in: "site:x.com", want: false},
		{in: "filetype:pdf", want: false},
		{in: "inurl:a", want: false},
		{in: "allintitle: a", want: false},
		{in: "related:x.com", want: false},
		{in: "imagesize:1x1", want: false},
		{in: "larger:1x1", want: false},
		{in: "site:", want: false}, // searched as the word "site:"
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			q, err := ParseQuery(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, q.Empty())
		})
	}
}

func TestParseQueryWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{in: "", want: nil},
		{in: "-go site:x.com intitle:t", want: nil},
		{in: `"Exact Phrase" go -java site:x.com intitle:title rust`, want: []string{"Exact Phrase", "go", "rust"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			q, err := ParseQuery(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, q.Words())
		})
	}
}
