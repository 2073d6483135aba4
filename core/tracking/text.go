package tracking

import (
	"fmt"
	"unicode/utf8"
)

// checkText refuses strings that are not valid UTF-8: the tables store them
// in utf8 columns, which Lance (and kv0's reader) require to be valid, so
// they are refused when written rather than when a flush would fail.
func checkText(what string, values ...string) error {
	for _, v := range values {
		if !utf8.ValidString(v) {
			return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalid, what, v)
		}
	}
	return nil
}

// checkSpec checks the strings of a RunSpec.
func checkSpec(s RunSpec) error {
	if err := checkText("run field", s.ID, s.Name, s.Experiment, s.Description, s.Kind, s.Target); err != nil {
		return err
	}
	return checkText("tag", s.Tags...)
}

// checkPatch checks the strings of a RunPatch.
func checkPatch(p RunPatch) error {
	for _, s := range []*string{p.Name, p.Experiment, p.Description, p.Status, p.Kind, p.Target} {
		if s != nil {
			if err := checkText("run field", *s); err != nil {
				return err
			}
		}
	}
	if p.Status != nil {
		switch *p.Status {
		case StatusRunning, StatusFinished, StatusFailed, StatusAborted:
		default:
			return fmt.Errorf("%w: run status %q: want %s, %s, %s or %s", ErrInvalid, *p.Status,
				StatusRunning, StatusFinished, StatusFailed, StatusAborted)
		}
	}
	if p.Tags != nil {
		return checkText("tag", *p.Tags...)
	}
	return nil
}
