// Package conformance replays the language-neutral scenarios of
// conformance/scenarios (format: conformance/FORMAT.md) with the raw
// generated stubs and protojson, against the servers named in the JSON file
// at $RUNJOURNAL_CONFORMANCE (written by `python conformance/servers.py`).
package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	_ "runjournal.dev/client/go/gen/runjournal/v1" // registers the runjournal types
)

// Server is one server of the conformance file.
type Server struct {
	Name    string `json:"name"`
	Backend string `json:"backend"`
	Auth    bool   `json:"auth"`
	Address string `json:"address"`
}

// Config is the conformance file.
type Config struct {
	ScenariosDir string            `json:"scenarios_dir"`
	Servers      []Server          `json:"servers"`
	Tokens       map[string]string `json:"tokens"`
	TenantPrefix string            `json:"tenant_prefix"`
}

// Scenario is one scenario file.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Requires    struct {
		Auth     *bool    `json:"auth"`
		Backends []string `json:"backends"`
	} `json:"requires"`
	Steps []Step `json:"steps"`
}

// Step is one call of a scenario.
type Step struct {
	RPC      string            `json:"rpc"`
	Request  any               `json:"request"`
	Metadata map[string]any    `json:"metadata"`
	Expect   map[string]any    `json:"expect"`
	Save     map[string]string `json:"save"`
	During   *During           `json:"during"`
}

// During is what a stream step's caller does beside the open stream
// (FORMAT.md, "Concurrent steps"): once After messages arrived, Steps replay
// in order, then the stream is read on to its take.
type During struct {
	After int    `json:"after"`
	Steps []Step `json:"steps"`
}

// DecodeJSON decodes keeping numbers exact.
func DecodeJSON(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(into)
}

// LoadConfig reads the conformance file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	return &c, json.Unmarshal(data, &c)
}

// LoadScenario reads one scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := CheckStrings(data); err != nil {
		return nil, fmt.Errorf("%s: %w (FORMAT.md, \"Strings\")", path, err)
	}
	if err := CheckStrict(data); err != nil {
		return nil, fmt.Errorf("%s: %w (FORMAT.md, \"Strict JSON\")", path, err)
	}
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields() // the schema's additionalProperties: false, at every level with a struct
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w (format.schema.json)", path, err)
	}
	return &s, nil
}

// Applies reports whether the scenario runs on the server.
func (s *Scenario) Applies(srv Server) bool {
	if s.Requires.Auth != nil && *s.Requires.Auth != srv.Auth {
		return false
	}
	if len(s.Requires.Backends) > 0 {
		for _, b := range s.Requires.Backends {
			if b == srv.Backend {
				return true
			}
		}
		return false
	}
	return true
}

type method struct {
	full      string
	in, out   protoreflect.MessageType
	streaming bool
}

func findMethod(name string) (*method, error) {
	services := []string{"runjournal.v1.JournalService", "runjournal.v1.TaskService"}
	short := name
	if i := strings.LastIndex(name, "/"); i >= 0 {
		services = []string{name[:i]}
		short = name[i+1:]
	}
	for _, svc := range services {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
		if err != nil {
			continue
		}
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if !ok {
			continue
		}
		md := sd.Methods().ByName(protoreflect.Name(short))
		if md == nil {
			continue
		}
		in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
		if err != nil {
			return nil, err
		}
		out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
		if err != nil {
			return nil, err
		}
		return &method{full: "/" + svc + "/" + short, in: in, out: out, streaming: md.IsStreamingServer()}, nil
	}
	return nil, fmt.Errorf("unknown rpc %q", name)
}

// Replayer replays scenarios against one server.
type Replayer struct {
	Server Server
	Tokens map[string]string
	conn   *grpc.ClientConn
}

// NewReplayer connects to srv.
func NewReplayer(srv Server, tokens map[string]string) (*Replayer, error) {
	conn, err := grpc.NewClient(srv.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &Replayer{Server: srv, Tokens: tokens, conn: conn}, nil
}

// Close closes the connection.
func (r *Replayer) Close() error { return r.conn.Close() }

func freshRun() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "cf-" + hex.EncodeToString(b)
}

