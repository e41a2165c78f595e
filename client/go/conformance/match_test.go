package conformance

import "testing"

func decode(t *testing.T, s string) any {
	var v any
	if err := DecodeJSON([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMatchRule(t *testing.T) {
	ok := [][2]string{
		{`{"seq": 2}`, `{"seq": "2", "x": 1}`},
		{`{"duplicate": false, "n": 0, "s": "", "l": [], "o": {}, "z": "0"}`, `{}`},
		{`{"a": null}`, `{}`},
		{`{"a": "${any}"}`, `{"a": ""}`},
		{`[1, {"b": true}]`, `[1, {"b": true, "c": 3}]`},
		{`{"f": 1.5}`, `{"f": 1.5}`},
	}
	for _, c := range ok {
		if err := Match(decode(t, c[0]), decode(t, c[1]), true, ""); err != nil {
			t.Errorf("%s vs %s: %v", c[0], c[1], err)
		}
	}
	bad := [][2]string{
		{`{"seq": 2}`, `{"seq": "3"}`},
		{`{"a": "${any}"}`, `{}`},
		{`{"a": null}`, `{"a": 1}`},
		{`[1]`, `[1, 2]`},
		{`{"a": true}`, `{}`},
		{`{"a": "x"}`, `{"a": "y"}`},
		{`{"a": 1}`, `{"a": true}`},
	}
	for _, c := range bad {
		if err := Match(decode(t, c[0]), decode(t, c[1]), true, ""); err == nil {
			t.Errorf("%s vs %s matched", c[0], c[1])
		}
	}
}

func TestSubstitute(t *testing.T) {
	vars := map[string]any{"run": "cf-1", "save.n": decode(t, `4`), "save.s": "x"}
	got, err := Substitute(decode(t, `{"a": "${save.n}", "b": "t-${run}-${save.n}", "c": ["${any}", "${save.s}"]}`), vars)
	if err != nil {
		t.Fatal(err)
	}
	if err := Match(decode(t, `{"a": 4, "b": "t-cf-1-4", "c": ["${any}", "x"]}`), got, true, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := Substitute("${save.missing}", vars); err == nil {
		t.Fatal("an unknown placeholder was substituted")
	}
}
