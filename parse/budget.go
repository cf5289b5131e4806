package parse

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// A small archive can inflate into a large one, and a small XML part into
// millions of cells, so the size of an upload says little about what
// reading it costs. The readers of the formats that amplify (XLSX, XLS,
// DOCX, ODT) therefore estimate, from what the archive and its parts say
// and from one streaming pass that keeps nothing (and stops once the
// budget is passed), the memory reading the document will take, before
// they take any of it. A document whose estimate
// exceeds what one parse may take is refused with a *BudgetError; the
// others reserve their estimate from one budget the whole process shares,
// waiting while other parses hold it, so that parses running at once
// (uploads and scrapes of document URLs alike) cannot together take the
// host. A parse that cannot get its share before its context ends fails
// with a *BusyError.
//
// PDF, RTF and DOC are outside the budget: their input is not compressed
// as a whole, and their own caps (pages, glyphs, decoded streams, text)
// bound them.

const (
	// defaultParseBudget is the most memory one parse is estimated to
	// take. It admits workbooks of a few hundred thousand cells with room
	// to spare and refuses those of millions, which would cost the host
	// as much as maxSheetCells (the most a table keeps) allows only to be
	// cut short.
	defaultParseBudget = 256 << 20
	// defaultSharedBudget is the most the parses running at once are
	// estimated to take together: two of the largest, or many ordinary
	// ones.
	defaultSharedBudget = 512 << 20
	// busyRetryAfter is what a parse refused for want of the shared budget
	// suggests waiting: the parses that hold it take seconds.
	busyRetryAfter = 10 * time.Second
)

// What reading a document costs beyond the bytes it holds, in bytes per
// unit of what it has, as the heap grows by while it is read (garbage not
// yet collected included). BenchmarkBudgetEstimate checks them against
// generated documents; they err on the high side.
const (
	// costCellXLSX is a cell with a value of an XLSX sheet: its place and
	// text as read, its style as scanned, and what excelize's row reader
	// allocates for it; costCellXLS is one of an XLS sheet, which its own
	// reader walks in place.
	costCellXLSX = 140
	costCellXLS  = 70
	// costPlace is a place in an output table (rows × columns kept): the
	// table's cell, its text in the grid and its Markdown; costPlaceHTML
	// is its HTML when that is asked for too.
	costPlace     = 110
	costPlaceHTML = 60
	// sheetBaseBytes is what reading any workbook takes beside its cells:
	// the number formatter's scratch workbook, the readers' buffers.
	sheetBaseBytes = 16 << 20
	// costXLSString is a shared string of an XLS workbook, beyond its
	// characters.
	costXLSString = 24
	// officeRenderBytes bounds what DOCX and ODT build beside the XML they
	// read: the body is rendered as it is finished, and the renderings are
	// bounded by the text budget (maxTextRunes).
	officeRenderBytes = 3 * maxTextRunes
)

// BudgetError is a document refused because reading it is estimated to
// take more memory than one parse may (the budget). errors.Is(err,
// ErrTooLarge) holds for it.
type BudgetError struct {
	// Kind names the document: "spreadsheet" or "document".
	Kind string
	// Unit is what the document has too many of: "cells", "XML elements",
	// "inflated bytes", ...
	Unit string
	// Found is how many of Unit the document has, or, when AtLeast is
	// set, how many were counted before counting stopped, the budget being
	// spent (it may have more); Max is how many a document like it
	// (everything in it scaled alike) may have within the budget.
	Found, Max int64
	AtLeast    bool
	// Estimate is the memory reading the document was estimated to take
	// (at least, with AtLeast), and Budget the most one parse may take, in
	// bytes.
	Estimate, Budget int64
}

