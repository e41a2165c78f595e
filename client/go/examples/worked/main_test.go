package main

import (
	"testing"

	"runjournal.dev/client/go/internal/testserver"
)

func TestWorkedExample(t *testing.T) {
	addr := testserver.Start(t)
	if _, err := Run(addr); err != nil {
		t.Fatal(err)
	}
}
