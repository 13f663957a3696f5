package topic

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	good := []string{"t", "page-views", "a.b_c-1", strings.Repeat("x", MaxLength)}
	for _, n := range good {
		if err := Validate(n); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", n, err)
		}
	}
	bad := []string{"", ".", "..", "../x", "a/b", "a b", "ü", "x\x00", strings.Repeat("x", 300), strings.Repeat("x", MaxLength+1)}
	for _, n := range bad {
		if err := Validate(n); !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%q) = %v, want ErrInvalid", n, err)
		}
	}
}
