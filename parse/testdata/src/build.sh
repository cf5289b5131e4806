#!/bin/sh
# Rebuilds the PDF fixtures in parse/testdata from the sources beside this
# script. Needs LibreOffice (Debian: libreoffice-writer-nogui) and, for
# chromium.pdf, Chromium. Output differs slightly between LibreOffice versions
# (fonts, object numbers), so regenerate the goldens afterwards:
#   go test ./parse -update
set -eu
cd "$(dirname "$0")"
# A profile of our own, so that a LibreOffice already running (another
# conversion, someone's desktop) neither takes the job nor blocks it.
lo="soffice -env:UserInstallation=file:///tmp/lo-pdf --headless"
out=..
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# HTML goes through Writer (not Writer/Web) so that it is laid out on A4 pages.
# links.html: its <a href>s become link annotations.
$lo --infilter="HTML (StarWriter)" --convert-to pdf:writer_pdf_Export \
	--outdir "$out" report.html table.html links.html
# ocr.fodt holds two images of text, as a scanner makes them (a JPEG and a
# greyscale PNG, both Chromium screenshots of text set in Liberation fonts),
# for the OCR tests; scanned.fodt's image holds no text.
$lo --convert-to pdf --outdir "$out" twocolumn.fodt threepage.fodt scanned.fodt features.fodt ocr.fodt

# Printed by Chromium, whose PDFs use composite (Type0) fonts and draw list
# bullets as shapes.
chromium --headless=new --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --disable-quic \
	--no-pdf-header-footer --print-to-pdf="$out/chromium.pdf" chromium.html

# The report again, encrypted: an owner password restricts editing, the user
# password is empty, so any reader may open it.
cp report.html "$tmp/encrypted.html"
$lo --infilter="HTML (StarWriter)" --convert-to \
	'pdf:writer_pdf_Export:{"RestrictPermissions":{"type":"boolean","value":"true"},"PermissionPassword":{"type":"string","value":"owner-secret"},"Changes":{"type":"long","value":"0"}}' \
	--outdir "$out" "$tmp/encrypted.html"

# Locked with a user password: must fail with ErrEncrypted.
cp table.html "$tmp/locked.html"
$lo --infilter="HTML (StarWriter)" --convert-to \
	'pdf:writer_pdf_Export:{"EncryptFile":{"type":"boolean","value":"true"},"DocumentOpenPassword":{"type":"string","value":"secret"}}' \
	--outdir "$out" "$tmp/locked.html"

# AES-256 with an empty user password (needs qpdf): the primary reader cannot
# decrypt it, the pdfcpu fallback can.
qpdf --encrypt "" owner-secret 256 --modify=none -- "$out/report.pdf" "$out/aes256.pdf"
qpdf --encrypt "user-secret" owner-secret 256 -- "$out/table.pdf" "$out/locked256.pdf"