// Replay runs every step of s; the error names the scenario, the step index,
// the path of the mismatch, the expected and the actual value.
func (r *Replayer) Replay(s *Scenario) error {
	vars := map[string]any{"run": freshRun()}
	for i, step := range s.Steps {
		if err := r.step(vars, step); err != nil {
			// FORMAT.md names a failing step of during "step N (Watch), during step I (Append)".
			sep := ": "
			var inner *duringStepError
			if errors.As(err, &inner) {
				sep = ", "
			}
			return fmt.Errorf("scenario %s on %s, step %d (%s)%s%w", s.Name, r.Server.Name, i, step.RPC, sep, err)
		}
	}
	return nil
}

var placeholder = regexp.MustCompile(`\$\{([^}]*)\}`)

func lookup(vars map[string]any, name string) (any, error) {
	if name == "run" {
		return vars["run"], nil
	}
	if strings.HasPrefix(name, "save.") {
		if v, ok := vars[name]; ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("unknown placeholder ${%s}", name)
}

func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return string(x)
	default:
		// FORMAT.md, "Substitution": compact JSON, text as itself (no HTML escaping of <, >, &).
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(x)
		return strings.TrimSuffix(buf.String(), "\n")
	}
}

// Substitute replaces the placeholders of every string in v.
func Substitute(v any, vars map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		if x == "${any}" {
			return x, nil
		}
		if m := placeholder.FindStringSubmatch(x); m != nil && m[0] == x {
			return lookup(vars, m[1])
		}
		var err error
		out := placeholder.ReplaceAllStringFunc(x, func(p string) string {
			name := p[2 : len(p)-1]
			if name == "any" {
				return p
			}
			val, e := lookup(vars, name)
			if e != nil {
				err = e
				return p
			}
			return text(val)
		})
		return out, err
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			s, err := Substitute(item, vars)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			s, err := Substitute(item, vars)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	return v, nil
}

func (r *Replayer) callContext(step Step, vars map[string]any) (context.Context, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if !r.Server.Auth {
		return ctx, cancel, nil
	}
	which := "worker"
	if step.Metadata != nil {
		md, err := Substitute(any(step.Metadata), vars)
		if err != nil {
			cancel()
			return nil, nil, err
		}
		if t, ok := md.(map[string]any)["token"].(string); ok {
			which = t
		}
	}
	if which == "none" {
		return ctx, cancel, nil
	}
	token, ok := r.Tokens[which]
	if !ok {
		cancel()
		return nil, nil, fmt.Errorf("unknown token %q", which)
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token), cancel, nil
}

func toJSON(m proto.Message) (any, error) {
	data, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var v any
	return v, DecodeJSON(data, &v)
}

func (r *Replayer) step(vars map[string]any, step Step) error {
	m, err := findMethod(step.RPC)
	if err != nil {
		return err
	}
	reqJSON, err := Substitute(step.Request, vars)
	if err != nil {
		return err
	}
	expect, err := Substitute(any(step.Expect), vars)
	if err != nil {
		return err
	}
	exp := expect.(map[string]any)
	data, err := json.Marshal(reqJSON)
	if err != nil {
		return err
	}
	req := m.in.New().Interface()
	if err := protojson.Unmarshal(data, req); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	ctx, cancel, err := r.callContext(step, vars)
	if err != nil {
		return err
	}
	defer cancel()

	var actual any
	var callErr error
	if m.streaming {
		var items []any
		var during *duringRun
		if during, err = r.during(vars, step, takeOf(exp)); err != nil {
			return err
		}
		items, callErr = r.stream(ctx, m, req, takeOf(exp), during)
		var cut *takeCut
		if errors.As(callErr, &cut) {
			return cut
		}
		var inner *duringError
		if errors.As(callErr, &inner) {
			return inner.err
		}
		actual = items
	} else {
		resp := m.out.New().Interface()
		callErr = r.conn.Invoke(ctx, m.full, req, resp)
		if callErr == nil {
			if actual, err = toJSON(resp); err != nil {
				return err
			}
		}
	}

	if want, ok := exp["error"]; ok {
		if callErr == nil {
			return fmt.Errorf("at error: expected %s, actual success %s", show(want), show(actual))
		}
		return matchError(want, callErr)
	}
	if callErr != nil {
		return fmt.Errorf("at response: expected success, actual error %s", describeError(callErr))
	}
	if want, ok := exp["response"]; ok {
		if err := Match(want, actual, true, ""); err != nil {
			return err
		}
	} else if want, ok := exp["stream"].(map[string]any); ok {
		items, _ := want["items"].([]any)
		got, _ := actual.([]any)
		exact, _ := want["exact"].(bool)
		if take := takeOf(exp); take > 0 && take < len(items) {
			return fmt.Errorf("at stream: expect.stream.take %d is fewer than its %d items", take, len(items))
		}
		if len(got) < len(items) || (exact && len(got) != len(items)) {
			return fmt.Errorf("at stream: expected %d items (exact %v), actual %d: %s", len(items), exact, len(got), show(got))
		}
		for i, item := range items {
			if err := Match(item, got[i], true, strconv.Itoa(i)); err != nil {
				return err
			}
		}
	} else {
		return fmt.Errorf("expect has none of response, stream, error")
	}
	for name, path := range step.Save {
		v, ok := at(actual, path)
		if !ok {
			return fmt.Errorf("save %s: nothing at %s in %s", name, path, show(actual))
		}
		vars["save."+name] = v
	}
	return nil
}

