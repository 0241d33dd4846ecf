package main

import "context"

// Handle does not compile: notDefined is declared nowhere.
func Handle(ctx context.Context, event map[string]any) (any, error) {
	return notDefined, nil
}
