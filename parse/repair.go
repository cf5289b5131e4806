package parse

import (
	"bytes"
	"errors"
	"fmt"
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
