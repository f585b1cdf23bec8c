package bench

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"
)

// GoBench is one line of `go test -bench` output.
type GoBench struct {
	Pkg         string  `json:"pkg"`
	Name        string  `json:"name"`
	Iterations  int64   `json:"iterations"`
	NsPerOp     float64 `json:"nsPerOp"`
	BytesPerOp  float64 `json:"bytesPerOp"`
	AllocsPerOp float64 `json:"allocsPerOp"`
}

// CPU is figure 6: the in-process benchmarks of lockmw and emf.
type CPU struct {
	Command    string    `json:"command"`
	Benchmarks []GoBench `json:"benchmarks"`
	Note       string    `json:"note,omitempty"`
}

// CPUPackages are the packages whose benchmarks figure 6 runs.
var CPUPackages = []string{"./middleware/lockmw", "./emf"}

// RunCPU runs `go test -bench` on CPUPackages in the module at root.
func RunCPU(ctx context.Context, root, benchtime string) CPU {
	args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", benchtime, "-count", "1"}, CPUPackages...)
	c := CPU{Command: "go " + strings.Join(args, " ")}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	c.Benchmarks = ParseGoBench(out)
	if err != nil {
		c.Note = err.Error() + ": " + lastLines(out, 8)
	}
	return c
}

// ParseGoBench reads the benchmark lines of `go test -bench -benchmem`
// output.
func ParseGoBench(out []byte) []GoBench {
	var res []GoBench
	pkg := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		b := GoBench{Pkg: pkg, Name: f[0], Iterations: n}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				b.NsPerOp = v
			case "B/op":
				b.BytesPerOp = v
			case "allocs/op":
				b.AllocsPerOp = v
			}
		}
		res = append(res, b)
	}
	return res
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
