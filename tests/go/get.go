// The Go recipe of docs/gateway.md, as a program uses it: net/http's
// default client (its Transport's Proxy is http.ProxyFromEnvironment, so
// HTTP_PROXY, HTTPS_PROXY and NO_PROXY apply; Go's TLS trusts
// SSL_CERT_FILE), one GET per URL, no retry logic of its own.
// Usage: go run get.go URL...
// Prints one JSON line per URL: {"url", "status", "via", "body"} or
// {"url", "error"}.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	out := json.NewEncoder(os.Stdout)
	for _, url := range os.Args[1:] {
		line := map[string]interface{}{"url": url}
		r, err := http.Get(url)
		if err != nil {
			line["error"] = err.Error()
		} else {
			body, _ := io.ReadAll(r.Body)
			r.Body.Close()
			line["status"] = r.StatusCode
			line["via"] = r.Header.Get("Via")
			line["body"] = string(body)
		}
		if err := out.Encode(line); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
