package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// CheckStrict refuses scenario text FORMAT.md forbids ("Strict JSON") that
// encoding/json lets through: a key twice in one object (it would keep the
// last silently), a number with a fraction or exponent, text after the value.
func CheckStrict(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := strictValue(dec); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("text after the JSON value")
	}
	return nil
}

func strictValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Number:
		if strings.ContainsAny(string(t), ".eE") {
			return fmt.Errorf("the number %s is not an integer written in plain digits", t)
		}
	case json.Delim:
		seen := map[string]bool{}
		for dec.More() {
			if t == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				name, _ := key.(string)
				if seen[name] {
					return fmt.Errorf("the key %q appears twice in one object", name)
				}
				seen[name] = true
			}
			if err := strictValue(dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
	}
	return nil
}

var (
	scenarioName = regexp.MustCompile(`^[a-z0-9_]+$`)
	saveName     = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	reasonName   = regexp.MustCompile(`^[A-Z][A-Z_]*$`)
)

// check is what format.schema.json asks beyond the keys DisallowUnknownFields
// already refuses (FORMAT.md, "The schema"): an unknown rpc or error code
// fails its step when it replays.
func (s *Scenario) check() error {
	if !scenarioName.MatchString(s.Name) {
		return fmt.Errorf("name %q is not [a-z0-9_]+", s.Name)
	}
	if s.Description == "" {
		return errors.New("no description")
	}
	for _, b := range s.Requires.Backends {
		if b != "file" && b != "jetstream" {
			return fmt.Errorf("requires.backends: unknown backend %q", b)
		}
	}
	return checkSteps(s.Steps, "steps")
}

func checkSteps(steps []Step, where string) error {
	if len(steps) == 0 {
		return fmt.Errorf("%s is empty", where)
	}
	for i, st := range steps {
		at := fmt.Sprintf("%s.%d", where, i)
		if _, ok := st.Request.(map[string]any); !ok {
			return fmt.Errorf("%s.request is not an object", at)
		}
		if err := checkKeys(st.Metadata, at+".metadata", "token"); err != nil {
			return err
		}
		if t, ok := st.Metadata["token"]; ok && !oneOf(t, "worker", "operator", "tenant", "none", "bad") {
			return fmt.Errorf("%s.metadata.token: unknown token %v", at, t)
		}
		if err := checkExpect(st.Expect, at+".expect"); err != nil {
			return err
		}
		for name := range st.Save {
			if !saveName.MatchString(name) {
				return fmt.Errorf("%s.save: name %q is not [A-Za-z0-9_]+", at, name)
			}
		}
		if st.During != nil {
			if st.During.After < 1 {
				return fmt.Errorf("%s.during.after is below 1", at)
			}
			if err := checkSteps(st.During.Steps, at+".during.steps"); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkExpect(expect map[string]any, at string) error {
	if len(expect) != 1 {
		return fmt.Errorf("%s holds %d keys, not exactly one of response, stream, error", at, len(expect))
	}
	if err := checkKeys(expect, at, "response", "stream", "error"); err != nil {
		return err
	}
	if r, ok := expect["response"]; ok {
		if _, isObject := r.(map[string]any); !isObject {
			return fmt.Errorf("%s.response is not an object", at)
		}
	}
	if s, ok := expect["stream"]; ok {
		stream, isObject := s.(map[string]any)
		if !isObject {
			return fmt.Errorf("%s.stream is not an object", at)
		}
		if err := checkKeys(stream, at+".stream", "items", "exact", "take"); err != nil {
			return err
		}
		if _, ok := stream["items"].([]any); !ok {
			return fmt.Errorf("%s.stream.items is not an array", at)
		}
		_, exact := stream["exact"]
		_, take := stream["take"]
		if exact && take {
			return fmt.Errorf("%s.stream: take and exact do not go together", at)
		}
	}
	if e, ok := expect["error"]; ok {
		want, isObject := e.(map[string]any)
		if !isObject {
			return fmt.Errorf("%s.error is not an object", at)
		}
		if err := checkKeys(want, at+".error", "code", "reason", "metadata"); err != nil {
			return err
		}
		if reason, _ := want["reason"].(string); !reasonName.MatchString(reason) {
			return fmt.Errorf("%s.error.reason %v is not [A-Z][A-Z_]*", at, want["reason"])
		}
		if _, ok := want["code"].(string); !ok {
			return fmt.Errorf("%s.error.code is not a string", at)
		}
	}
	return nil
}

func checkKeys(object map[string]any, at string, allowed ...string) error {
	for key := range object {
		if !oneOf(key, allowed...) {
			return fmt.Errorf("%s: unknown key %q", at, key)
		}
	}
	return nil
}

func oneOf(v any, names ...string) bool {
	for _, n := range names {
		if v == n {
			return true
		}
	}
	return false
}
