package parse

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Word and LibreOffice always write a styles part, but other producers
// (a document Apache POI creates from scratch, hand-rolled exporters) leave
// it out, or write one that defines only the styles they changed, and still
// name Word's built-in styles (Heading1, Title, ListParagraph) or
// LibreOffice's (Heading_20_1, Title) in their paragraphs. LibreOffice cannot write such
// files, so the fixtures below are built here: one document as a DOCX
// without styles.xml, the same as an ODT without styles.xml, and a DOCX
// whose styles.xml defines none of the heading styles its paragraphs name.
// They are stored, not deflated, so that the bytes do not depend on the Go
// version and the XML can be read with unzip -p. -update rewrites the
// fixtures and their copies in the fuzz corpus along with the goldens.

// builtinFixtures are the fixtures built here, by file name.
var builtinFixtures = []struct {
	name string
	// fuzz is the fuzz target whose corpus holds a copy.
	fuzz  string
	build func(testing.TB) []byte
}{
	{"office-nostyles.docx", "FuzzDOCX", func(t testing.TB) []byte { return bareDOCX(t, false) }},
	{"office-undefined-headings.docx", "FuzzDOCX", func(t testing.TB) []byte { return bareDOCX(t, true) }},
	{"office-nostyles.odt", "FuzzODT", bareODT},
}

