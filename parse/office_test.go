package parse

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The fixtures office-rich and office-simple are built from
// testdata/src/office-*.fodt by build-office-text.sh, each as DOCX and ODT.

// TestOfficeGolden reads each fixture and compares its Markdown (and for
// the rich one its HTML) with testdata/NAME.docx.md, NAME.odt.md and so on.
func TestOfficeGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		html          bool
		title, author string
		pages         int
	}{
		// Every feature: headings 1-3 and a Title paragraph, bold and
		// italic runs, a line break, a link, a three-level bulleted list,
		// a numbered list starting at 3, a table with a column-spanning
		// header and a row-spanning cell, a table with a list in a cell,
		// two footnotes, an endnote and an image. The author is the
		// initial creator (dc:creator in DOCX), not the last editor.
		{name: "office-rich", html: true, title: "Harbour Survey Notes", author: "Ines Abara", pages: 2},
		{name: "office-simple", title: "Meeting Minutes", pages: 1},
	}
	for _, tc := range tests {
		for _, format := range []string{"docx", "odt"} {
			t.Run(tc.name+"."+format, func(t *testing.T) {
				t.Parallel()
				doc := readOfficeFixture(t, tc.name+"."+format)
				if doc.Title != tc.title || doc.Author != tc.author || doc.Pages != tc.pages {
					t.Errorf("metadata = %q, %q, %d pages; want %q, %q, %d", doc.Title, doc.Author, doc.Pages, tc.title, tc.author, tc.pages)
				}
				if len(doc.Warnings) > 0 {
					t.Errorf("warnings: %q", doc.Warnings)
				}
				golden(t, tc.name+"."+format+".md", doc.Markdown)
				if tc.html {
					golden(t, tc.name+"."+format+".html", doc.HTML)
				}
			})
		}
	}
}

func readOfficeFixture(t testing.TB, name string) *Document {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	read := DOCX
	if strings.HasSuffix(name, ".odt") || strings.HasSuffix(name, ".fodt") {
		read = ODT
	}
	doc, err := read(context.Background(), data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

var officeImageRef = regexp.MustCompile(`(!\[[^\]]*\]\()[^)]*\)|(<img src=")[^"]*"`)

// TestOfficeDOCXMatchesODT checks that the DOCX and the ODT made from one
// source read the same. The one difference the formats force is the
// image's path inside the package (word/media/image1.png against
// Pictures/<hash>.png), which is blanked before comparing.
func TestOfficeDOCXMatchesODT(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"office-rich", "office-simple"} {
		d, o := readOfficeFixture(t, name+".docx"), readOfficeFixture(t, name+".odt")
		norm := func(s string) string { return officeImageRef.ReplaceAllString(s, "$1$2IMAGE") }
		if norm(d.Markdown) != norm(o.Markdown) {
			t.Errorf("%s: Markdown differs:\n--- docx ---\n%s\n--- odt ---\n%s", name, d.Markdown, o.Markdown)
		}
		if norm(d.HTML) != norm(o.HTML) {
			t.Errorf("%s: HTML differs:\n--- docx ---\n%s\n--- odt ---\n%s", name, d.HTML, o.HTML)
		}
		if d.Title != o.Title || d.Author != o.Author || d.Pages != o.Pages {
			t.Errorf("%s: metadata differs: %q %q %d against %q %q %d", name, d.Title, d.Author, d.Pages, o.Title, o.Author, o.Pages)
		}
	}
	// The flat source itself reads the same too, but for the image, which
	// it holds as inline data with no path.
	flat, odt := readOfficeFixture(t, "src/office-rich.fodt"), readOfficeFixture(t, "office-rich.odt")
	strip := regexp.MustCompile(` ?!\[[^\]]*\]\([^)]*\)`)
	if a, b := strip.ReplaceAllString(flat.Markdown, ""), strip.ReplaceAllString(odt.Markdown, ""); a != b {
		t.Errorf("flat ODT differs:\n%s\n--- odt ---\n%s", a, b)
	}
}

// officeZip builds a zip archive of name, content pairs in order.
func officeZip(t testing.TB, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i+1 < len(files); i += 2 {
		w, err := zw.Create(files[i])
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, files[i+1])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// officeRezip copies a zip archive, passing each member through edit.
func officeRezip(t testing.TB, data []byte, edit func(name string, b []byte) []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f.Name, string(edit(f.Name, b)))
	}
	return officeZip(t, files...)
}

const docxNamespaces = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" ` +
	`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" ` +
	`xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" ` +
	`xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" ` +
	`xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" ` +
	`xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" ` +
	`xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math" ` +
	`xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office"`