// takeOf is the expectation's stream.take (0 when there is none).
func takeOf(exp map[string]any) int {
	want, _ := exp["stream"].(map[string]any)
	n, ok := want["take"].(json.Number)
	if !ok {
		return 0
	}
	take, err := n.Int64()
	if err != nil {
		return 0
	}
	return int(take)
}

// takeCut is a stream read with stream.take that ended, or failed, before
// sending that many messages: a mismatch, not the call's error.
type takeCut struct {
	take  int
	why   string
	taken []any
}

func (c *takeCut) Error() string {
	return fmt.Sprintf("expected %d stream messages before cancelling, the stream %s after %d: %s",
		c.take, c.why, len(c.taken), show(c.taken))
}

// stream reads every message of a server-streaming call, or with take > 0
// the first take messages, then cancels the call (Watch and WatchRuns never
// end by themselves). A failure before the first message is the call's error.
func (r *Replayer) stream(ctx context.Context, m *method, req proto.Message, take int, during *duringRun) ([]any, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := r.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, m.full)
	if err != nil {
		return nil, err
	}
	if err := st.SendMsg(req); err != nil {
		return nil, err
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	var items []any
	for take == 0 || len(items) < take {
		resp := m.out.New().Interface()
		if err := st.RecvMsg(resp); err != nil {
			ended := errors.Is(err, io.EOF)
			switch {
			case take > 0 && ended:
				return items, &takeCut{take: take, why: "ended", taken: items}
			case take > 0 && len(items) > 0:
				why := "failed " + code.Code(status.Code(err)).String()
				return items, &takeCut{take: take, why: why, taken: items}
			case ended:
				return items, nil
			}
			return items, err
		}
		v, err := toJSON(resp)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		if during != nil && len(items) == during.after {
			if err := during.run(); err != nil {
				return items, &duringError{err}
			}
		}
	}
	return items, nil
}

// duringError is a step of during that failed: the scenario's mismatch,
// not the stream's.
type duringError struct{ err error }

func (e *duringError) Error() string { return e.err.Error() }
func (e *duringError) Unwrap() error { return e.err }

// duringStepError is the failure of step index of a during.
type duringStepError struct {
	index int
	rpc   string
	err   error
}

func (e *duringStepError) Error() string {
	return fmt.Sprintf("during step %d (%s): %v", e.index, e.rpc, e.err)
}
func (e *duringStepError) Unwrap() error { return e.err }

// duringRun replays the steps of a during once after messages arrived.
type duringRun struct {
	after int
	run   func() error
}

// during checks a step's during and returns when and what replays its
// steps (nil when it has none).
func (r *Replayer) during(vars map[string]any, step Step, take int) (*duringRun, error) {
	d := step.During
	if d == nil {
		return nil, nil
	}
	if take == 0 || d.After < 1 || d.After >= take {
		return nil, fmt.Errorf("during needs expect.stream.take, and 1 <= during.after < take")
	}
	return &duringRun{after: d.After, run: func() error {
		for i, inner := range d.Steps {
			if inner.During != nil {
				return &duringStepError{i, inner.RPC, errors.New("a step of during has no during of its own")}
			}
			if err := r.step(vars, inner); err != nil {
				return &duringStepError{i, inner.RPC, err}
			}
		}
		return nil
	}}, nil
}