func (e *BudgetError) Error() string {
	if e.AtLeast {
		return fmt.Sprintf("the %s has at least %d %s; parse accepts at most %d (a memory budget of %d MB; reading this one would take more than %d MB)",
			e.Kind, e.Found, e.Unit, e.Max, e.Budget>>20, e.Estimate>>20)
	}
	return fmt.Sprintf("the %s has %d %s; parse accepts at most %d (a memory budget of %d MB; reading this one would take about %d MB)",
		e.Kind, e.Found, e.Unit, e.Max, e.Budget>>20, (e.Estimate+1<<20-1)>>20)
}

// Is makes a BudgetError ErrTooLarge too.
func (e *BudgetError) Is(target error) bool { return target == ErrTooLarge }

// BusyError is a parse that could not get its share of the memory budget
// the parses running at once share before its context ended: the document
// is fine, and may be sent again later.
type BusyError struct {
	// Need is the parse's estimate and Budget the shared budget, in bytes.
	Need, Budget int64
	// RetryAfter is how long the caller might wait before trying again.
	RetryAfter time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("the documents being parsed hold the %d MB memory budget parsing shares, and this one needs %d MB of it; retry later",
		e.Budget>>20, (e.Need+1<<20-1)>>20)
}

// memEstimate is what reading a document is estimated to take, by what it
// costs.
type memEstimate struct {
	kind string
	// fixed are bytes any document of the kind takes, or that do not grow
	// with what the document holds: buffers, copies of the input.
	fixed int64
	// bytes are held as they are: inflated parts, decoded streams,
	// renderings.
	bytes int64
	// cells are sheet cells with a value, each costing cellCost, and
	// places the places of the output tables (at most maxSheetCells of
	// which are kept), rendered as HTML too when html is set.
	cells, cellCost, places int64
	html                    bool
	// elements are XML elements decoded into structures, which take
	// elementBytes in all (the cost of an element depends on its part).
	elements, elementBytes int64
	// strings are an XLS workbook's shared strings.
	strings int64
	// partial says that counting stopped once the estimate passed the
	// budget: the counts are what was found by then.
	partial bool
}

// placeCost is what a place of an output table costs.
func (e memEstimate) placeCost() int64 {
	if e.html {
		return costPlace + costPlaceHTML
	}
	return costPlace
}

// total is the estimate in bytes.
func (e memEstimate) total() int64 {
	return e.fixed + e.bytes + e.cells*e.cellCost + min(e.places, maxSheetCells)*e.placeCost() +
		e.elementBytes + e.strings*costXLSString
}

// check returns a *BudgetError when the estimate exceeds limit. It names
// what costs most, and how much of it a document like this one may have:
// the document scaled down until it fits.
func (e memEstimate) check(limit int64) error {
	total := e.total()
	if total <= limit {
		return nil
	}
	places := min(e.places, maxSheetCells)
	// A cell brings its place in the table; places beyond one a cell are
	// the table's own (a sparse sheet spreads its cells over many).
	unit, found, charge := "inflated bytes", e.bytes, e.bytes
	for _, c := range []struct {
		unit          string
		found, charge int64
	}{
		{"cells", e.cells, e.cells*e.cellCost + min(places, e.cells)*e.placeCost()},
		{"cells in its tables, empty ones included", e.places, max(0, places-e.cells) * e.placeCost()},
		{"XML elements", e.elements, e.elementBytes},
		{"shared strings", e.strings, e.strings * costXLSString},
	} {
		if c.charge > charge {
			unit, found, charge = c.unit, c.found, c.charge
		}
	}
	// Scaled down, a table cut to maxSheetCells would no longer be cut.
	whole := total + (e.places-places)*e.placeCost()
	fits := int64(float64(found) * float64(max(0, limit-e.fixed)) / float64(max(1, whole-e.fixed)))
	return &BudgetError{Kind: e.kind, Unit: unit, Found: found, Max: fits, AtLeast: e.partial, Estimate: total, Budget: limit}
}

// memoryBudget is the budget parses share.
type memoryBudget struct {
	perParse, shared int64
	sem              *semaphore.Weighted

	mu         sync.Mutex
	held, peak int64 // reserved now, and the most ever, for tests
}

