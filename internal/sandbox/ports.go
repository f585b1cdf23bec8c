package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// handedOut are the ports freePorts gave to emulators of this process
// that have not been closed: two sandboxes started at once must not pick
// the same port, which both find free until the first emulator binds it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

func reserve(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports[port] {
		return false
	}
	handedOut.ports[port] = true
	return true
}

func unreserve(ports []int) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for _, p := range ports {
		delete(handedOut.ports, p)
	}
}

// listenerOwner reports, on Linux, whether the TCP socket listening on
// 127.0.0.1:port belongs to process pid: another process (another test
// binary's emulator, a server) may have bound the port between its pick
// and the emulator's bind, and a dial then reaches that process while the
// emulator exits with "address already in use". known is false where
// this cannot be told (another system, no such listener yet, /proc not
// readable).
func listenerOwner(pid, port int) (owned, known bool) {
	if runtime.GOOS != "linux" {
		return false, false
	}
	inode, ok := listeningInode(port)
	if !ok {
		return false, false
	}
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, false
	}
	want := "socket:[" + inode + "]"
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && link == want {
			return true, true
		}
	}
	return false, true
}

// listeningInode returns the inode of the socket listening on
// 127.0.0.1:port, from /proc/net/tcp.
func listeningInode(port int) (string, bool) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", false
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) >= 10 && fields[1] == local && fields[3] == "0A" {
			return fields[9], true
		}
	}
	return "", false
}