// testDOCX is a package with the given body (the inside of w:body) and
// optional styles.xml and numbering.xml contents (the inside of their root).
func testDOCX(t testing.TB, body, styles, numbering string) []byte {
	t.Helper()
	return officeZip(t,
		"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`,
		"_rels/.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
		"word/_rels/document.xml.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+
			`<Relationship Id="rIdLink" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.com/page" TargetMode="External"/>`+
			`<Relationship Id="rIdImg" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/old.gif"/></Relationships>`,
		"word/document.xml", `<?xml version="1.0"?><w:document `+docxNamespaces+`><w:body>`+body+`</w:body></w:document>`,
		"word/styles.xml", `<?xml version="1.0"?><w:styles `+docxNamespaces+`>`+styles+`</w:styles>`,
		"word/numbering.xml", `<?xml version="1.0"?><w:numbering `+docxNamespaces+`>`+numbering+`</w:numbering>`,
	)
}

func wRun(text string) string {
	return `<w:r><w:t xml:space="preserve">` + text + `</w:t></w:r>`
}

func wPara(runs ...string) string { return "<w:p>" + strings.Join(runs, "") + "</w:p>" }

func wListPara(numID, ilvl int, text string) string {
	return fmt.Sprintf(`<w:p><w:pPr><w:numPr><w:ilvl w:val="%d"/><w:numId w:val="%d"/></w:numPr></w:pPr>%s</w:p>`, ilvl, numID, wRun(text))
}

func wCell(props, text string) string {
	return "<w:tc><w:tcPr>" + props + "</w:tcPr>" + wPara(wRun(text)) + "</w:tc>"
}

