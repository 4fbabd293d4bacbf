package fakemodel

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/levee-lab/levee/internal/wire"
)

// adminHandler serves /admin/knobs behind the loopback check and the bearer
// token. PUT and PATCH are the same partial update (a patch names only the
// knobs it changes), so both are allowed, and a 405 says so.
func (n *Node) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(wire.PathAdminKnobs, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, n.Knobs())
		case http.MethodPut, http.MethodPatch:
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
			var mbe *http.MaxBytesError
			switch {
			case errors.As(err, &mbe): // as the model routes answer it
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBodyBytes), "")
				return
			case err != nil:
				writeError(w, http.StatusBadRequest, "reading body: "+err.Error(), "")
				return
			}
			k, err := n.PatchKnobs(body)
			if err != nil {
				var ke *KnobError
				if errors.As(err, &ke) {
					writeError(w, http.StatusBadRequest, ke.Error(), ke.Field)
					return
				}
				writeError(w, http.StatusInternalServerError, err.Error(), "")
				return
			}
			n.opts.log.Info("knobs changed", "node", n.addr, "patch", string(body))
			writeJSON(w, http.StatusOK, k)
		default:
			w.Header().Set("Allow", knobsAllow)
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed", "")
		}
	})
	mux.HandleFunc(wire.PathAdmin, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no admin route "+r.URL.Path, "")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !n.opts.adminAny && !loopbackPeer(r.RemoteAddr) {
			writeError(w, http.StatusForbidden, "admin API is for loopback peers only", "")
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(n.opts.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="levee-admin"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong admin bearer token", "Authorization")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// knobsAllow is the Allow header of /admin/knobs: every method it serves.
const knobsAllow = "GET, PUT, PATCH"

func loopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