// storedZip builds a zip archive of name, content pairs in order, stored
// and without times, so that the same parts always give the same bytes.
func storedZip(t testing.TB, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i+1 < len(files); i += 2 {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: files[i], Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// bareBody is the document both DOCX fixtures hold: a Title, headings 1-3
// by their built-in style ids, a bold run, a numbered ListParagraph list
// with a bulleted second level, a ListParagraph without numbering (body
// text, as in Word) and a table. Subtitle is no heading in Word's outline,
// nor here.
const bareBody = `<w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>Harbour Works Schedule</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="Subtitle"/></w:pPr><w:r><w:t>Spring programme</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Overview</w:t></w:r></w:p>` +
	`<w:p><w:r><w:t xml:space="preserve">The north pier is repainted in May; the </w:t></w:r>` +
	`<w:r><w:rPr><w:b/></w:rPr><w:t>south pier</w:t></w:r><w:r><w:t xml:space="preserve"> waits for the survey.</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Crews</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Scrape the old paint</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Prime the steel</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>two coats on the rails</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Paint</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="ListParagraph"/></w:pPr><w:r><w:t>Crews work from the east end.</w:t></w:r></w:p>` +
	`<w:p><w:pPr><w:pStyle w:val="Heading3"/></w:pPr><w:r><w:t>Dates</w:t></w:r></w:p>` +
	`<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/><w:tblW w:w="0" w:type="auto"/></w:tblPr><w:tblGrid><w:gridCol w:w="2000"/><w:gridCol w:w="4000"/></w:tblGrid>` +
	`<w:tr><w:tc><w:p><w:r><w:t>Week</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Work</w:t></w:r></w:p></w:tc></w:tr>` +
	`<w:tr><w:tc><w:p><w:r><w:t>19</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Scraping</w:t></w:r></w:p></w:tc></w:tr>` +
	`<w:tr><w:tc><w:p><w:r><w:t>20</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Priming and painting</w:t></w:r></w:p></w:tc></w:tr></w:tbl>` +
	`<w:p><w:pPr><w:pStyle w:val="Normal"/></w:pPr><w:r><w:t>Work stops for the regatta.</w:t></w:r></w:p>` +
	`<w:sectPr><w:pgSz w:w="11906" w:h="16838"/></w:sectPr>`

// bareNumbering numbers the first level and bullets the second.
const bareNumbering = `<w:abstractNum w:abstractNumId="0">` +
	`<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>` +
	`<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="•"/></w:lvl></w:abstractNum>` +
	`<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>`

// bareStyles defines what a producer that writes only the styles it uses
// would: defaults, Normal and a table style, but none of the headings,
// Title or ListParagraph.
const bareStyles = `<w:docDefaults><w:rPrDefault><w:rPr><w:sz w:val="22"/></w:rPr></w:rPrDefault></w:docDefaults>` +
	`<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:qFormat/></w:style>` +
	`<w:style w:type="table" w:styleId="TableGrid"><w:name w:val="Table Grid"/><w:basedOn w:val="TableNormal"/></w:style>`

// bareDOCX is the document as a DOCX with document.xml and numbering.xml
// and, when styles is set, a styles.xml of bareStyles.
func bareDOCX(t testing.TB, styles bool) []byte {
	const ns = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" ` +
		`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	const wordML = "application/vnd.openxmlformats-officedocument.wordprocessingml."
	const rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
	types := `<Override PartName="/word/document.xml" ContentType="` + wordML + `document.main+xml"/>` +
		`<Override PartName="/word/numbering.xml" ContentType="` + wordML + `numbering+xml"/>`
	rels := `<Relationship Id="rId1" Type="` + rel + `numbering" Target="numbering.xml"/>`
	var parts []string
	if styles {
		types += `<Override PartName="/word/styles.xml" ContentType="` + wordML + `styles+xml"/>`
		rels += `<Relationship Id="rId2" Type="` + rel + `styles" Target="styles.xml"/>`
		parts = []string{"word/styles.xml", xmlDecl + `<w:styles ` + ns + `>` + bareStyles + `</w:styles>`}
	}
	return storedZip(t, append([]string{
		"[Content_Types].xml", xmlDecl + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` + types + `</Types>`,
		"_rels/.rels", xmlDecl + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="` + rel + `officeDocument" Target="word/document.xml"/></Relationships>`,
		"word/_rels/document.xml.rels", xmlDecl + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels + `</Relationships>`,
		"word/document.xml", xmlDecl + `<w:document ` + ns + `><w:body>` + bareBody + `</w:body></w:document>`,
		"word/numbering.xml", xmlDecl + `<w:numbering ` + ns + `>` + bareNumbering + `</w:numbering>`,
	}, parts...)...)
}

const xmlDecl = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"

// bareODT is the document as an ODT with content.xml and a manifest only.
// Its headings come each way a producer may write them: text:h with an
// outline level, text:p with a built-in style name, and text:p with an
// automatic style whose parent is a built-in heading style.
func bareODT(t testing.TB) []byte {
	const content = `<office:document-content ` + odtNamespaces + ` office:version="1.3">` +
		`<office:automatic-styles>` +
		`<style:style style:name="P1" style:family="paragraph" style:parent-style-name="Heading_20_3"><style:paragraph-properties fo:margin-top="0.2in"/></style:style>` +
		`<style:style style:name="T1" style:family="text"><style:text-properties fo:font-weight="bold"/></style:style>` +
		`<text:list-style style:name="L1">` +
		`<text:list-level-style-number text:level="1" style:num-suffix="." style:num-format="1"/>` +
		`<text:list-level-style-bullet text:level="2" text:bullet-char="•"/></text:list-style>` +
		`</office:automatic-styles><office:body><office:text>` +
		`<text:p text:style-name="Title">Harbour Works Schedule</text:p>` +
		`<text:p text:style-name="Subtitle">Spring programme</text:p>` +
		`<text:h text:style-name="Heading_20_1" text:outline-level="1">Overview</text:h>` +
		`<text:p text:style-name="Text_20_body">The north pier is repainted in May; the <text:span text:style-name="T1">south pier</text:span> waits for the survey.</text:p>` +
		`<text:p text:style-name="Heading_20_2">Crews</text:p>` +
		`<text:list text:style-name="L1">` +
		`<text:list-item><text:p text:style-name="List_20_Paragraph">Scrape the old paint</text:p></text:list-item>` +
		`<text:list-item><text:p text:style-name="List_20_Paragraph">Prime the steel</text:p>` +
		`<text:list><text:list-item><text:p text:style-name="List_20_Paragraph">two coats on the rails</text:p></text:list-item></text:list></text:list-item>` +
		`<text:list-item><text:p text:style-name="List_20_Paragraph">Paint</text:p></text:list-item></text:list>` +
		`<text:p text:style-name="List_20_Paragraph">Crews work from the east end.</text:p>` +
		`<text:p text:style-name="P1">Dates</text:p>` +
		`<table:table table:name="Dates"><table:table-column table:number-columns-repeated="2"/>` +
		`<table:table-row><table:table-cell><text:p>Week</text:p></table:table-cell><table:table-cell><text:p>Work</text:p></table:table-cell></table:table-row>` +
		`<table:table-row><table:table-cell><text:p>19</text:p></table:table-cell><table:table-cell><text:p>Scraping</text:p></table:table-cell></table:table-row>` +
		`<table:table-row><table:table-cell><text:p>20</text:p></table:table-cell><table:table-cell><text:p>Priming and painting</text:p></table:table-cell></table:table-row></table:table>` +
		`<text:p text:style-name="Standard">Work stops for the regatta.</text:p>` +
		`</office:text></office:body></office:document-content>`
	const odtType = "application/vnd.oasis.opendocument.text"
	return storedZip(t,
		"mimetype", odtType,
		"META-INF/manifest.xml", xmlDecl+`<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">`+
			`<manifest:file-entry manifest:full-path="/" manifest:media-type="`+odtType+`"/>`+
			`<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>`,
		"content.xml", xmlDecl+content,
	)
}

// goldenBytes compares data with the file at path, or writes it there
// with -update.
func goldenBytes(t *testing.T, path string, data []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./parse -run TestOfficeBuiltinStyles -update)", err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("%s is stale: run go test ./parse -run TestOfficeBuiltinStyles -update", path)
	}
}