// TestDOCXConstructs reads what LibreOffice does not write but Word and
// other producers do: headings by outline level through a base style and
// by a lower-case style name, tracked changes, hidden text, HYPERLINK
// fields simple and complex, anchors, text boxes with their fallback,
// character styles, numbering that continues across an interruption and
// restarts through a start override, a skipped list level, gridBefore,
// vertical merges with and without a start, VML images and math.
func TestDOCXConstructs(t *testing.T) {
	t.Parallel()
	styles := `<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Outline2"><w:name w:val="Outline Two"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr><w:rPr><w:b/></w:rPr></w:style>` +
		`<w:style w:type="paragraph" w:styleId="MyHead"><w:name w:val="My Head"/><w:basedOn w:val="Outline2"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="h3"><w:name w:val="heading 3"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Loop1"><w:name w:val="Loop"/><w:basedOn w:val="Loop2"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Loop2"><w:name w:val="Loop"/><w:basedOn w:val="Loop1"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Quote"><w:name w:val="Quote"/><w:rPr><w:i/></w:rPr></w:style>` +
		`<w:style w:type="character" w:styleId="Strong"><w:name w:val="Strong"/><w:rPr><w:b/></w:rPr></w:style>`
	numbering := `<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/></w:lvl>` +
		`<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="bullet"/></w:lvl><w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>` +
		`<w:num w:numId="7"><w:abstractNumId w:val="1"/></w:num>` +
		`<w:num w:numId="8"><w:abstractNumId w:val="1"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="10"/></w:lvlOverride></w:num>`
	body := `<w:p><w:pPr><w:pStyle w:val="MyHead"/></w:pPr>` + wRun("Custom heading") + `</w:p>` +
		`<w:p><w:pPr><w:pStyle w:val="h3"/></w:pPr>` + wRun("Named heading") + `</w:p>` +
		`<w:p><w:pPr><w:pStyle w:val="Loop1"/></w:pPr>` + wRun("Styles based on each other") + `</w:p>` +
		`<w:p><w:pPr><w:pStyle w:val="Quote"/></w:pPr>` + wRun("Quoted") + `</w:p>` +
		wPara(wRun("Kept "), `<w:del><w:r><w:delText>deleted </w:delText></w:r></w:del>`,
			`<w:ins>`+wRun("inserted")+`</w:ins>`, `<w:r><w:tab/><w:t>after a tab</w:t></w:r>`,
			`<w:r><w:rPr><w:vanish/></w:rPr><w:t>hidden</w:t></w:r>`,
			`<w:commentRangeStart w:id="1"/><w:r><w:commentReference w:id="1"/></w:r><w:bookmarkStart w:id="0" w:name="b"/><w:proofErr w:type="spellStart"/>`,
			`<w:sdt><w:sdtPr><w:alias w:val="x"/><w:placeholder><w:docPart w:val="y"/></w:placeholder></w:sdtPr><w:sdtContent>`+wRun(", in a control")+`</w:sdtContent></w:sdt>`) +
		wPara(wRun("See "), `<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> HYPERLINK "https://example.com/a" \o "tip" </w:instrText></w:r>`,
			`<w:r><w:fldChar w:fldCharType="separate"/></w:r>`, wRun("field link"), `<w:r><w:fldChar w:fldCharType="end"/></w:r>`,
			wRun(", "), `<w:fldSimple w:instr=" HYPERLINK \l &quot;sec2&quot; ">`+wRun("simple")+`</w:fldSimple>`,
			wRun(", "), `<w:hyperlink w:anchor="top">`+wRun("anchor")+`</w:hyperlink>`,
			wRun(", "), `<w:hyperlink r:id="rIdLink" w:anchor="part">`+wRun("page part")+`</w:hyperlink>`,
			wRun(", page "), `<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> PAGE </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>`,
			wRun("7"), `<w:r><w:fldChar w:fldCharType="end"/></w:r>`) +
		wPara(`<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wp:anchor><wp:docPr id="3" name="Box"/><a:graphic><a:graphicData><wps:wsp><wps:txbx><w:txbxContent>`+
			wPara(wRun("Box text"))+`</w:txbxContent></wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing></mc:Choice>`+
			`<mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent>`+wPara(wRun("Box text"))+`</w:txbxContent></v:textbox></v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r>`,
			wRun("Anchoring paragraph")) +
		wPara(`<w:r><w:rPr><w:rStyle w:val="Strong"/></w:rPr><w:t>strong style</w:t></w:r>`,
			`<w:r><w:rPr><w:rStyle w:val="Strong"/><w:b w:val="0"/></w:rPr><w:t xml:space="preserve"> not bold, </w:t></w:r>`,
			`<w:r><w:pict><v:shape alt="An old picture"><v:imagedata r:id="rIdImg" o:title="t"/></v:shape></w:pict></w:r>`,
			`<m:oMath><m:r><m:t>x=1</m:t></m:r></m:oMath>`) +
		wListPara(7, 0, "one") + wListPara(7, 2, "skipped a level") + wListPara(7, 0, "two") +
		wPara(wRun("Interruption")) +
		wListPara(7, 0, "three") + wListPara(8, 0, "restarted at ten") + wListPara(8, 0, "eleven") +
		`<w:tbl><w:tblPr><w:tblW w:w="0"/></w:tblPr><w:tblGrid><w:gridCol/></w:tblGrid>` +
		`<w:tr>` + wCell("", "A") + wCell("", "B") + wCell("", "C") + `</w:tr>` +
		`<w:tr><w:trPr><w:gridBefore w:val="1"/></w:trPr>` + wCell(`<w:gridSpan w:val="2"/><w:vMerge w:val="restart"/>`, "wide and tall") + `</w:tr>` +
		`<w:tr>` + wCell("", "x") + wCell(`<w:gridSpan w:val="2"/><w:vMerge/>`, "") + `</w:tr>` +
		`<w:tr>` + wCell(`<w:vMerge/>`, "orphan") + wCell("", "y") + wCell("", "z") + `</w:tr>` +
		`</w:tbl><w:sectPr><w:pgSz w:w="1"/></w:sectPr>`
	doc, err := DOCX(context.Background(), testDOCX(t, body, styles, numbering))
	if err != nil {
		t.Fatal(err)
	}
	want := `## Custom heading

### Named heading

Styles based on each other

*Quoted*

Kept inserted after a tab, in a control

See [field link](https://example.com/a), [simple](#sec2), [anchor](#top), [page part](https://example.com/page#part), page 7

Anchoring paragraph

Box text

**strong style** not bold, ![An old picture](media/old.gif)x=1

1. one
    - 
        - skipped a level
2. two

Interruption

3. three

10. restarted at ten
11. eleven

| A | B | C |
| --- | --- | --- |
|  | wide and tall |  |
| x |  |  |
| orphan | y | z |
`
	if doc.Markdown != want {
		t.Errorf("Markdown:\n%s\nwant:\n%s", doc.Markdown, want)
	}
	if !strings.Contains(doc.HTML, `<tr><td></td><td colspan="2" rowspan="2">wide and tall</td></tr>`+"\n<tr><td>x</td></tr>") {
		t.Errorf("spans lost:\n%s", doc.HTML)
	}
}

const odtNamespaces = `xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" ` +
	`xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" ` +
	`xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" ` +
	`xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" ` +
	`xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" ` +
	`xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" ` +
	`xmlns:xlink="http://www.w3.org/1999/xlink" ` +
	`xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"`

// testODT is a package whose content.xml has the given automatic styles
// and text.
func testODT(t testing.TB, styles, text string) []byte {
	t.Helper()
	return officeZip(t,
		"mimetype", "application/vnd.oasis.opendocument.text",
		"content.xml", `<?xml version="1.0"?><office:document-content `+odtNamespaces+`><office:automatic-styles>`+styles+
			`</office:automatic-styles><office:body><office:text>`+text+`</office:text></office:body></office:document-content>`)
}

