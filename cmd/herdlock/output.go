package main

import (
	"flag"
	"fmt"
)

// Output formats of --output.
const (
	outputText = "text"
	outputJSON = "json"
)

// output is the --output flag: text (the default) or json.
type output struct {
	format string
}

func (o *output) register(fs *flag.FlagSet) {
	o.format = outputText
	fs.Func("output", "the output format, `text|json` (default text)", func(s string) error {
		if s != outputText && s != outputJSON {
			return fmt.Errorf("want text or json, got %q", s)
		}
		o.format = s
		return nil
	})
}

// json reports whether the output is JSON.
func (o *output) json() bool { return o.format == outputJSON }
