package runjournal

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := decodeJSON(data, into); err != nil {
		t.Fatal(err)
	}
}

type metaSpec struct {
	Always bool   `json:"always"`
	Type   string `json:"type"`
}

func withInfo(code codes.Code, reason string, md map[string]string) error {
	st, err := status.New(code, "refused").WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: md})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// Every reason of the server's table has a type, every key a field of the
// right type, and a status carrying the metadata parses into those fields.
func TestErrorMetadataTable(t *testing.T) {
	var table struct {
		Reasons map[string]map[string]metaSpec `json:"reasons"`
	}
	readJSON(t, "../../testdata/error_metadata.json", &table)
	if len(table.Reasons) == 0 {
		t.Fatal("empty table")
	}
	for reason, keys := range table.Reasons {
		build, ok := reasonTypes[reason]
		if !ok {
			t.Errorf("%s: no error type", reason)
			continue
		}
		md := map[string]string{}
		want := map[string]any{}
		for key, spec := range keys {
			switch spec.Type {
			case "int":
				md[key] = "42"
				want[key] = int64(42)
			case "str":
				md[key] = "v-" + key
				want[key] = "v-" + key
			case "list":
				md[key] = "a,b"
				want[key] = []string{"a", "b"}
			default:
				t.Fatalf("%s.%s: unknown type %s", reason, key, spec.Type)
			}
		}
		err := FromError(withInfo(codes.FailedPrecondition, reason, md))
		if reflect.TypeOf(err) != reflect.TypeOf(build(StatusError{})) {
			t.Errorf("%s: FromError gave %T", reason, err)
		}
		if ReasonOf(err) != reason {
			t.Errorf("%s: ReasonOf = %q", reason, ReasonOf(err))
		}
		v := reflect.ValueOf(err).Elem()
		fields := map[string]reflect.Value{}
		for i := 0; i < v.NumField(); i++ {
			if tag := v.Type().Field(i).Tag.Get("meta"); tag != "" {
				fields[tag] = v.Field(i)
			}
		}
		if len(fields) != len(keys) {
			t.Errorf("%s: %d typed fields, table has %d keys", reason, len(fields), len(keys))
		}
		for key, spec := range keys {
			f, ok := fields[key]
			if !ok {
				t.Errorf("%s: no field for %s", reason, key)
				continue
			}
			var wantType reflect.Type
			switch {
			case spec.Type == "int" && spec.Always:
				wantType = reflect.TypeOf(int64(0))
			case spec.Type == "int":
				wantType = reflect.TypeOf((*int64)(nil))
			case spec.Type == "str":
				wantType = reflect.TypeOf("")
			case spec.Type == "list":
				wantType = reflect.TypeOf([]string(nil))
			}
			if f.Type() != wantType {
				t.Errorf("%s.%s: field type %s, want %s", reason, key, f.Type(), wantType)
				continue
			}
			got := f.Interface()
			if p, ok := got.(*int64); ok {
				if p == nil {
					t.Errorf("%s.%s: not parsed", reason, key)
					continue
				}
				got = *p
			}
			if !reflect.DeepEqual(got, want[key]) {
				t.Errorf("%s.%s = %v, want %v", reason, key, got, want[key])
			}
		}
	}
	for reason := range reasonTypes {
		if _, ok := table.Reasons[reason]; !ok {
			t.Errorf("%s: a type for a reason the table does not have", reason)
		}
	}
}

func TestErrorsAsAndOptionalAbsent(t *testing.T) {
	err := FromError(withInfo(codes.FailedPrecondition, "SEQ_GAP", map[string]string{"run_id": "r", "seq": "5", "last_seq": "3"}))
	var gap *SeqGapError
	if !errors.As(err, &gap) || gap.Seq != 5 || gap.LastSeq != 3 || gap.RunID != "r" || gap.Index != nil {
		t.Fatalf("%#v", err)
	}
	if gap.Code != codes.FailedPrecondition || status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("code %v", gap.Code)
	}
	unknown := FromError(withInfo(codes.Internal, "SOMETHING_NEW", nil))
	var u *UnknownReasonError
	if !errors.As(unknown, &u) || u.Reason != "SOMETHING_NEW" {
		t.Fatalf("%#v", unknown)
	}
	plain := FromError(status.Error(codes.Unavailable, "down"))
	var se *StatusError
	if !errors.As(plain, &se) || se.Reason != "" || se.Code != codes.Unavailable {
		t.Fatalf("%#v", plain)
	}
}

func TestRetryable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unavailable, "down"), true},
		{status.Error(codes.DeadlineExceeded, "slow"), true},
		{withInfo(codes.Unavailable, "STORAGE_UNAVAILABLE", nil), false},
		{withInfo(codes.Unavailable, "RUN_LOCKED", map[string]string{"run_id": "r"}), false},
		{status.Error(codes.Internal, "x"), false},
		{withInfo(codes.FailedPrecondition, "SEQ_GAP", nil), false},
		{errors.New("plain"), false},
		{FromError(status.Error(codes.Unavailable, "down")), true},
		{status.Error(codes.Canceled, "server shutting down"), true},
		{withInfo(codes.Canceled, "RUN_LOCKED", map[string]string{"run_id": "r"}), false},
	}
	for i, c := range cases {
		if got := Retryable(c.err); got != c.want {
			t.Errorf("case %d (%v): Retryable = %v", i, c.err, got)
		}
	}
}