// TestODTConstructs reads what the fixtures do not show: white space
// rules, tracked deletions, comments, paragraph and span styles that
// switch bold and italic on and off, several paragraphs in a list item, an
// item holding only a nested list, numbering continued across lists,
// titled images, text boxes, index bodies, ruby, links around spans,
// repeated cells and a table in a cell.
func TestODTConstructs(t *testing.T) {
	t.Parallel()
	styles := `<style:style style:name="PB" style:family="paragraph"><style:text-properties fo:font-weight="bold"/></style:style>` +
		`<style:style style:name="TN" style:family="text"><style:text-properties fo:font-weight="normal"/></style:style>` +
		`<style:style style:name="Emph" style:family="text"><style:text-properties fo:font-style="italic"/></style:style>` +
		`<style:style style:name="TI" style:family="text" style:parent-style-name="Emph"/>` +
		`<text:list-style style:name="LN"><text:list-level-style-number text:level="1" style:num-format="1"/>` +
		`<text:list-level-style-number text:level="2" style:num-format="a"/></text:list-style>`
	text := `<text:sequence-decls><text:sequence-decl text:name="Table"/></text:sequence-decls>` +
		`<text:tracked-changes><text:changed-region text:id="c1"><text:deletion><text:p>deleted words</text:p></text:deletion></text:changed-region></text:tracked-changes>` +
		`<text:p>  Spaces   collapse,<text:s text:c="2"/>text:s keeps two;<text:tab/>a tab.<text:change text:change-id="c1"/> ` +
		`<office:annotation><text:p>a comment</text:p></office:annotation>End<text:bookmark text:name="b"/><text:soft-page-break/>.</text:p>` +
		`<text:p text:style-name="PB">Bold paragraph with <text:span text:style-name="TN">a normal span</text:span> and <text:span text:style-name="TI">bold italic</text:span>.</text:p>` +
		`<text:list text:style-name="LN"><text:list-item><text:p>first</text:p><text:p>second paragraph of first</text:p></text:list-item>` +
		`<text:list-item><text:list><text:list-item><text:p>nested a</text:p></text:list-item><text:list-item><text:p>nested b</text:p></text:list-item></text:list></text:list-item></text:list>` +
		`<text:p>Between lists.</text:p>` +
		`<text:list text:style-name="LN" text:continue-numbering="true"><text:list-item><text:p>continued</text:p></text:list-item></text:list>` +
		`<text:list text:style-name="LN"><text:list-item><text:p>a new list</text:p></text:list-item></text:list>` +
		`<text:p>Frame: <draw:frame draw:name="Pic"><draw:image xlink:href="Pictures/a.png"><office:binary-data>AAAA</office:binary-data></draw:image><svg:title>Only a title</svg:title></draw:frame>` +
		` and a box<draw:frame><draw:text-box><text:p>Caption text</text:p></draw:text-box></draw:frame></text:p>` +
		`<text:table-of-content><text:table-of-content-source><text:index-title-template>Contents</text:index-title-template></text:table-of-content-source>` +
		`<text:index-body><text:p>Chapter 1</text:p></text:index-body></text:table-of-content>` +
		`<text:section><text:h text:outline-level="9">Deep heading</text:h></text:section>` +
		`<text:p><text:ruby><text:ruby-base>base</text:ruby-base><text:ruby-text>ruby</text:ruby-text></text:ruby> <text:a xlink:href="#Sec"><text:span text:style-name="TN">inner</text:span> link</text:a></text:p>` +
		`<table:table><table:table-column table:number-columns-repeated="2"/><table:table-row><table:table-cell table:number-columns-repeated="2"><text:p>rep</text:p></table:table-cell></table:table-row>` +
		`<table:table-row><table:table-cell><table:table><table:table-row><table:table-cell><text:p>inner</text:p></table:table-cell></table:table-row></table:table></table:table-cell><table:table-cell/></table:table-row></table:table>`
	doc, err := ODT(context.Background(), testODT(t, styles, text))
	if err != nil {
		t.Fatal(err)
	}
	want := `Spaces collapse,  text:s keeps two; a tab. End.

**Bold paragraph with** a normal span **and *bold italic*.**

1. first

    second paragraph of first
2. 
    1. nested a
    2. nested b

Between lists.

3. continued

1. a new list

Frame: ![Only a title](Pictures/a.png) and a box

Caption text

Chapter 1

###### Deep heading

base [inner link](#Sec)

| rep | rep |
| --- | --- |
| inner |  |
`
	if doc.Markdown != want {
		t.Errorf("Markdown:\n%s\nwant:\n%s", doc.Markdown, want)
	}
}

