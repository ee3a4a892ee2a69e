package main

// The peers: mock servers QA teams point their CRM at today instead of the
// cloud. Each is installed with npm into a scratch folder (pinned versions),
// configured with the same two operations answering the very bytes dialbox
// answered (operation B's page of scenarios, operation A's one-contact
// result), and driven by the same load generator.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Peer is one mock server.
type Peer struct {
	Name    string
	Package string // npm name@version
	Bin     string // under node_modules/.bin
	// setup writes the peer's configuration into dir and returns the
	// arguments that start it on port.
	setup func(dir string, port int, opB, opA []byte) ([]string, error)
}

var peers = []Peer{
	{Name: "WireMock", Package: "wiremock@3.13.2", Bin: "wiremock", setup: setupWireMock},
	{Name: "Prism", Package: "@stoplight/prism-cli@5.16.0", Bin: "prism", setup: setupPrism},
	{Name: "Mockoon", Package: "@mockoon/cli@9.9.0", Bin: "mockoon-cli", setup: setupMockoon},
}

// installPeers installs every peer into dir with npm; it returns, per peer
// name, why it cannot be used ("" when it can).
func installPeers(dir string) map[string]string {
	why := map[string]string{}
	if _, err := exec.LookPath("npm"); err != nil {
		for _, p := range peers {
			why[p.Name] = "npm not found"
		}
		return why
	}
	install := func(pkgs ...string) error {
		args := append([]string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"}, pkgs...)
		cmd := exec.Command("npm", args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("npm install %s: %v: %s", strings.Join(pkgs, " "), err, lastLine(string(out)))
		}
		return nil
	}
	var all []string
	for _, p := range peers {
		all = append(all, p.Package)
	}
	if err := install(all...); err != nil {
		// Try one by one to find out which cannot be installed.
		for _, p := range peers {
			if err := install(p.Package); err != nil {
				why[p.Name] = "cannot be installed: " + err.Error()
			}
		}
	}
	for _, p := range peers {
		if why[p.Name] != "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", p.Bin)); err != nil {
			why[p.Name] = "installed, but node_modules/.bin/" + p.Bin + " is missing"
		}
	}
	if why["WireMock"] == "" {
		if out, err := exec.Command("java", "-version").CombinedOutput(); err != nil {
			why["WireMock"] = "no working java: " + lastLine(string(out))
		}
	}
	return why
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

const (
	pathB = "/api/v1/public-api/scenarios"
	pathA = "/api/v1/public-api/scenarios/" + benchScenarioID + "/calls"
)

// setupWireMock writes two stub mappings; the request journal and request
// logging are off (WireMock's fastest settings).
func setupWireMock(dir string, port int, opB, opA []byte) ([]string, error) {
	maps := filepath.Join(dir, "mappings")
	if err := os.MkdirAll(maps, 0o755); err != nil {
		return nil, err
	}
	auth := map[string]any{"Authorization": map[string]any{"matches": "Bearer .+"}}
	headers := map[string]any{"Content-Type": "application/json; charset=utf-8"}
	stubs := map[string]any{
		"op-b.json": map[string]any{
			"request":  map[string]any{"method": "GET", "urlPath": pathB, "headers": auth},
			"response": map[string]any{"status": 200, "headers": headers, "body": string(opB)},
		},
		"op-a.json": map[string]any{
			"request":  map[string]any{"method": "POST", "urlPathPattern": "/api/v1/public-api/scenarios/[^/]+/calls", "headers": auth},
			"response": map[string]any{"status": 200, "headers": headers, "body": string(opA)},
		},
	}
	for name, v := range stubs {
		if err := writeJSONFile(filepath.Join(maps, name), v); err != nil {
			return nil, err
		}
	}
	return []string{"--port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "--root-dir", dir,
		"--no-request-journal", "--disable-request-logging", "--disable-banner"}, nil
}

