package server

import (
	"fmt"
	"slices"
	"strings"
)

// App is the application a server serves, named by its flag value.
type App string

// The applications.
const (
	// AppFruits is the scheduler study's: /fruits through the mock
	// backend (the package comment). The default.
	AppFruits App = "fruits"
	// AppTFB is TechEmpower's six test types on PostgreSQL (package tfb):
	// /json, /plaintext, /db, /queries, /fortunes, /updates, with the
	// database at Options.DB, in the modes of TFBModes.
	AppTFB App = "tfb"
)

// Apps lists the applications, the default first.
var Apps = []App{AppFruits, AppTFB}

// TFBModes are the modes that serve AppTFB: the one net/http handler under
// net/http's server and on carriers (each carrier with its pool of
// connections it polls), and package tfb's answers from spindle's own
// HTTP/1 handler on carriers (carrier mode, as fasthttp's TechEmpower entry
// uses fasthttp's own API). The handoff mode is the study's own /fruits
// code path only.
var TFBModes = []Mode{ModeNetHTTP, ModeNetHTTPCarrier, ModeCarrier}

// ParseApp parses an app flag value (one of Apps); "" is AppFruits.
func ParseApp(s string) (App, error) {
	if s == "" {
		return AppFruits, nil
	}
	if slices.Contains(Apps, App(s)) {
		return App(s), nil
	}
	names := make([]string, len(Apps))
	for i, a := range Apps {
		names[i] = string(a)
	}
	return "", fmt.Errorf("unknown app %q (want %s)", s, strings.Join(names, ", "))
}

// CheckApp reports whether app runs in mode (every mode serves AppFruits;
// AppTFB runs in TFBModes).
func CheckApp(app App, mode Mode) error {
	if app != AppTFB || slices.Contains(TFBModes, mode) {
		return nil
	}
	names := make([]string, len(TFBModes))
	for i, m := range TFBModes {
		names[i] = string(m)
	}
	return fmt.Errorf("app %s runs in modes %s (not %s)", app, strings.Join(names, ", "), mode)
}
