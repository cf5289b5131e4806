#!/bin/sh
# Rebuilds the RTF and DOC fixtures in parse/testdata from legacy.fodt with
# LibreOffice (Debian: libreoffice-writer-nogui). Its own profile directory
# keeps it apart from any other soffice running at the same time. Output
# differs slightly between LibreOffice versions, so regenerate the goldens
# afterwards: go test ./parse -run 'Legacy' -update
set -eu
cd "$(dirname "$0")"
out=..
profile=file:///tmp/lo-legacy
soffice --headless -env:UserInstallation=$profile --convert-to rtf --outdir "$out" legacy.fodt
soffice --headless -env:UserInstallation=$profile --convert-to doc --outdir "$out" legacy.fodt
