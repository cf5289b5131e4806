#!/bin/sh
# Rebuilds the DOCX and ODT fixtures in parse/testdata from the flat ODF
# sources beside this script (office-*.fodt), each converted to both formats
# so that the readers can be checked against each other. Needs LibreOffice
# (Debian: libreoffice-writer-nogui). A profile directory of its own keeps it
# clear of any other soffice running on the machine.
#
# The sources carry meta:document-statistic with their page count: without
# it LibreOffice leaves <Pages> out of the DOCX's docProps/app.xml.
#
# Output differs slightly between LibreOffice versions (the ODT's image is
# named by a hash), so regenerate the goldens afterwards and read them:
#   go test ./parse -run 'DOCX|ODT|Office' -update
set -eu
cd "$(dirname "$0")"
out=..
profile=${LO_PROFILE:-file:///tmp/lo-office-text}
for fmt in docx odt; do
	soffice --headless "-env:UserInstallation=$profile" --convert-to "$fmt" \
		--outdir "$out" office-rich.fodt office-simple.fodt
done
