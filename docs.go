// Package trawler holds what ships inside the binary from the repository's
// root: Trawler's own documentation, which POST /v2/support/docs-search
// answers questions from (package docsearch indexes it). It is a package of
// its own because go:embed reaches only files at or below the directory of
// the file that embeds them.
package trawler

import "embed"

// Docs is Trawler's documentation: README.md, the pages of docs/ (the API
// reference, configuration, design, operations, security, limits, testing
// and the benchmark's figures), and under docs/api the interface
// specification (web-content-acquisition-v2.md) and the conventions that
// decide what it leaves open (conventions.md), copies of the spec files the
// service is built to.
//
//go:embed README.md docs/*.md docs/api/*.md
var Docs embed.FS
