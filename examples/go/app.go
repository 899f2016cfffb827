// A Sky.Live-style app for skydb's embedded mode (docs/embedding.md), with Go's standard library
// only: it speaks just enough of PostgreSQL's protocol (startup, peer authentication, simple
// queries) and of RESP to show the connection contract. A real app would use database/sql with
// a driver and a Redis client; the environment is the same.
//
//	PGHOST, PGPORT, PGDATABASE, PGUSER  the app's own database (the socket DIR/run/.s.PGSQL.PORT)
//	REDIS_URL                           unix://DIR/run/skydb.sock, the session store
//
// It records a visit, runs one session cycle (SET EX, GET, EXPIRE, DEL), then serves until
// SIGTERM. APP_STATE_FILE and APP_EXIT_CODE as in examples/python/app.py.
//
// Build: GOPATH=/usr/share/gocode GO111MODULE=off go build -o app app.go
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

func record(line string) {
	fmt.Println(line)
	if path := os.Getenv("APP_STATE_FILE"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

// ---- PostgreSQL: startup with peer authentication, then simple queries ----

type pg struct {
	conn net.Conn
	r    *bufio.Reader
}

func pgConnect() *pg {
	path := fmt.Sprintf("%s/.s.PGSQL.%s", os.Getenv("PGHOST"), os.Getenv("PGPORT"))
	conn, err := net.Dial("unix", path)
	if err != nil {
		fail("connect "+path, err)
	}
	var body []byte
	body = binary.BigEndian.AppendUint32(body, 196608) // protocol 3.0
	for _, kv := range [][2]string{{"user", os.Getenv("PGUSER")}, {"database", os.Getenv("PGDATABASE")}} {
		body = append(append(append(append(body, kv[0]...), 0), kv[1]...), 0)
	}
	body = append(body, 0)
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)+4))
	conn.Write(append(msg, body...))
	p := &pg{conn, bufio.NewReader(conn)}
	p.until('Z', nil) // AuthenticationOk (peer), parameters, ReadyForQuery
	return p
}

// Reads messages until `last`; DataRow values go to rows; ErrorResponse ends the app.
func (p *pg) until(last byte, rows *[][]string) {
	for {
		kind, err := p.r.ReadByte()
		if err != nil {
			fail("postgres", err)
		}
		var n uint32
		binary.Read(p.r, binary.BigEndian, &n)
		data := make([]byte, n-4)
		if _, err := io.ReadFull(p.r, data); err != nil {
			fail("postgres", err)
		}
		switch kind {
		case 'E':
			fail("postgres", fmt.Errorf("%s", strings.ReplaceAll(string(data), "\x00", " ")))
		case 'R':
			if binary.BigEndian.Uint32(data) != 0 {
				fail("postgres", fmt.Errorf("the server wants a password; skydb's app role uses peer authentication"))
			}
		case 'D':
			cols := int(binary.BigEndian.Uint16(data))
			row, at := []string{}, 2
			for i := 0; i < cols; i++ {
				size := int(int32(binary.BigEndian.Uint32(data[at:])))
				at += 4
				if size < 0 {
					row = append(row, "")
					continue
				}
				row = append(row, string(data[at:at+size]))
				at += size
			}
			if rows != nil {
				*rows = append(*rows, row)
			}
		}
		if kind == last {
			return
		}
	}
}

func (p *pg) query(sql string) [][]string {
	msg := append([]byte{'Q'}, binary.BigEndian.AppendUint32(nil, uint32(len(sql)+5))...)
	p.conn.Write(append(append(msg, sql...), 0))
	var rows [][]string
	p.until('Z', &rows)
	return rows
}

// ---- RESP: one command, one reply ----

type resp struct {
	conn net.Conn
	r    *bufio.Reader
}

func (c *resp) do(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.conn.Write([]byte(b.String()))
	line, err := c.r.ReadString('\n')
	if err != nil {
		fail("store", err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '-':
		fail("store", fmt.Errorf("%s", line[1:]))
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return ""
		}
		buf := make([]byte, n+2)
		io.ReadFull(c.r, buf)
		return string(buf[:n])
	}
	return line[1:]
}

func main() {
	db := pgConnect()
	db.query("CREATE TABLE IF NOT EXISTS visits (id serial PRIMARY KEY, at timestamptz DEFAULT now())")
	db.query("INSERT INTO visits DEFAULT VALUES")
	visits := db.query("SELECT count(*) FROM visits")[0][0]

	socket := strings.TrimPrefix(os.Getenv("REDIS_URL"), "unix://")
	conn, err := net.Dial("unix", socket)
	if err != nil {
		fail("connect "+socket, err)
	}
	store := &resp{conn, bufio.NewReader(conn)}
	previous := store.do("GET", "sky:live:session:example")
	if previous == "" {
		previous = "none"
	}
	store.do("SET", "sky:live:session:example", "state-"+visits, "EX", "600")
	if store.do("GET", "sky:live:session:example") != "state-"+visits {
		fail("store", fmt.Errorf("GET did not return what SET wrote"))
	}
	store.do("EXPIRE", "sky:live:session:example", "1200")
	store.do("SET", "sky:live:session:scratch", "x", "EX", "60")
	store.do("DEL", "sky:live:session:scratch")
	me, _ := user.Current()
	record(fmt.Sprintf("visits=%s previous_session=%s user=%s", visits, previous, me.Username))

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGHUP)
	record("serving")
	for sig := range signals {
		if sig == syscall.SIGHUP {
			record("got SIGHUP")
			continue
		}
		break
	}
	record("got SIGTERM")
	code, _ := strconv.Atoi(os.Getenv("APP_EXIT_CODE"))
	os.Exit(code)
}
