package parse

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// maxRepairBytes bounds the files handed to the rewriting fallback, which
// holds the whole object graph in memory and cannot be cancelled.
const maxRepairBytes = 64 << 20

var pdfcpuSetup sync.Once

// rewritePDF is the fallback for files the primary reader rejects: pdfcpu
// (Apache-2.0) reads them leniently (it rebuilds a broken cross-reference
// table and decrypts AES-256 with an empty user password) and writes a clean,
// unencrypted copy for the primary reader to try again. It reports
// ErrEncrypted when a user password is required.
func rewritePDF(data []byte) (out []byte, err error) {
	if len(data) > maxRepairBytes {
		return nil, fmt.Errorf("%d bytes is too large to repair", len(data))
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("repairing: %v", r)
		}
	}()
	if err := checkObjectNumbers(data); err != nil {
		return nil, err
	}
	// pdfcpu otherwise creates a configuration directory in the user's home
	// on first use; a service must not write there.
	pdfcpuSetup.Do(api.DisableConfigDir)

	rewrite := func(cmd model.CommandMode) ([]byte, error) {
		conf := model.NewDefaultConfiguration()
		conf.Cmd = cmd
		conf.UserPW, conf.OwnerPW = "", ""
		conf.ValidationMode = model.ValidationRelaxed
		ctx, err := api.ReadContext(bytes.NewReader(data), conf)
		if err != nil {
			return nil, err
		}
		// Writing walks every object number up to Size.
		if ctx.XRefTable.Size == nil || *ctx.XRefTable.Size > maxObjects {
			return nil, fmt.Errorf("%w: too many objects", errStructure)
		}
		var buf bytes.Buffer
		if err := api.WriteContext(ctx, &buf); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	out, err = rewrite(model.DECRYPT)
	if errors.Is(err, pdfcpu.ErrNotEncrypted) {
		out, err = rewrite(model.OPTIMIZE)
	}
	if errors.Is(err, pdfcpu.ErrWrongPassword) {
		return nil, fmt.Errorf("%w: a password is required", ErrEncrypted)
	}
	return out, err
}

var (
	sizeRe   = regexp.MustCompile(`/Size\s*(\d+)`)
	objRe    = regexp.MustCompile(`(\d+)\s+\d+\s+obj\b`)
	indexRe  = regexp.MustCompile(`/Index\s*\[([\d\s]*)\]`)
	numberRe = regexp.MustCompile(`\d+`)
)

// checkObjectNumbers rejects files that declare object numbers or counts
// past maxObjects anywhere, as pdfcpu loops over every number up to the
// largest it sees; checkStructure cannot vouch for a file whose
// cross-reference data it could not read.
func checkObjectNumbers(data []byte) error {
	tooBig := func(b []byte) bool {
		n, err := strconv.Atoi(string(b))
		return err != nil || n > maxObjects
	}
	for _, m := range sizeRe.FindAllSubmatch(data, -1) {
		if tooBig(m[1]) {
			return fmt.Errorf("%w: /Size %s", errStructure, m[1])
		}
	}
	for _, m := range objRe.FindAllSubmatch(data, -1) {
		if tooBig(m[1]) {
			return fmt.Errorf("%w: object number %s", errStructure, m[1])
		}
	}
	for _, m := range indexRe.FindAllSubmatch(data, -1) {
		sum := 0
		for _, n := range numberRe.FindAll(m[1], -1) {
			if tooBig(n) {
				return fmt.Errorf("%w: /Index %s", errStructure, m[1])
			}
			v, _ := strconv.Atoi(string(n))
			sum += v
		}
		if sum > 2*maxObjects {
			return fmt.Errorf("%w: /Index %s", errStructure, m[1])
		}
	}
	return nil
}
