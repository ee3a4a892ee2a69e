package main

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openapiYAML is the contract of the public API, the admin API and the
// webhooks; openapi_test.go checks real responses against it.
//
//go:embed openapi.yaml
var openapiYAML []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(openapiYAML)))
	w.Write(openapiYAML)
}
