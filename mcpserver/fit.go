package mcpserver

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// fit returns answer, a JSON document, within limit bytes, still JSON: a
// longer one has its long strings cut (each marked with how much was cut)
// and, if that is not enough, its long arrays, with a note at its top that
// says so and how to get the rest. An LLM reading a tool's result is
// better served by a valid, marked, partial document than by one cut
// mid-JSON. No library does this.
func fit(answer []byte, limit int) []byte {
	if len(answer) <= limit {
		return answer
	}
	var doc any
	if json.Unmarshal(answer, &doc) != nil {
		// Not JSON (no API answer is): a JSON string of its start.
		out, _ := json.Marshal(cutString(string(answer), limit/2))
		return out
	}
	note := fmt.Sprintf("this answer was %d bytes, over the tool's limit of %d: long strings and lists are cut where marked; "+
		"page job results with skip and limit, or ask for fewer formats or pages", len(answer), limit)
	for _, items := range []int{-1, 64, 16, 4, 1, 0} {
		for chars := limit / 2; chars >= 100; chars /= 2 {
			cut := trim(doc, chars, items)
			if m, ok := cut.(map[string]any); ok {
				m["truncated"] = note
			}
			if out, err := json.Marshal(cut); err == nil && len(out) <= limit {
				return out
			}
		}
	}
	out, _ := json.Marshal(map[string]any{"truncated": note})
	return out
}

// trim copies v with every string cut to chars characters and, when items
// is 0 or more, every array to items elements.
func trim(v any, chars, items int) any {
	switch x := v.(type) {
	case string:
		return cutString(x, chars)
	case []any:
		n := len(x)
		if items >= 0 && n > items {
			n = items
		}
		out := make([]any, 0, n+1)
		for _, e := range x[:n] {
			out = append(out, trim(e, chars, items))
		}
		if n < len(x) {
			out = append(out, fmt.Sprintf("…[%d more items cut]", len(x)-n))
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = trim(e, chars, items)
		}
		return out
	}
	return v
}

// cutString cuts s to n characters, on a character boundary, marked.
func cutString(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n {
			break
		}
		count++
	}
	return s[:i] + fmt.Sprintf("…[%d more characters cut]", utf8.RuneCountInString(s[i:]))
}