func at(v any, path string) (any, bool) {
	if path == "" {
		return v, v != nil
	}
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func describeError(err error) string {
	st := status.Convert(err)
	reason := ""
	var md map[string]string
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			reason, md = info.GetReason(), info.GetMetadata()
		}
	}
	return fmt.Sprintf("%s %s %v: %s", code.Code(st.Code()).String(), reason, md, st.Message())
}

func matchError(want any, err error) error {
	w, _ := want.(map[string]any)
	st := status.Convert(err)
	gotCode := code.Code(st.Code()).String()
	if c, ok := w["code"]; ok && c != gotCode {
		return fmt.Errorf("at error.code: expected %s, actual %s (%s)", show(c), show(gotCode), describeError(err))
	}
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			info = i
		}
	}
	if r, ok := w["reason"]; ok {
		if info == nil {
			return fmt.Errorf("at error.reason: expected %s, actual no ErrorInfo (%s)", show(r), describeError(err))
		}
		if info.GetDomain() != "runjournal.dev" {
			return fmt.Errorf("at error.domain: expected \"runjournal.dev\", actual %q", info.GetDomain())
		}
		if r != info.GetReason() {
			return fmt.Errorf("at error.reason: expected %s, actual %q (%s)", show(r), info.GetReason(), describeError(err))
		}
	}
	if m, ok := w["metadata"]; ok {
		got := map[string]any{}
		if info != nil {
			for k, v := range info.GetMetadata() {
				got[k] = v
			}
		}
		if err := Match(m, got, true, "error.metadata"); err != nil {
			return err
		}
	}
	return nil
}

func show(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isDefault(e any) bool {
	switch x := e.(type) {
	case bool:
		return !x
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case string:
		return x == "" || x == "0"
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// Match applies the subset rule of FORMAT.md: expected e against actual a
// (present tells whether a was there at all).
func Match(e, a any, present bool, path string) error {
	where := path
	if where == "" {
		where = "(root)"
	}
	fail := func() error {
		actual := "absent"
		if present {
			actual = show(a)
		}
		return fmt.Errorf("at %s: expected %s, actual %s", where, show(e), actual)
	}
	if e == nil {
		if present && a != nil {
			return fail()
		}
		return nil
	}
	if s, ok := e.(string); ok && s == "${any}" {
		if !present {
			return fail()
		}
		return nil
	}
	if !present || a == nil {
		if isDefault(e) {
			return nil
		}
		return fail()
	}
	switch x := e.(type) {
	case map[string]any:
		obj, ok := a.(map[string]any)
		if !ok {
			return fail()
		}
		for k, ev := range x {
			av, has := obj[k]
			if err := Match(ev, av, has, join(path, k)); err != nil {
				return err
			}
		}
		return nil
	case []any:
		arr, ok := a.([]any)
		if !ok || len(arr) != len(x) {
			return fail()
		}
		for i := range x {
			if err := Match(x[i], arr[i], true, join(path, strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	case json.Number:
		switch y := a.(type) {
		case json.Number:
			if numEqual(x, string(y)) {
				return nil
			}
		case string:
			if y == string(x) || y == canonicalNumber(x) {
				return nil
			}
		}
		return fail()
	default:
		if show(e) != show(a) {
			return fail()
		}
		return nil
	}
}

func numEqual(e json.Number, a string) bool {
	if e.String() == a {
		return true
	}
	// Integers compare exactly: as float64, 2^53+1 would equal 2^53.
	ei, ok1 := new(big.Int).SetString(e.String(), 10)
	ai, ok2 := new(big.Int).SetString(a, 10)
	if ok1 && ok2 {
		return ei.Cmp(ai) == 0
	}
	ef, err1 := strconv.ParseFloat(e.String(), 64)
	af, err2 := strconv.ParseFloat(a, 64)
	return err1 == nil && err2 == nil && ef == af
}

func canonicalNumber(n json.Number) string {
	if i, err := n.Int64(); err == nil {
		return strconv.FormatInt(i, 10)
	}
	return n.String()
}
