package conformance

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// CheckStrings refuses scenario text FORMAT.md forbids ("Strings"): bytes
// that are not UTF-8, and a string escape that is not valid UTF-16 (a lone
// surrogate such as \ud800). encoding/json would turn either into U+FFFD
// silently, so a scenario would send other text than it says.
func CheckStrings(data []byte) error {
	if !utf8.Valid(data) {
		return errors.New("not UTF-8")
	}
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			inString = !inString
		case inString && c == '\\':
			if i+1 < len(data) && data[i+1] == 'u' {
				r, next, err := unicodeEscape(data, i)
				if err != nil {
					return err
				}
				if utf16.IsSurrogate(r) {
					low, after, err := unicodeEscape(data, next)
					if err != nil || r >= 0xdc00 || low < 0xdc00 || low > 0xdfff {
						return fmt.Errorf("a lone surrogate \\u%04x at byte %d", r, i)
					}
					next = after
				}
				i = next - 1
			} else {
				i++ // any other escape is two bytes: skip the escaped one (it may be a quote)
			}
		}
	}
	return nil
}

// unicodeEscape reads the \uXXXX at data[i:]: its value and the index after it.
func unicodeEscape(data []byte, i int) (rune, int, error) {
	if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
		return 0, i, errors.New("not a \\u escape")
	}
	v, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
	if err != nil {
		return 0, i, fmt.Errorf("a bad \\u escape at byte %d", i)
	}
	return rune(v), i + 6, nil
}
