package rawjson

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMember(t *testing.T) {
	obj := []byte(` { "a" : "x\"}\\" , "big": "` + strings.Repeat(`ab\"c\\`, 1000) + `", "nested": {"result": [1, {"b": "]}"}], "k\"\\": 2},` +
		`"esc\u0061ped": true, "n": -1.5e3, "last": null } `)
	require.True(t, json.Valid(obj))
	for key, want := range map[string]string{
		"a":       `"x\"}\\"`,
		"nested":  `{"result": [1, {"b": "]}"}], "k\"\\": 2}`,
		"escaped": `true`,
		"n":       `-1.5e3`,
		"last":    `null`,
	} {
		assert.Equal(t, want, string(Member(obj, key)), "member %s", key)
	}
	assert.Nil(t, Member(obj, "missing"))
	assert.Nil(t, Member([]byte(`[1, 2]`), "a"), "an array")
	assert.Nil(t, Member([]byte(`{"a": "unterminated`), "a"))
	assert.Equal(t, `[1, {"b": "]}"}]`, string(Member(Member(obj, "nested"), "result")))

	end, err := EachMember(obj, func(k, v []byte) bool { return true })
	require.NoError(t, err)
	assert.Equal(t, len(obj)-1, end, "just past the object")

	var elems []string
	require.NoError(t, EachElement([]byte(` [ {"a": [1]} , "s,]" ,3 ] `), func(v []byte) error {
		elems = append(elems, string(v))
		return nil
	}))
	assert.Equal(t, []string{`{"a": [1]}`, `"s,]"`, `3`}, elems)
}

// TestSkipValue checks where values end, and that a value cut short is refused.
func TestSkipValue(t *testing.T) {
	for v, rest := range map[string]string{
		`"a\"b\\"`:                    `,`,
		`"\\\\"`:                      `]`,
		`{"a":[1,{"b":"}]"}],"c":{}}`: ` `,
		`[]`:                          `}`,
		`-1.5e3`:                      `,`,
		`true`:                        ``,
	} {
		end, err := SkipValue([]byte(v+rest), 0)
		require.NoError(t, err, v)
		assert.Equal(t, len(v), end, v)
	}
	for _, bad := range []string{``, `,`, `"`, `"a\"`, `"a\`, `"a\\\"`, `{"a":"}`, `[1,[2]`, `{"a":"\`} {
		_, err := SkipValue([]byte(bad), 0)
		assert.ErrorIs(t, err, ErrSyntax, "%q", bad)
	}
}

// TestUnquote checks Unquote against encoding/json on strings of every kind, as the browser and
// encoding/json escape them.
func TestUnquote(t *testing.T) {
	cases := []string{
		``, `plain`, `quote " backslash \ slash / controls ` + "\b\f\n\r\t\x00\x1f",
		`héllo wörld ✓ 日本語 🎉`, `<script>&amp;</script>`, "\u2028\u2029",
		strings.Repeat(`{"k":"v\"w"}`, 5000),
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		u := make([]uint16, rnd.IntN(40))
		for i := range u {
			u[i] = uint16(rnd.IntN(0x10000))
		}
		cases = append(cases, string(utf16.Decode(u)))
	}
	for _, c := range cases {
		raw, err := json.Marshal(c)
		require.NoError(t, err)
		got, err := Unquote(raw)
		require.NoError(t, err, "%q", raw)
		assert.Equal(t, c, string(got), "decoding %q", raw)
	}
	// Escapes that encoding/json does not write but browsers do, and surrogates paired or not.
	for raw, want := range map[string]string{
		`"\u00e9\u65e5\ud83c\udf89"`: "é日🎉",
		`"a\ud800b"`:                 "a\ufffdb",
		`"\udc00\ud800"`:             "\ufffd\ufffd",
		`"\ud800\u0041"`:             "\ufffdA",
		`"\/\"\\"`:                   `/"\`,
	} {
		got, err := Unquote([]byte(raw))
		require.NoError(t, err, raw)
		var std string
		require.NoError(t, json.Unmarshal([]byte(raw), &std))
		assert.Equal(t, want, string(got), raw)
		assert.Equal(t, std, string(got), "%s as encoding/json reads it", raw)
	}
	for _, bad := range []string{``, `"`, `"\"`, `"\x"`, `"\u12"`, `"\u12g4"`, `abc`} {
		_, err := Unquote([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}
