package conformance

import "testing"

func TestCheckStringsRefusesLoneSurrogatesAndBadUTF8(t *testing.T) {
	for _, bad := range []string{`{"a": "x\ud800y"}`, `{"a": "\udc00"}`, `{"\ud83d": 1}`, `{"a": "\ud83d\u0041"}`, "{\"a\": \"\xff\"}"} {
		if CheckStrings([]byte(bad)) == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	for _, good := range []string{`{"a": "\ud83d\ude00"}`, `{"a": "\\ud800"}`, `{"a": "\"\u00e9", "n": 9223372036854775807}`} {
		if err := CheckStrings([]byte(good)); err != nil {
			t.Errorf("refused %q: %v", good, err)
		}
	}
}
