package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckStrictRefusesWhatFormatMdForbids(t *testing.T) {
	for _, text := range []string{
		`{"a": 1, "a": 2}`,
		`{"a": {"b": 1, "b": 1}}`,
		`{"n": 2.0}`,
		`{"n": 1e3}`,
		`{"a": 1} {"b": 2}`,
		`{"a": 1} x`,
	} {
		if err := CheckStrict([]byte(text)); err == nil {
			t.Errorf("%s was accepted", text)
		}
	}
	if err := CheckStrict([]byte(`{"a": [1, -2, {"b": "c"}], "d": {"a": 9007199254740993}}`)); err != nil {
		t.Errorf("strict JSON refused: %v", err)
	}
}

func TestLoadScenarioRefusesWhatTheSchemaRefuses(t *testing.T) {
	good := `{"name": "x", "description": "d", "steps": [{"rpc": "Fold", "request": {}, "expect": {"response": {}}}]}`
	for _, text := range []string{
		strings.Replace(good, `"name"`, `"extra": 1, "name"`, 1),
		strings.Replace(good, `"rpc"`, `"extra": 1, "rpc"`, 1),
		strings.Replace(good, `{"response": {}}`, `{"response": {}, "error": {"code": "NOT_FOUND", "reason": "X"}}`, 1),
		strings.Replace(good, `{"response": {}}`, `{"stream": {"items": [], "take": 1, "exact": true}}`, 1),
		strings.Replace(good, `"request": {}`, `"request": {}, "metadata": {"token": "root"}`, 1),
		strings.Replace(good, `"x"`, `"X-1"`, 1),
	} {
		path := filepath.Join(t.TempDir(), "x.json")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadScenario(path); err == nil {
			t.Errorf("%s was accepted", text)
		}
	}
}
