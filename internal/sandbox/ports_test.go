package sandbox

import (
	"net"
	"os"
	"runtime"
	"testing"
)

// listenerOwner tells this process's listener from another's: the check
// Start makes after the emulator's address accepts a connection.
func TestListenerOwner(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("listenerOwner reads /proc")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if owned, known := listenerOwner(os.Getpid(), port); !known || !owned {
		t.Errorf("listenerOwner(this process, %d) = %v, %v; want owned, known", port, owned, known)
	}
	if owned, known := listenerOwner(os.Getppid(), port); !known || owned {
		t.Errorf("listenerOwner(the parent process, %d) = %v, %v; want not owned, known", port, owned, known)
	}
}

// Two sandboxes of one process never get the same port while both run.
func TestFreePortsAreNotHandedOutTwice(t *testing.T) {
	seen := map[int]bool{}
	var all []int
	defer func() { unreserve(all) }()
	for range 200 {
		ports, err := freePorts(2)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
		all = append(all, ports...)
	}
}
