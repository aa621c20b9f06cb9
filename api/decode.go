package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// DecodeRequest decodes a request payload into v (a pointer to a request
// type), strictly: an unknown field, a value of the wrong type, malformed
// JSON, or anything after the first JSON value is an invalid_argument error
// that names the field or position. An empty payload (only white space)
// leaves v unchanged, so an operation without arguments accepts no body.
func DecodeRequest(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return requestError(err, dec)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Errorf(CodeInvalidArgument, "invalid request: unexpected data after the JSON value at byte %d", dec.InputOffset())
	}
	return nil
}

func requestError(err error, dec *json.Decoder) *Error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return Errorf(CodeInvalidArgument, "invalid request: malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return Errorf(CodeInvalidArgument, "invalid request: the request must be %s, got %s", jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return Errorf(CodeInvalidArgument, "invalid request: field %q must be %s, got %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return Errorf(CodeInvalidArgument, "invalid request: JSON ends early at byte %d", dec.InputOffset())
	}
	// encoding/json reports unknown fields only as text: `json: unknown field "x"`.
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return Errorf(CodeInvalidArgument, "invalid request: unknown field %s", f)
	}
	// Errors from a type's own UnmarshalJSON (a bad time, a bad state) and the rest.
	return Errorf(CodeInvalidArgument, "invalid request: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go kind the way a JSON user thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "map", "struct":
		return "an object"
	}
	return "a " + kind
}
