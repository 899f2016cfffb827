// Child mode (docs/embedding.md), with Go's standard library only: the app starts skydb itself
// and owns it.
//
//	parent SKYDB DATA_DIR [extra skydb arguments...]
//
// skydb runs with --exit-with-parent --parent-pid PID (it stops in order when this process dies,
// even by kill -9 in the instant after starting it) and --ready-fd 3 (ExtraFiles[0] is the child's descriptor 3): at READY it writes one JSON
// line there (database_url, store_socket, http, pid) and closes it. This parent reads it, checks
// the store answers, prints the line and serves until SIGTERM.
//
// Build: GOPATH=/usr/share/gocode GO111MODULE=off go build -o parent parent.go
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

type ready struct {
	DatabaseURL string  `json:"database_url"`
	StoreSocket string  `json:"store_socket"`
	HTTP        *string `json:"http"`
	Pid         int     `json:"pid"`
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: parent SKYDB DATA_DIR [skydb arguments...]")
		os.Exit(2)
	}
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	args := append(os.Args[3:], "serve", "--embed", "--data-dir", os.Args[2], "--exit-with-parent",
		"--parent-pid", strconv.Itoa(os.Getpid()), "--ready-fd", "3")
	daemon := exec.Command(os.Args[1], args...)
	daemon.Stdout, daemon.Stderr = os.Stderr, os.Stderr
	daemon.ExtraFiles = []*os.File{w}
	if err := daemon.Start(); err != nil {
		panic(err)
	}
	w.Close() // skydb holds the only write end: EOF if it exits before READY
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "skydb exited before it was ready:", daemon.Wait())
		os.Exit(1)
	}
	var info ready
	if err := json.Unmarshal(line, &info); err != nil {
		panic(err)
	}
	conn, err := net.Dial("unix", info.StoreSocket)
	if err != nil {
		panic(err)
	}
	conn.Write([]byte("PING\r\n"))
	pong, _ := bufio.NewReader(conn).ReadString('\n')
	fmt.Printf("store: %q\nready: %s", pong, line)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM)
	go func() { daemon.Wait(); os.Exit(0) }()
	<-signals
}
