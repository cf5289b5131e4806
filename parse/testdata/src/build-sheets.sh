#!/bin/sh
# Rebuilds the spreadsheet fixtures in parse/testdata (sheets.xlsx, sheets.xls)
# from sheets.fods beside this script. Needs LibreOffice (Debian:
# libreoffice-calc-nogui). Each run uses its own LibreOffice profile so that it
# does not collide with other soffice processes. Regenerate the goldens
# afterwards and check them by eye against sheets.fods:
#   go test ./parse -run 'XLS|Sheet' -update
set -eu
cd "$(dirname "$0")"
out=..
profile=file:///tmp/lo-sheets

soffice --headless -env:UserInstallation=$profile \
	--convert-to xlsx:"Calc MS Excel 2007 XML" --outdir "$out" sheets.fods
soffice --headless -env:UserInstallation=$profile \
	--convert-to xls:"MS Excel 97" --outdir "$out" sheets.fods
