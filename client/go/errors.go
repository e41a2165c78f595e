package runjournal

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

// ErrorDomain is the ErrorInfo domain of every runjournal refusal.
const ErrorDomain = "runjournal.dev"

// StatusError is what every error of this package carries: the gRPC code,
// the ErrorInfo reason ("" when the status had none), the server's message
// (for people, never to branch on), the ErrorInfo metadata as sent (all
// values are strings) and the status's other details.
//
// A refusal with a known reason is returned as its own type (*SeqGapError,
// *RunClaimedError, ...; see reasons.go) with the metadata parsed into typed
// fields; use errors.As. A status without a reason is *StatusError itself
// (for example a transport UNAVAILABLE); a reason this client does not know
// (a newer server) is *UnknownReasonError.
type StatusError struct {
	Code     codes.Code
	Reason   string
	Message  string
	Metadata map[string]string
	Details  []*anypb.Any
}

func (e StatusError) Error() string {
	label := e.Reason
	if label == "" {
		label = e.Code.String()
	}
	return fmt.Sprintf("%s: %s", label, e.Message)
}

// GRPCStatus lets status.FromError and status.Code see the original code.
func (e StatusError) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// Status returns the common part of any error of this package.
func (e *StatusError) Status() *StatusError { return e }

// UnknownReasonError is a refusal whose reason this client does not know.
type UnknownReasonError struct{ StatusError }

// Retryable reports whether err is a transport failure that the same request
// may be resent for: UNAVAILABLE, DEADLINE_EXCEEDED or CANCELED without an
// ErrorInfo reason, so the server's journal logic never answered. A server
// shutting down ends calls so: those arriving while it drains UNAVAILABLE
// (they did nothing), those gRPC had queued, or that outlived the grace,
// CANCELED. A CANCELED is the caller's own when its context is done: the
// retry loops check the context before resending. A status with a reason
// (STORAGE_UNAVAILABLE, RUN_LOCKED, ...) is an answer, not retried.
func Retryable(err error) bool {
	var e Error
	if errors.As(err, &e) {
		se := e.Status()
		return se.Reason == "" && transportCode(se.Code)
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	return transportCode(st.Code()) && errorInfo(st) == nil
}

func transportCode(code codes.Code) bool {
	return code == codes.Unavailable || code == codes.DeadlineExceeded || code == codes.Canceled
}

func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// FromError converts an error of a generated stub into this package's error
// types. nil stays nil; context errors and non-status errors are returned
// unchanged.
func FromError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if _, ok := status.FromError(err); !ok {
			return err
		}
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	se := StatusError{Code: st.Code(), Message: st.Message(), Metadata: map[string]string{}}
	for _, a := range st.Proto().GetDetails() {
		var info errdetails.ErrorInfo
		if a.MessageIs(&info) && se.Reason == "" {
			if a.UnmarshalTo(&info) == nil {
				se.Reason = info.GetReason()
				for k, v := range info.GetMetadata() {
					se.Metadata[k] = v
				}
				continue
			}
		}
		se.Details = append(se.Details, a)
	}
	if se.Reason == "" {
		return &se
	}
	if build, ok := reasonTypes[se.Reason]; ok {
		return build(se)
	}
	return &UnknownReasonError{StatusError: se}
}

// fillMeta sets the `meta`-tagged fields of e (a pointer to a reason type)
// from its metadata: int64 and *int64 from decimal text, string as is,
// []string from comma-joined text. A value that does not parse is left zero
// (nil); the raw text stays in Metadata.
func fillMeta(e any) {
	v := reflect.ValueOf(e).Elem()
	md := v.FieldByName("StatusError").Interface().(StatusError).Metadata
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		key := t.Field(i).Tag.Get("meta")
		if key == "" {
			continue
		}
		text, present := md[key]
		if !present {
			continue
		}
		f := v.Field(i)
		switch f.Interface().(type) {
		case string:
			f.SetString(text)
		case int64:
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				f.SetInt(n)
			}
		case *int64:
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				f.Set(reflect.ValueOf(&n))
			}
		case []string:
			var parts []string
			for _, p := range strings.Split(text, ",") {
				if p != "" {
					parts = append(parts, p)
				}
			}
			f.Set(reflect.ValueOf(parts))
		}
	}
}

// Error is implemented by every error of this package (each reason type,
// *StatusError and *UnknownReasonError).
type Error interface {
	error
	Status() *StatusError
}

// ReasonOf returns the ErrorInfo reason of err ("" for none or for an error
// not from this package).
func ReasonOf(err error) string {
	var e Error
	if errors.As(err, &e) {
		return e.Status().Reason
	}
	return ""
}
