package main

import "github.com/julienschmidt/httprouter"

// newRouter is httprouter without its redirects. By default it answers a
// path it could fix (a trailing slash, "..", the wrong case) with a 301 or
// 308 and an HTML body; an API client does not follow those as it would a
// browser, and the fake must answer as the cloud does. Such a path gets
// the router's NotFound, the API's JSON 404, like any other unknown path.
// Nothing in front of the router (observed, the access log) rewrites or
// redirects paths; only the separate metrics listener's ServeMux does, for
// /metrics alone.
func newRouter() *httprouter.Router {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	return r
}