// TestOfficeErrors feeds inputs that must fail cleanly and fast.
func TestOfficeErrors(t *testing.T) {
	t.Parallel()
	docx, err := os.ReadFile("testdata/office-rich.docx")
	if err != nil {
		t.Fatal(err)
	}
	odt, err := os.ReadFile("testdata/office-rich.odt")
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(i*7919 + i>>3)
	}
	laughs := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">` +
		`<!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">` +
		`<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">` +
		`<!ENTITY lol9 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>`
	oleHeader := []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}
	encryptedOOXML := append(append(append(bytes.Clone(oleHeader), make([]byte, 504)...), oleStreamName("EncryptionInfo")...), oleStreamName("EncryptedPackage")...)
	legacyDoc := append(append(bytes.Clone(oleHeader), make([]byte, 504)...), oleStreamName("WordDocument")...)
	encryptedODT := officeZip(t,
		"mimetype", "application/vnd.oasis.opendocument.text",
		"content.xml", string(garbage[:4096]),
		"META-INF/manifest.xml", `<?xml version="1.0"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">`+
			`<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>`+
			`<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml" manifest:size="9000">`+
			`<manifest:encryption-data manifest:checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k" manifest:checksum="AAAA">`+
			`<manifest:algorithm manifest:algorithm-name="http://www.w3.org/2001/04/xmlenc#aes256-cbc" manifest:initialisation-vector="AAAA"/>`+
			`<manifest:key-derivation manifest:key-derivation-name="PBKDF2" manifest:key-size="32" manifest:iteration-count="100000" manifest:salt="AAAA"/>`+
			`</manifest:encryption-data></manifest:file-entry></manifest:manifest>`)
	tests := []struct {
		name string
		read func(context.Context, []byte) (*Document, error)
		data []byte
		want error
	}{
		{"DOCX empty", DOCX, nil, ErrMalformed},
		{"DOCX garbage", DOCX, garbage, ErrMalformed},
		{"DOCX html", DOCX, []byte("<!doctype html><p>hello</p>"), ErrMalformed},
		{"DOCX truncated", DOCX, docx[:len(docx)/2], ErrMalformed},
		{"DOCX given an ODT", DOCX, odt, ErrMalformed},
		{"DOCX without document.xml", DOCX, officeZip(t, "word/styles.xml", "<w:styles/>"), ErrMalformed},
		{"DOCX legacy doc", DOCX, legacyDoc, ErrMalformed},
		{"DOCX password", DOCX, encryptedOOXML, ErrEncrypted},
		{"DOCX zip bomb", DOCX, officeZipBomb(t, "word/document.xml", maxMemberBytes+1<<20), ErrTooLarge},
		{"DOCX zip bomb in styles", DOCX, officeZipBomb(t, "word/styles.xml", maxMemberBytes+1<<20, "word/document.xml", "<w:document/>"), ErrTooLarge},
		{"DOCX billion laughs", DOCX, testDOCXRaw(t, laughs+`<w:document xmlns:w="`+wordNS+`"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>`), ErrMalformed},
		{"DOCX not XML", DOCX, testDOCXRaw(t, string(garbage[:1000])), ErrMalformed},
		{"ODT empty", ODT, nil, ErrMalformed},
		{"ODT garbage", ODT, garbage, ErrMalformed},
		{"ODT truncated", ODT, odt[:len(odt)/2], ErrMalformed},
		{"ODT given a DOCX", ODT, docx, ErrMalformed},
		{"ODT given an OLE file", ODT, encryptedOOXML, ErrMalformed},
		{"ODT password", ODT, encryptedODT, ErrEncrypted},
		{"ODT zip bomb", ODT, officeZipBomb(t, "content.xml", maxMemberBytes+1<<20), ErrTooLarge},
		{"ODT billion laughs", ODT, officeZip(t, "content.xml", laughs+`<office:document-content `+odtNamespaces+`><office:body><office:text><text:p>&lol9;</text:p></office:text></office:body></office:document-content>`), ErrMalformed},
		{"ODT not XML", ODT, officeZip(t, "content.xml", string(garbage[:1000])), ErrMalformed},
		{"ODT flat but broken", ODT, []byte(`<?xml version="1.0"?><office:document xmlns:office="` + odfOfficeNS + `"><office:body`), ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			doc, err := tc.read(context.Background(), tc.data)
			if !errors.Is(err, tc.want) || doc != nil {
				t.Fatalf("err = %v (doc %v), want %v", err, doc != nil, tc.want)
			}
			// Generous, so that a loaded machine does not fail it: what it
			// catches is a parse that hangs.
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v to fail", d)
			}
		})
	}
}

// testDOCXRaw is a package whose word/document.xml is exactly doc.
func testDOCXRaw(t testing.TB, doc string) []byte {
	return officeZip(t, "word/document.xml", doc)
}

