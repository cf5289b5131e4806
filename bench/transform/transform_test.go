package transform

import "testing"

func TestMeasure(t *testing.T) {
	pages := [][]byte{
		[]byte(`<html><body><nav>Menu</nav><main><h1>Title</h1><p>Some text.</p></main></body></html>`),
		[]byte(`<p>A <a href="/x">link</a> and a table:</p><table><tr><td>a</td><td>b</td></tr></table>`),
	}
	mbps, ratio, err := Measure(pages)
	if err != nil {
		t.Fatal(err)
	}
	if mbps <= 0 || ratio <= 0 {
		t.Errorf("Measure = %v MiB/s, ratio %v; want both positive", mbps, ratio)
	}
}
