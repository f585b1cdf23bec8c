package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run prints the table of docs/modules.md: one row per consumer, its figures and
// what they add to the baseline's.
func run(ctx context.Context, out io.Writer) error {
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "herdlock-modcost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "consumer\tmodules\tgo.sum lines\tbootstrap\tinit (least of 7)")
	var base figures
	for i, c := range consumers() {
		f, err := measure(ctx, repo, work, c, true)
		if err != nil {
			return err
		}
		if i == 0 {
			base = f
		}
		fmt.Fprintf(tw, "%s\t%d (%+d)\t%d (%+d)\t%.1f MB (%+.1f)\t%.2f ms (%+.2f)\n", c.name,
			f.Modules, f.Modules-base.Modules, f.SumLines, f.SumLines-base.SumLines,
			mb(f.BinaryBytes), mb(f.BinaryBytes)-mb(base.BinaryBytes),
			ms(f.Init), ms(f.Init)-ms(base.Init))
	}
	return tw.Flush()
}

func mb(n int64) float64 { return float64(n) / 1e6 }

func ms(d interface{ Seconds() float64 }) float64 { return d.Seconds() * 1e3 }

// repoRoot finds the repository root above the working directory: the
// folder holding go.work.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("modcost: no go.work above the working directory: run it inside the herdlock repository")
		}
		dir = parent
	}
}