// TestOfficeBuiltinStyles reads the fixtures built above against their
// goldens: the headings, the list and the table survive the missing
// styles, and the DOCX and the ODT read the same.
func TestOfficeBuiltinStyles(t *testing.T) {
	t.Parallel()
	markdown := map[string]string{}
	for _, fx := range builtinFixtures {
		data := fx.build(t)
		goldenBytes(t, filepath.Join("testdata", fx.name), data)
		goldenBytes(t, filepath.Join("testdata", "fuzz", fx.fuzz, strings.TrimSuffix(fx.name, filepath.Ext(fx.name))),
			fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data))
		doc := readOfficeFixture(t, fx.name)
		if doc.Title != "" || doc.Author != "" || doc.Pages != 0 {
			t.Errorf("%s: metadata = %q, %q, %d pages; the fixture has none", fx.name, doc.Title, doc.Author, doc.Pages)
		}
		if len(doc.Warnings) > 0 {
			t.Errorf("%s: warnings: %q", fx.name, doc.Warnings)
		}
		golden(t, fx.name+".md", doc.Markdown)
		markdown[fx.name] = doc.Markdown
	}
	for _, name := range []string{"office-undefined-headings.docx", "office-nostyles.odt"} {
		if markdown[name] != markdown["office-nostyles.docx"] {
			t.Errorf("%s reads differently from office-nostyles.docx:\n%s\n--- office-nostyles.docx ---\n%s", name, markdown[name], markdown["office-nostyles.docx"])
		}
	}
}

