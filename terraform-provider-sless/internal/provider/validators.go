package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/slessio/sless/domain"
)

// check is a string validator running one of the server's own rules
// (package domain), so plan refuses what the API would refuse at apply.
type check struct {
	description string
	valid       func(string) error
}

func (c check) Description(context.Context) string         { return c.description }
func (c check) MarkdownDescription(context.Context) string { return c.description }

func (c check) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := c.valid(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+req.Path.String(), messageOf(err))
	}
}

// messageOf is the people's part of a domain error.
func messageOf(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Message
	}
	return err.Error()
}

func validName(field string) validator.String {
	return check{"a sless name: lowercase letters, digits and '-', starting with a letter, at most 63 characters",
		func(s string) error { return domain.ValidateName(field, s) }}
}

func validRuntime() validator.String {
	return check{"one of the runtimes sless runs", func(s string) error { _, err := domain.ParseRuntime(s); return err }}
}

func validCron() validator.String {
	return check{"a five-field cron schedule", func(s string) error {
		if strings.TrimSpace(s) != s { // the server stores it trimmed: the state would never match
			return errors.New("must not begin or end with spaces")
		}
		_, err := domain.ParseCron(s)
		return err
	}}
}

func validJSON() validator.String {
	return check{"a JSON document", func(s string) error {
		if !json.Valid([]byte(s)) {
			return errors.New("must be valid JSON, e.g. jsonencode({ key = \"value\" })")
		}
		if len(s) > domain.MaxJobEventBytes {
			return errors.New("must be at most 256 KiB")
		}
		return nil
	}}
}

// int64Check is an int64 validator of a bound the server enforces.
type int64Check struct {
	description string
	min, max    int64
}

func (c int64Check) Description(context.Context) string         { return c.description }
func (c int64Check) MarkdownDescription(context.Context) string { return c.description }

func (c int64Check) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if v := req.ConfigValue.ValueInt64(); v < c.min || v > c.max {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+req.Path.String(), c.description)
	}
}

func between(what string, min, max int64) validator.Int64 {
	return int64Check{description: fmt.Sprintf("%s must be between %d and %d", what, min, max), min: min, max: max}
}