// officeZipBomb is a zip whose member name inflates to size bytes of zeros,
// streamed so that building it costs little memory, after the name,
// content pairs of extra.
func officeZipBomb(t testing.TB, name string, size int, extra ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestSpeed)
	})
	for i := 0; i+1 < len(extra); i += 2 {
		w, err := zw.Create(extra[i])
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, extra[i+1])
	}
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for n := 0; n < size; n += len(zeros) {
		w.Write(zeros)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestOfficeHostile reads inputs built to exhaust a naive reader; each must
// give a bounded result quickly.
func TestOfficeHostile(t *testing.T) {
	t.Parallel()
	const depth = 10_000
	nest := func(open, middle, close string) string {
		return strings.Repeat(open, depth) + middle + strings.Repeat(close, depth)
	}
	many := func(s string, n int) string { return strings.Repeat(s, n) }
	tests := []struct {
		name string
		read func(context.Context, []byte) (*Document, error)
		data []byte
		// The output must hold this text, and no more than maxTables
		// tables and maxLists lists (the notes are a list too).
		want                string
		maxTables, maxLists int
		// warning is part of the one warning expected, if any.
		warning string
	}{
		{"DOCX tables nested 10000 deep", DOCX, testDOCX(t, nest("<w:tbl><w:tr><w:tc>", wPara(wRun("deep")), "</w:tc></w:tr></w:tbl>"), "", ""), "deep", maxOfficeNesting, 0, ""},
		{"DOCX text boxes nested 10000 deep", DOCX, testDOCX(t, nest("<w:p><w:r><w:drawing><w:txbxContent>", wPara(wRun("deep")), "</w:txbxContent></w:drawing></w:r></w:p>"), "", ""), "deep", 0, 0, ""},
		{"DOCX list level 10000", DOCX, testDOCX(t, wListPara(1, 10_000, "deep")+wListPara(1, 5, "five")+wListPara(1, -3, "negative"),
			"", `<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="1"/></w:num>`), "deep", 0, maxOfficeNesting + 1, ""},
		{"DOCX 100000 fields never ended", DOCX, testDOCX(t, wPara(many(`<w:r><w:fldChar w:fldCharType="begin"/></w:r>`, 100_000))+wPara(wRun("after")), "", ""), "", 0, 0, ""},
		{"DOCX 100000 runs", DOCX, testDOCX(t, wPara(many(`<w:r><w:rPr><w:b/></w:rPr><w:t>a</w:t></w:r><w:r><w:t>b</w:t></w:r>`, 50_000)), "", ""), "**a**b**a**b", 0, 0, ""},
		{"ODT tables nested 10000 deep", ODT, testODT(t, "", nest("<table:table><table:table-row><table:table-cell>", "<text:p>deep</text:p>", "</table:table-cell></table:table-row></table:table>")), "deep", maxOfficeNesting, 0, ""},
		{"ODT lists nested 10000 deep", ODT, testODT(t, "", nest("<text:list><text:list-item>", "<text:p>deep</text:p>", "</text:list-item></text:list>")), "deep", 0, maxOfficeNesting, ""},
		{"ODT notes nested 10000 deep", ODT, testODT(t, "", nest("<text:p>n<text:note><text:note-body>", "<text:p>deep</text:p>", "</text:note-body></text:note></text:p>")), "", 0, 1, ""},
		{"ODT frames nested 10000 deep", ODT, testODT(t, "", nest("<text:p><draw:frame><draw:text-box>", "<text:p>deep</text:p>", "</draw:text-box></draw:frame></text:p>")), "deep", 0, 0, ""},
		{"ODT spans nested 10000 deep", ODT, testODT(t, "", "<text:p>"+nest("<text:span>", "deep", "</text:span>")+"</text:p>"), "deep", 0, 0, ""},
		{"ODT a million spaces", ODT, testODT(t, "", "<text:p>a"+many(" ", 1_000_000)+many(`<text:s text:c="999999999"/>`, 1000)+"b</text:p>"), "a", 0, 0, ""},
		{"ODT huge spans", ODT, testODT(t, "", `<table:table><table:table-row><table:table-cell table:number-columns-spanned="999999999" table:number-rows-spanned="999999999" table:number-columns-repeated="999999999"><text:p>wide</text:p></table:table-cell></table:table-row></table:table>`), "wide", 1, 0,
			"wider than 1000 columns"},
		{"DOCX 100000 nested links", DOCX, testDOCX(t, "<w:p>"+nest(`<w:hyperlink w:anchor="a">`+wRun("x"), "", "</w:hyperlink>")+"</w:p>", "", ""), "[xxxx", 0, 0, ""},
		{"ODT 100000 nested spans with text", ODT, testODT(t, `<style:style style:name="B" style:family="text"><style:text-properties fo:font-weight="bold"/></style:style>`,
			"<text:p>"+nest(`<text:span text:style-name="B">x<text:a xlink:href="#a">y`, "", "</text:a></text:span>")+"</text:p>"), "**x**[**yxyx", 0, 0, ""},
		{"DOCX a row of 100000 cells", DOCX, testDOCX(t, "<w:tbl><w:tr>"+many("<w:tc><w:p/></w:tc>", 100_000)+"</w:tr><w:tr>"+wCell("", "second row")+"</w:tr></w:tbl>", "", ""),
			"second row", 1, 0, "wider than 1000 columns"},
		{"DOCX 3000 rows 1000 wide", DOCX, testDOCX(t, "<w:tbl>"+many(`<w:tr><w:tc><w:tcPr><w:gridSpan w:val="1000"/></w:tcPr>`+wPara(wRun("r"))+`</w:tc></w:tr>`, 3000)+"</w:tbl>", "", ""),
			"r", 1, 0, "1952 of its rows were left out"},
		{"ODT overlapping spans", ODT, testODT(t, "", "<table:table>"+many(`<table:table-row><table:table-cell table:number-columns-spanned="1000" table:number-rows-spanned="1000"><text:p>o</text:p></table:table-cell></table:table-row>`, 1000)+"</table:table>"),
			"o", 1, 0, ""},
		{"ODT staircase of spans", ODT, testODT(t, "", "<table:table>"+many(`<table:table-row>`+many(`<table:table-cell table:number-columns-spanned="300" table:number-rows-spanned="900"><text:p>s</text:p></table:table-cell>`, 4)+`</table:table-row>`, 1000)+"</table:table>"),
			"s", 1, 0, ""},
		{"DOCX 700000 line breaks", DOCX, testDOCX(t, "<w:p><w:r><w:t>x</w:t>"+many("<w:br/>", 700_000)+"<w:t>end</w:t></w:r></w:p>", "", ""),
			"x", 0, 0, "truncated at 19 MB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			doc, err := tc.read(context.Background(), tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v", d)
			}
			if !strings.Contains(doc.Markdown, tc.want) {
				t.Errorf("Markdown lacks %q: %.300s", tc.want, doc.Markdown)
			}
			if n := strings.Count(doc.HTML, "<table>"); n > tc.maxTables {
				t.Errorf("%d tables, want at most %d", n, tc.maxTables)
			}
			if n := strings.Count(doc.HTML, "<ul>") + strings.Count(doc.HTML, "<ol"); n > tc.maxLists {
				t.Errorf("%d lists, want at most %d", n, tc.maxLists)
			}
			if len(doc.HTML) > 64<<20 {
				t.Errorf("HTML is %d bytes", len(doc.HTML))
			}
			if w := strings.Join(doc.Warnings, "|"); tc.warning == "" && w != "" || !strings.Contains(w, tc.warning) {
				t.Errorf("warnings = %q, want one with %q", doc.Warnings, tc.warning)
			}
		})
	}
}

