package runjournal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// MaxSafeInteger is the largest integer every JSON implementation represents
// exactly; canonical JSON refuses larger ones.
const MaxSafeInteger = 1<<53 - 1

// SystemPromptSHA256 is the lower-case hex SHA-256 of the prompt's UTF-8
// bytes, with no normalisation. Hash the prompt before adding a resume
// reminder.
func SystemPromptSHA256(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON writes value as canonical JSON (docs/fingerprint.md): object
// keys sorted by code point, no insignificant whitespace, non-ASCII as
// itself, numbers as ECMAScript writes a float64, integers beyond 2**53-1 and
// non-finite numbers refused. value is what encoding/json decodes into `any`
// (map[string]any, []any, string, bool, nil, float64 or json.Number), or
// Go integers and floats; other types are round-tripped through
// encoding/json first.
func CanonicalJSON(value any) (string, error) {
	var b strings.Builder
	if err := writeCanonical(&b, value, "$"); err != nil {
		return "", err
	}
	return b.String(), nil
}

// CanonicalTools is the canonical JSON of a tool list: sorted by name,
// duplicate or missing names refused.
func CanonicalTools(tools []any) (string, error) {
	byName := map[string]any{}
	var names []string
	for i, tool := range tools {
		obj, ok := tool.(map[string]any)
		if !ok {
			var err error
			if obj, err = asObject(tool); err != nil {
				return "", fmt.Errorf("tools[%d] must be a JSON object", i)
			}
		}
		name, ok := obj["name"].(string)
		if !ok || name == "" {
			return "", fmt.Errorf("tools[%d] needs a non-empty string 'name'", i)
		}
		if _, dup := byName[name]; dup {
			return "", fmt.Errorf("tools[%d]: duplicate tool name %q; tool names must be unique", i, name)
		}
		byName[name] = obj
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return lessCodePoint(names[i], names[j]) })
	list := make([]any, len(names))
	for i, n := range names {
		list[i] = byName[n]
	}
	return CanonicalJSON(list)
}

// ToolsSHA256 is the lower-case hex SHA-256 of the canonical tool list.
func ToolsSHA256(tools []any) (string, error) {
	text, err := CanonicalTools(tools)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:]), nil
}

// ToolsSHA256JSON hashes a tool list given as JSON text (numbers are kept
// exact: an integer literal stays an integer).
func ToolsSHA256JSON(toolsJSON []byte) (string, error) {
	var tools []any
	if err := decodeJSON(toolsJSON, &tools); err != nil {
		return "", err
	}
	return ToolsSHA256(tools)
}

// FingerprintConfig is a worker's configuration, hashed by MakeFingerprint.
type FingerprintConfig struct {
	Provider      string
	Model         string
	SystemPrompt  string
	ThinkingMode  string
	Tools         []any
	MaxTokens     int32
	MaxIterations int32
}

// MakeFingerprint is the fingerprint of a worker's configuration.
func MakeFingerprint(c FingerprintConfig) (*pb.Fingerprint, error) {
	tools, err := ToolsSHA256(c.Tools)
	if err != nil {
		return nil, err
	}
	return &pb.Fingerprint{
		Provider:           c.Provider,
		Model:              c.Model,
		SystemPromptSha256: SystemPromptSHA256(c.SystemPrompt),
		ThinkingMode:       c.ThinkingMode,
		ToolsSha256:        tools,
		MaxTokens:          c.MaxTokens,
		MaxIterations:      c.MaxIterations,
	}, nil
}

func decodeJSON(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(into)
}

func asObject(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := decodeJSON(data, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("not an object")
	}
	return obj, nil
}

func lessCodePoint(a, b string) bool {
	// Go compares strings by UTF-8 bytes, which orders as code points do.
	return a < b
}

func writeCanonical(b *strings.Builder, v any, path string) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		return writeString(b, x, path)
	case json.Number:
		text := string(x)
		if !strings.ContainsAny(text, ".eE") {
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil || n > MaxSafeInteger || n < -MaxSafeInteger {
				return fmt.Errorf("%s: integer %s is beyond 2**53 - 1 and not portable", path, text)
			}
			b.WriteString(strconv.FormatInt(n, 10))
			return nil
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("%s: %s is not a JSON number", path, text)
		}
		return writeFloat(b, f, path)
	case float64:
		return writeFloat(b, x, path)
	case float32:
		return writeFloat(b, float64(x), path)
	case int:
		return writeInt(b, int64(x), path)
	case int32:
		return writeInt(b, int64(x), path)
	case int64:
		return writeInt(b, x, path)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return lessCodePoint(keys[i], keys[j]) })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeString(b, k, path); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeCanonical(b, x[k], path+"."+k); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %T is not a JSON value: %w", path, v, err)
		}
		var generic any
		if err := decodeJSON(data, &generic); err != nil {
			return err
		}
		return writeCanonical(b, generic, path)
	}
	return nil
}

func writeInt(b *strings.Builder, n int64, path string) error {
	if n > MaxSafeInteger || n < -MaxSafeInteger {
		return fmt.Errorf("%s: integer %d is beyond 2**53 - 1 and not portable", path, n)
	}
	b.WriteString(strconv.FormatInt(n, 10))
	return nil
}

func writeFloat(b *strings.Builder, f float64, path string) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("%s: %v is not a JSON number", path, f)
	}
	if f == 0 {
		b.WriteString("0") // -0 too, as ECMAScript writes it
		return nil
	}
	// encoding/json writes a float64 as ECMAScript's Number::toString does.
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	b.Write(data)
	return nil
}

// writeString quotes s as Python's json.dumps(ensure_ascii=False) does:
// only ", \ and control characters are escaped.
func writeString(b *strings.Builder, s, path string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s: text is not valid UTF-8", path)
	}
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return nil
}