// setupPrism writes an OpenAPI 3 document of the two operations, with the
// dialbox answers as their examples; Prism validates requests against it.
func setupPrism(dir string, port int, opB, opA []byte) ([]string, error) {
	str := map[string]any{"type": "string"}
	queryParam := func(name string) map[string]any {
		return map[string]any{"name": name, "in": "query", "required": false, "schema": str}
	}
	jsonResp := func(body []byte) map[string]any {
		return map[string]any{"200": map[string]any{
			"description": "Success",
			"content":     map[string]any{"application/json": map[string]any{"example": json.RawMessage(body)}},
		}}
	}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info":    map[string]any{"title": "Outbound Call Public API (benchmark subset)", "version": "1"},
		"components": map[string]any{"securitySchemes": map[string]any{
			"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}}},
		"security": []any{map[string]any{"bearer": []any{}}},
		"paths": map[string]any{
			pathB: map[string]any{"get": map[string]any{
				"operationId": "listScenarios",
				"parameters":  []any{queryParam("status"), queryParam("fields"), queryParam("limit"), queryParam("offset")},
				"responses":   jsonResp(opB),
			}},
			"/api/v1/public-api/scenarios/{scenario_id}/calls": map[string]any{"post": map[string]any{
				"operationId": "addContactsToScenario",
				"parameters":  []any{map[string]any{"name": "scenario_id", "in": "path", "required": true, "schema": str}},
				"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{
					"schema": map[string]any{
						"type": "object", "required": []string{"contacts"},
						"properties": map[string]any{"contacts": map[string]any{
							"type": "array", "minItems": 1,
							"items": map[string]any{
								"type": "object", "required": []string{"phone_number"},
								"properties":           map[string]any{"phone_number": str},
								"additionalProperties": true,
							},
						}},
					},
				}}},
				"responses": jsonResp(opA),
			}},
		},
	}
	file := filepath.Join(dir, "openapi.json")
	if err := writeJSONFile(file, doc); err != nil {
		return nil, err
	}
	// Logging at warn: Prism's per-request info lines would otherwise cost it.
	return []string{"mock", file, "--port", strconv.Itoa(port), "--host", "127.0.0.1", "-v", "warn"}, nil
}

// setupMockoon writes a Mockoon environment (data file) with two routes,
// templating off (its fastest setting).
func setupMockoon(dir string, port int, opB, opA []byte) ([]string, error) {
	route := func(uuid, method, endpoint string, body []byte) map[string]any {
		return map[string]any{
			"uuid": uuid, "type": "http", "documentation": "", "method": method, "endpoint": endpoint,
			"responses": []any{map[string]any{
				"uuid": uuid[:len(uuid)-1] + "f", "body": string(body), "latency": 0, "statusCode": 200,
				"label": "", "headers": []any{map[string]any{"key": "Content-Type", "value": "application/json; charset=utf-8"}},
				"bodyType": "INLINE", "filePath": "", "databucketID": "", "sendFileAsBody": false,
				"rules": []any{map[string]any{"target": "header", "modifier": "Authorization", "value": "^Bearer .+",
					"invert": false, "operator": "regex"}},
				"rulesOperator": "OR", "disableTemplating": true, "fallbackTo404": false, "default": true,
				"crudKey": "id", "callbacks": []any{},
			}},
			"responseMode": nil, "streamingMode": nil, "streamingInterval": 0,
		}
	}
	uB, uA := "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e50", "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e60"
	env := map[string]any{
		"uuid": "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e40", "lastMigration": 33, "name": "dialbox bench",
		"endpointPrefix": "", "latency": 0, "port": port, "hostname": "127.0.0.1", "folders": []any{},
		"routes": []any{
			route(uB, "get", strings.TrimPrefix(pathB, "/"), opB),
			route(uA, "post", "api/v1/public-api/scenarios/:scenario_id/calls", opA),
		},
		"rootChildren": []any{map[string]any{"type": "route", "uuid": uB}, map[string]any{"type": "route", "uuid": uA}},
		"proxyMode":    false, "proxyHost": "", "proxyRemovePrefix": false,
		"tlsOptions": map[string]any{"enabled": false, "type": "CERT", "pfxPath": "", "certPath": "", "keyPath": "",
			"caPath": "", "passphrase": ""},
		"cors": false, "headers": []any{}, "proxyReqHeaders": []any{}, "proxyResHeaders": []any{},
		"data": []any{}, "callbacks": []any{},
	}
	file := filepath.Join(dir, "mockoon.json")
	if err := writeJSONFile(file, env); err != nil {
		return nil, err
	}
	return []string{"start", "--data", file, "--port", strconv.Itoa(port), "--hostname", "127.0.0.1",
		"--disable-log-to-file", "--repair"}, nil
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// StartPeer configures and starts p, and waits until operation B answers.
func StartPeer(p Peer, npmDir, scratch, token string, opB, opA []byte) (*Proc, string, error) {
	dir := filepath.Join(scratch, "peer-"+strings.ToLower(p.Name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	args, err := p.setup(dir, port, opB, opA)
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	proc, err := StartProc(p.Name, filepath.Join(scratch, "peer-"+strings.ToLower(p.Name)+".log"), nil,
		filepath.Join(npmDir, "node_modules", ".bin", p.Bin), args...)
	if err != nil {
		return nil, "", err
	}
	probe := buildRequest("GET", addr, pathB, token, nil)
	if err := proc.WaitReady(90*time.Second, func() error { return probeHTTP(addr, probe, 200) }); err != nil {
		proc.Stop(5 * time.Second)
		return nil, "", err
	}
	return proc, addr, nil
}