// TestOfficeDamagedXML keeps what was read before the XML breaks off, with
// a warning.
func TestOfficeDamagedXML(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, part string }{
		{"office-rich.docx", "word/document.xml"},
		{"office-rich.odt", "content.xml"},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		cut := officeRezip(t, data, func(name string, b []byte) []byte {
			if name == tc.part {
				i := bytes.Index(b, []byte("Procedure"))
				return b[:i]
			}
			return b
		})
		read := DOCX
		if strings.HasSuffix(tc.file, ".odt") {
			read = ODT
		}
		doc, err := read(context.Background(), cut)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if !strings.Contains(doc.Markdown, "One metre sections") || strings.Contains(doc.Markdown, "Calibrate") {
			t.Errorf("%s: Markdown:\n%s", tc.file, doc.Markdown)
		}
		if len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], tc.part+" is damaged") {
			t.Errorf("%s: warnings = %q", tc.file, doc.Warnings)
		}
	}
}

// TestOfficeCancelled shows that a cancelled context stops both readers,
// before they start and at each checkpoint along the way.
func TestOfficeCancelled(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"office-rich.docx", "office-rich.odt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		read := DOCX
		if strings.HasSuffix(name, ".odt") {
			read = ODT
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := read(ctx, data); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: err = %v, want context.Canceled", name, err)
		}
		for n := 0; ; n++ {
			doc, err := read(&countdownCtx{Context: context.Background(), n: n}, data)
			if err == nil {
				if n == 0 || doc == nil {
					t.Fatalf("%s, n=%d: finished without error (doc %v)", name, n, doc != nil)
				}
				break // every checkpoint was passed
			}
			if !errors.Is(err, context.Canceled) || doc != nil {
				t.Fatalf("%s, n=%d: err = %v, doc %v; want context.Canceled", name, n, err, doc != nil)
			}
			if n > 10_000 {
				t.Fatal("never finished")
			}
		}
	}
}

func TestDOCXHyperlinkField(t *testing.T) {
	t.Parallel()
	for instr, want := range map[string]string{
		` HYPERLINK "https://a.example/x y" `:         "https://a.example/x y",
		`HYPERLINK https://b.example \o "tip"`:        "https://b.example",
		`hyperlink \l "_Toc1"`:                        "#_Toc1",
		`HYPERLINK "file.docx" \l "part" \t "_blank"`: "file.docx#part",
		` PAGE `:                  "",
		`HYPERLINK "unterminated`: "unterminated",
		``:                        "",
	} {
		if got := docxHyperlinkField(instr); got != want {
			t.Errorf("docxHyperlinkField(%q) = %q, want %q", instr, got, want)
		}
	}
}