func TestRetryPolicyResendsAServerCancelButNotTheCallersOwn(t *testing.T) {
	p := RetryPolicy{Budget: time.Minute, MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Multiplier: 2}
	calls := 0
	err := p.do(context.Background(), func(context.Context) error {
		calls++
		if calls == 1 {
			return status.Error(codes.Canceled, "the server's stop cancelled the queued call")
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("a server's CANCELED was not resent: err %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = p.do(ctx, func(context.Context) error {
		calls++
		cancel()
		return status.Error(codes.Canceled, "context canceled")
	})
	if err == nil || calls != 1 {
		t.Fatalf("the caller's own cancel was resent: err %v after %d calls", err, calls)
	}
}

func TestRetryPolicyResendsSameRequestOnTransportFailuresAndStorageUnavailableOnly(t *testing.T) {
	p := RetryPolicy{Budget: time.Minute, MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Multiplier: 2}
	calls := 0
	err := p.do(context.Background(), func(context.Context) error {
		calls++
		if calls < 3 {
			return status.Error(codes.Unavailable, "down")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
	calls = 0
	err = p.do(context.Background(), func(context.Context) error {
		calls++
		return withInfo(codes.Unavailable, "RUN_LOCKED", map[string]string{"run_id": "r"})
	})
	var locked *RunLockedError
	if calls != 1 || !errors.As(err, &locked) {
		t.Fatalf("answer retried: %d calls, %v", calls, err)
	}
	calls = 0
	err = p.do(context.Background(), func(context.Context) error {
		calls++
		return status.Error(codes.DeadlineExceeded, "slow")
	})
	if calls != 4 || status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("%d calls, %v", calls, err)
	}
	calls = 0
	_ = NoRetry.do(context.Background(), func(context.Context) error { calls++; return status.Error(codes.Unavailable, "") })
	if calls != 1 {
		t.Fatalf("NoRetry made %d calls", calls)
	}
}

func TestRetryPolicyResendsStorageUnavailableUntilTheAttemptsAreSpent(t *testing.T) {
	// The server stored nothing ("retry the same request"): a NATS leader change rides through as a slow call.
	p := RetryPolicy{Budget: time.Minute, MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Multiplier: 2}
	calls := 0
	err := p.do(context.Background(), func(context.Context) error {
		calls++
		if calls < 3 {
			return withInfo(codes.Unavailable, "STORAGE_UNAVAILABLE", map[string]string{"run_id": "r"})
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("STORAGE_UNAVAILABLE not resent: err %v after %d calls", err, calls)
	}
	calls = 0
	err = p.do(context.Background(), func(context.Context) error {
		calls++
		return withInfo(codes.Unavailable, "STORAGE_UNAVAILABLE", map[string]string{"run_id": "r"})
	})
	var su *StorageUnavailableError
	if calls != 4 || !errors.As(err, &su) {
		t.Fatalf("want StorageUnavailableError after 4 calls, got %v after %d", err, calls)
	}
}

func TestBackoff(t *testing.T) {
	p := DefaultRetryPolicy
	if got := p.Backoff(1, 0); got != 50*time.Millisecond {
		t.Errorf("first retry low end %v", got)
	}
	if got := p.Backoff(1, 0.999999); got > 100*time.Millisecond || got < 99*time.Millisecond {
		t.Errorf("first retry high end %v", got)
	}
	if got := p.Backoff(3, 1); got != 400*time.Millisecond {
		t.Errorf("third retry cap %v", got)
	}
	if got := p.Backoff(20, 1); got != time.Second {
		t.Errorf("capped %v", got)
	}
}

func TestFingerprintVectors(t *testing.T) {
	var v struct {
		SystemPrompt []struct {
			Name, Text, Sha256 string
		} `json:"system_prompt_sha256"`
		Tools []struct {
			Name, Canonical, Sha256 string
			Tools                   []any
		} `json:"tools_sha256"`
		Invalid []struct {
			Name  string
			Tools []any
		} `json:"tools_invalid"`
		Fingerprints []struct {
			Name        string
			Input       map[string]any
			Fingerprint map[string]any
		} `json:"fingerprints"`
	}
	readJSON(t, "../../testdata/fingerprint_vectors.json", &v)
	if len(v.SystemPrompt) == 0 || len(v.Tools) == 0 || len(v.Invalid) == 0 || len(v.Fingerprints) == 0 {
		t.Fatal("vectors missing")
	}
	for _, c := range v.SystemPrompt {
		if got := SystemPromptSHA256(c.Text); got != c.Sha256 {
			t.Errorf("prompt %s: %s", c.Name, got)
		}
	}
	for _, c := range v.Tools {
		canon, err := CanonicalTools(c.Tools)
		if err != nil || canon != c.Canonical {
			t.Errorf("tools %s: %q %v\nwant %q", c.Name, canon, err, c.Canonical)
		}
		if got, _ := ToolsSHA256(c.Tools); got != c.Sha256 {
			t.Errorf("tools %s: hash %s", c.Name, got)
		}
	}
	for _, c := range v.Invalid {
		if got, err := ToolsSHA256(c.Tools); err == nil {
			t.Errorf("invalid %s accepted: %s", c.Name, got)
		}
	}
	for _, c := range v.Fingerprints {
		in := c.Input
		num := func(k string) int32 {
			x, _ := in[k].(json.Number)
			n, _ := x.Int64()
			return int32(n)
		}
		tools, _ := in["tools"].([]any)
		fp, err := MakeFingerprint(FingerprintConfig{
			Provider: in["provider"].(string), Model: in["model"].(string), SystemPrompt: in["system_prompt"].(string),
			ThinkingMode: in["thinking_mode"].(string), Tools: tools, MaxTokens: num("max_tokens"), MaxIterations: num("max_iterations"),
		})
		if err != nil {
			t.Fatal(err)
		}
		w := c.Fingerprint
		wn := func(k string) int32 {
			if x, ok := w[k].(json.Number); ok {
				n, _ := x.Int64()
				return int32(n)
			}
			return 0
		}
		ws := func(k string) string { s, _ := w[k].(string); return s }
		want := &pb.Fingerprint{Provider: ws("provider"), Model: ws("model"), SystemPromptSha256: ws("system_prompt_sha256"),
			ThinkingMode: ws("thinking_mode"), ToolsSha256: ws("tools_sha256"), MaxTokens: wn("max_tokens"), MaxIterations: wn("max_iterations")}
		if fp.String() != want.String() {
			t.Errorf("fingerprint %s: %v\nwant %v", c.Name, fp, want)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	cases := map[string]string{
		`{"b":1,"a":[1.0,1e-7,-0.0,"é<>&\u2028\n"]}`: `{"a":[1,1e-7,0,"é<>&` + "\u2028" + `\n"],"b":1}`,
		`{"x":1e21,"y":123456789012.5}`:              `{"x":1e+21,"y":123456789012.5}`,
	}
	for in, want := range cases {
		var v any
		if err := decodeJSON([]byte(in), &v); err != nil {
			t.Fatal(err)
		}
		got, err := CanonicalJSON(v)
		if err != nil || got != want {
			t.Errorf("%s: %s %v", in, got, err)
		}
	}
	for _, bad := range []any{map[string]any{"n": json.Number("9007199254740993")}, int64(1) << 60} {
		if _, err := CanonicalJSON(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestBuilders(t *testing.T) {
	tu := MustToolUse("c1", "weather", map[string]any{"z": 1, "a": "x"})
	if tu.GetToolUse().GetInputJson() != `{"a":"x","z":1}` {
		t.Errorf("input %s", tu.GetToolUse().GetInputJson())
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	meta := MetaRecord("r1", &pb.Fingerprint{Model: "m"}, []*pb.ContentBlock{Text("hi")}, MetaOptions{CreatedAt: at, Labels: map[string]string{"k": "v"}})
	if meta.GetSeq() != 1 || meta.GetMeta().GetFormatVersion() != FormatVersion || meta.GetMeta().GetCreatedAt().AsTime() != at || meta.GetMeta().GetRunId() != "r1" {
		t.Errorf("meta %v", meta)
	}
	note, _ := NoteRecord("n", map[string]any{"b": 2, "a": 1})
	if !note.GetOptional() || note.GetNote().GetDataJson() != `{"a":1,"b":2}` {
		t.Errorf("note %v", note)
	}
	if d := DeferralRecord("c", "why", "ops", true); d.GetOptional() || !d.GetDeferral().GetNeedsApproval() {
		t.Errorf("deferral %v", d)
	}
	if r := ToolResultText("c", "ok", true); r.GetToolResult().GetContent()[0].GetText().GetText() != "ok" || !r.GetToolResult().GetIsError() {
		t.Errorf("result %v", r)
	}
	if a := AssistantRecord(2, nil, pb.StopReason_STOP_REASON_END_TURN, nil); a.GetAssistant().GetUsage() == nil {
		t.Errorf("usage not set")
	}
	run := &Run{nextSeq: 4}
	placed, err := run.place([]*pb.JournalRecord{TerminalRecord(pb.TerminalReason_TERMINAL_REASON_COMPLETED, ""), UserRecord(Text("x"))})
	if err != nil || placed[0].GetSeq() != 4 || placed[1].GetSeq() != 5 {
		t.Errorf("place %v %v", placed, err)
	}
	if _, err := run.place([]*pb.JournalRecord{{Seq: 9}}); err == nil {
		t.Error("a record at the wrong seq was placed")
	}
}
