// Package wire holds the JSON helpers both adapters share: a provider's JSON
// text kept as it came (compacted, never re-encoded), objects read without
// losing a number, and request bodies written without HTML escaping.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Compact is the provider's JSON text without insignificant whitespace; every
// string, number and key order stays as the provider wrote it.
func Compact(raw []byte) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Object reads a JSON object as its members' raw texts (nothing is decoded,
// so no number loses precision).
func Object(raw []byte) (map[string]json.RawMessage, error) {
	var object map[string]json.RawMessage
	if err := json.Unmarshal(raw, &object); err != nil {
		return nil, err
	}
	if object == nil {
		return nil, fmt.Errorf("expected a JSON object, got %.200s", raw)
	}
	return object, nil
}

// Keys are an object's keys, sorted.
func Keys(object map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(object))
	for key := range object {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// String is a member that is a JSON string, and whether it is one.
func String(object map[string]json.RawMessage, key string) (string, bool) {
	raw, ok := object[key]
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// IsNull is true for an absent member or a JSON null.
func IsNull(object map[string]json.RawMessage, key string) bool {
	raw, ok := object[key]
	return !ok || string(bytes.TrimSpace(raw)) == "null"
}

// Marshal writes value as JSON the way the SDKs of the other languages do:
// compact, and '<', '>' and '&' as themselves (encoding/json escapes them).
func Marshal(value any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n")), nil
}

// Decode reads JSON into Go values with numbers as json.Number, as the
// fingerprint's canonical JSON wants them.
func Decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return nil, err
	}
	return value, nil
}

// JSONOf is value's JSON: raw JSON as given, anything else marshalled (an
// SDK params struct marshals to the request body it would send).
func JSONOf(value any) ([]byte, error) {
	switch v := value.(type) {
	case json.RawMessage:
		return v, nil
	case []byte:
		return v, nil
	}
	return json.Marshal(value)
}

// Params is an SDK call's params as the JSON object of its request body, and
// the model it names (an error when it names none).
func Params(params any) (map[string]json.RawMessage, string, error) {
	raw, err := JSONOf(params)
	if err != nil {
		return nil, "", err
	}
	body, err := Object(raw)
	if err != nil {
		return nil, "", err
	}
	model, ok := String(body, "model")
	if !ok || model == "" {
		return nil, "", fmt.Errorf("the params name no model")
	}
	return body, model, nil
}