// fuzzOffice checks the contract of a reader on any input: no panic, an
// error of the package's kinds or a document that rendered to valid text.
func fuzzOffice(t *testing.T, read func(context.Context, []byte) (*Document, error), data []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	doc, err := read(ctx, data)
	if err != nil {
		if doc != nil {
			t.Fatal("a document and an error")
		}
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrEncrypted) && ctx.Err() == nil {
			t.Fatalf("unexpected error kind: %v", err)
		}
		// The readers turn a panic into ErrMalformed; for the fuzzer it is
		// still a bug.
		if strings.Contains(err.Error(), "reader failed") {
			t.Fatal(err)
		}
		return
	}
	if doc == nil {
		t.Fatal("no document and no error")
	}
	if !utf8.ValidString(doc.Markdown) || !utf8.ValidString(doc.HTML) {
		t.Fatal("invalid UTF-8 in the output")
	}
}

// fuzzPackage returns a function that puts fuzzed XML in place of the main
// part of fixture, stored rather than deflated, so that mutations reach
// the XML instead of breaking the archive's checksums.
func fuzzPackage(f *testing.F, fixture, main string) (wrap func([]byte) []byte, mainXML []byte) {
	data, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		f.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		f.Fatal(err)
	}
	type member struct {
		name string
		data []byte
	}
	var members []member
	for _, zf := range zr.File {
		rc, err := zf.Open()
		if err != nil {
			f.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			f.Fatal(err)
		}
		if zf.Name == main {
			mainXML = b
		} else if !strings.HasSuffix(zf.Name, ".png") {
			members = append(members, member{zf.Name, b})
		}
	}
	wrap = func(xmlData []byte) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, m := range append(members, member{main, xmlData}) {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: zip.Store})
			if err != nil {
				panic(err)
			}
			w.Write(m.data)
		}
		zw.Close()
		return buf.Bytes()
	}
	return wrap, mainXML
}

// FuzzDOCX checks that no input panics or hangs the DOCX reader. An input
// that is not a zip is also read as the document.xml of the rich fixture.
func FuzzDOCX(f *testing.F) {
	for _, name := range []string{"office-rich.docx", "office-simple.docx"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	wrap, doc := fuzzPackage(f, "office-rich.docx", "word/document.xml")
	f.Add(doc)
	f.Add([]byte(`<w:document ` + docxNamespaces + `><w:body>` + wPara(wRun("x")) + wListPara(2, 0, "item") +
		`<w:tbl><w:tr>` + wCell(`<w:vMerge w:val="restart"/>`, "a") + `</w:tr><w:tr>` + wCell(`<w:vMerge/>`, "") + `</w:tr></w:tbl>` +
		wPara(`<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>HYPERLINK "u"</w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>`,
			wRun("l"), `<w:r><w:fldChar w:fldCharType="end"/><w:footnoteReference w:id="2"/></w:r>`) + `</w:body></w:document>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOffice(t, DOCX, data)
		if !bytes.HasPrefix(data, []byte("PK")) {
			fuzzOffice(t, DOCX, wrap(data))
		}
	})
}

// FuzzODT checks that no input panics or hangs the ODT reader. An input
// that is not a zip is also read as the content.xml of the rich fixture.
func FuzzODT(f *testing.F) {
	for _, name := range []string{"office-rich.odt", "office-simple.odt", "src/office-simple.fodt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	wrap, content := fuzzPackage(f, "office-rich.odt", "content.xml")
	f.Add(content)
	f.Add([]byte(`<office:document-content ` + odtNamespaces + `><office:automatic-styles>` +
		`<text:list-style style:name="L"><text:list-level-style-number text:level="1"/></text:list-style></office:automatic-styles><office:body><office:text>` +
		`<text:list text:style-name="L"><text:list-item><text:p>a<text:note><text:note-body><text:p>n</text:p></text:note-body></text:note></text:p></text:list-item></text:list>` +
		`<table:table><table:table-row><table:table-cell table:number-rows-spanned="2"><text:p>c</text:p></table:table-cell></table:table-row>` +
		`<table:table-row><table:covered-table-cell/></table:table-row></table:table></office:text></office:body></office:document-content>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOffice(t, ODT, data)
		if !bytes.HasPrefix(data, []byte("PK")) {
			fuzzOffice(t, ODT, wrap(data))
		}
	})
}

// BenchmarkOffice reads each fixture.
func BenchmarkOffice(b *testing.B) {
	for _, name := range []string{"office-rich.docx", "office-rich.odt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			b.Fatal(err)
		}
		read := DOCX
		if strings.HasSuffix(name, ".odt") {
			read = ODT
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := read(context.Background(), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
