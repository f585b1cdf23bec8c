package readmetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// buildBlocks writes each block into its own directory under dir (a
// fragment with the complete file before it) and builds them all with one
// go build, from inside the module. The directories are named after the
// README lines, so the compiler's errors say which block failed.
func buildBlocks(dir string, blocks []block) error {
	var program string
	var pkgs []string
	for _, b := range blocks {
		sub := filepath.Join(dir, fmt.Sprintf("line%d", b.line))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		files := map[string]string{}
		if b.fragment == "" {
			program = b.code
			files["main.go"] = b.code
		} else {
			if program == "" {
				return fmt.Errorf("README line %d: a fragment with no complete Go block above it", b.line)
			}
			frag, err := fragmentFile(program, b)
			if err != nil {
				return fmt.Errorf("README line %d: %w", b.line, err)
			}
			files["main.go"], files["fragment.go"] = program, frag
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(sub, name), []byte(text), 0o644); err != nil {
				return err
			}
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(sub))
	}
	if len(pkgs) == 0 {
		return nil
	}
	out := filepath.Join(dir, "bin")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", append([]string{"build", "-o", out + string(filepath.Separator)}, pkgs...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build of the README's Go blocks: %w\n%s", err, msg)
	}
	return nil
}