// TestDOCXBuiltinStyles reads one paragraph per case: the spellings of the
// built-in ids when styles.xml does not define them, and defined styles,
// which keep what their definitions say.
func TestDOCXBuiltinStyles(t *testing.T) {
	t.Parallel()
	numbering := `<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>`
	tests := []struct {
		name, styles, pPr, want string
	}{
		{"Heading1", "", `<w:pStyle w:val="Heading1"/>`, "# x"},
		{"lower case", "", `<w:pStyle w:val="heading2"/>`, "## x"},
		{"the name as id", "", `<w:pStyle w:val="Heading 3"/>`, "### x"},
		{"upper case name", "", `<w:pStyle w:val="HEADING 4"/>`, "#### x"},
		{"Heading9 at the deepest level", "", `<w:pStyle w:val="Heading9"/>`, "###### x"},
		{"no built-in Heading10", "", `<w:pStyle w:val="Heading10"/>`, "x"},
		{"no built-in Heading0", "", `<w:pStyle w:val="Heading0"/>`, "x"},
		{"Title", "", `<w:pStyle w:val="title"/>`, "# x"},
		{"Subtitle", "", `<w:pStyle w:val="Subtitle"/>`, "x"},
		{"ListParagraph without numbering", "", `<w:pStyle w:val="ListParagraph"/>`, "x"},
		{"ListParagraph with numbering", "", `<w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>`, "1. x"},
		{"direct body-text outline level", "", `<w:pStyle w:val="Heading1"/><w:outlineLvl w:val="9"/>`, "x"},
		{"direct outline level", "", `<w:pStyle w:val="Title"/><w:outlineLvl w:val="2"/>`, "### x"},
		{"a defined style based on an undefined built-in", `<w:style w:type="paragraph" w:styleId="Chapter"><w:name w:val="Chapter"/><w:basedOn w:val="Heading2"/></w:style>`,
			`<w:pStyle w:val="Chapter"/>`, "## x"},
		{"a defined Heading1 without outline level, by its id as before", `<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="Body Copy"/></w:style>`,
			`<w:pStyle w:val="Heading1"/>`, "# x"},
		{"a defined Heading1 at body-text level", `<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:outlineLvl w:val="9"/></w:pPr></w:style>`,
			`<w:pStyle w:val="Heading1"/>`, "x"},
		{"a defined Heading2 at outline level 1", `<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>`,
			`<w:pStyle w:val="Heading2"/>`, "# x"},
		{"a defined style that is no heading", `<w:style w:type="paragraph" w:styleId="Quote"><w:name w:val="Quote"/></w:style>`,
			`<w:pStyle w:val="Quote"/>`, "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := DOCX(context.Background(), testDOCX(t, "<w:p><w:pPr>"+tc.pPr+"</w:pPr>"+wRun("x")+"</w:p>", tc.styles, numbering))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(doc.Markdown); got != tc.want {
				t.Errorf("Markdown = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestODTBuiltinStyles reads one paragraph per case in a document without
// styles.xml: LibreOffice's built-in style names on text:p, directly or as
// the parent of an automatic style, and styles the document defines.
func TestODTBuiltinStyles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, styles, para, want string
	}{
		{"Heading_20_1", "", `<text:p text:style-name="Heading_20_1">x</text:p>`, "# x"},
		{"Heading_20_10", "", `<text:p text:style-name="Heading_20_10">x</text:p>`, "###### x"},
		{"no built-in Heading_20_11", "", `<text:p text:style-name="Heading_20_11">x</text:p>`, "x"},
		{"the base Heading style", "", `<text:p text:style-name="Heading">x</text:p>`, "x"},
		{"Title", "", `<text:p text:style-name="Title">x</text:p>`, "# x"},
		{"an automatic style of a built-in heading", `<style:style style:name="P1" style:family="paragraph" style:parent-style-name="Heading_20_2"/>`,
			`<text:p text:style-name="P1">x</text:p>`, "## x"},
		{"a defined heading style", `<style:style style:name="Heading_20_1" style:family="paragraph" style:display-name="Heading 1"/>`,
			`<text:p text:style-name="Heading_20_1">x</text:p>`, "x"},
		{"a defined Title", `<style:style style:name="P2" style:family="paragraph" style:display-name="Title"/>`,
			`<text:p text:style-name="P2">x</text:p>`, "# x"},
		{"text:h with its outline level", "", `<text:h text:style-name="Heading_20_2" text:outline-level="3">x</text:h>`, "### x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := ODT(context.Background(), testODT(t, tc.styles, tc.para))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(doc.Markdown); got != tc.want {
				t.Errorf("Markdown = %q, want %q", got, tc.want)
			}
		})
	}
}