func newMemoryBudget(perParse, shared int64) *memoryBudget {
	return &memoryBudget{perParse: perParse, shared: shared, sem: semaphore.NewWeighted(shared)}
}

// budget is the process's one memory budget (see currentBudget).
var budget atomic.Pointer[memoryBudget]

func init() { budget.Store(newMemoryBudget(defaultParseBudget, defaultSharedBudget)) }

// currentBudget is the process's memory budget.
func currentBudget() *memoryBudget { return budget.Load() }

// SetMemoryBudget sets the most memory one parse may be estimated to take
// and what the parses running at once may take together, in bytes, for
// the whole process (the service's TRAWLER_PARSE_MEMORY_MB and
// TRAWLER_PARSE_MEMORY_TOTAL_MB). Parses running keep the budget they
// reserved from.
func SetMemoryBudget(perParse, shared int64) {
	budget.Store(newMemoryBudget(perParse, max(shared, perParse)))
}

// admit refuses an estimate over the per-parse budget and otherwise
// reserves it from the shared one, waiting for it while ctx lasts. The
// caller must call release when the parse's memory is no longer held.
func (b *memoryBudget) admit(ctx context.Context, e memEstimate) (release func(), err error) {
	if err := e.check(b.perParse); err != nil {
		return nil, err
	}
	// The semaphore would never grant more than it holds.
	n := min(max(e.total(), 1), b.shared)
	if err := b.sem.Acquire(ctx, n); err != nil {
		if errors.Is(err, context.Canceled) {
			// Nobody waits for the answer.
			return nil, err
		}
		return nil, &BusyError{Need: n, Budget: b.shared, RetryAfter: busyRetryAfter}
	}
	b.mu.Lock()
	b.held += n
	b.peak = max(b.peak, b.held)
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.held -= n
			b.mu.Unlock()
			b.sem.Release(n)
		})
	}, nil
}

// countElements counts the start tags of an XML stream: each '<' not
// followed by '/', '?' or '!'. It keeps nothing and never fails on
// damage; markup inside comments and CDATA counts too, which only
// overestimates. It stops once it has counted more than limit.
func countElements(ctx context.Context, r io.Reader, limit int64) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	open := false // the last chunk ended with '<'
	for chunk := 0; ; chunk++ {
		if chunk%64 == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		k, err := r.Read(buf)
		b := buf[:k]
		if open && len(b) > 0 {
			if isStartTag(b[0]) {
				n++
			}
			open = false
		}
		for {
			i := bytes.IndexByte(b, '<')
			if i < 0 {
				break
			}
			if i+1 == len(b) {
				open = true
				break
			}
			if isStartTag(b[i+1]) {
				n++
			}
			b = b[i+1:]
		}
		if err == io.EOF || n > limit {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// isStartTag reports whether the byte after '<' starts an element.
func isStartTag(c byte) bool { return c != '/' && c != '?' && c != '!' }

// countMemberElements counts the start tags of an archive member as it
// inflates, up to a little past limit. Damage ends the count where it is
// (the reader that reads the member reports it); only the context's error
// is returned.
func countMemberElements(ctx context.Context, f *zip.File, limit int64) (int64, error) {
	rc, err := f.Open()
	if err != nil {
		return 0, nil
	}
	defer rc.Close()
	n, err := countElements(ctx, io.LimitReader(rc, maxMemberBytes), limit)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return n, ctxErr
	}
	return n, nil
}

// memberHead returns the first n bytes of an archive member, or fewer.
func memberHead(f *zip.File, n int) []byte {
	if f == nil {
		return nil
	}
	rc, err := f.Open()
	if err != nil {
		return nil
	}
	defer rc.Close()
	head := make([]byte, n)
	k, _ := io.ReadFull(rc, head)
	return head[:k]
}

// isUTF16 reports whether a part starts with a UTF-16 byte order mark.
func isUTF16(head []byte) bool {
	return bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF})
}
